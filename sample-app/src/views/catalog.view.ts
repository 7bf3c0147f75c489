import { fromMillimes } from 'nestjs-payments';
import type { CatalogItem } from '../catalog/catalog.service.js';
import { html } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';

/** Initials of a product name, drawn on its picture. */
function initials(name: string): string {
  return name
    .split(/\s+/)
    .map((word) => word[0] ?? '')
    .join('')
    .slice(0, 2)
    .toUpperCase();
}

/**
 * GET / : one card per product, each with a Buy form posting to the checkout: the CSRF token,
 * and a "save my card" box (the service then keeps the card for this customer: a binding).
 */
export function catalogPage(ctx: PageContext, products: readonly CatalogItem[], csrfToken: string): string {
  const cards = products.map(
    (p) =>
      html`<article class="card" id="product-${p.id}">
        <div class="picture" style="background:linear-gradient(135deg,${p.colors[0]},${p.colors[1]})">${initials(p.name)}</div>
        <div class="card-body">
          <h2>${p.name}${p.capture === 'later' && html`<span class="tag">Charged when shipped</span>`}</h2>
          <p>${p.description}</p>
          <div class="price">${fromMillimes(p.amount)}<small>TND</small></div>
          <form method="post" action="/orders">
            <input type="hidden" name="_csrf" value="${csrfToken}" /><input type="hidden" name="productId" value="${p.id}" />
            <label class="check"><input type="checkbox" name="saveCard" value="on" id="save-${p.id}" /> Save my card for next time</label>
            <button type="submit">${p.capture === 'later' ? 'Reserve now' : 'Buy now'}</button>
          </form>
        </div>
      </article>`,
  );
  return layout(
    ctx,
    'Catalog',
    'catalog',
    html`<h1>Fresh coffee, delivered</h1>
      <p class="lead">Pick something you like; you will pay on the payment service's secure page.</p>
      <section class="grid">${cards}</section>`,
  );
}
