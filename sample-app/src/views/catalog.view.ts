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

/** GET / : one card per product, each with a Buy form posting to the checkout. */
export function catalogPage(ctx: PageContext, products: readonly CatalogItem[]): string {
  const cards = products.map(
    (p) => html`<article class="card" id="product-${p.id}">
<div class="picture" style="background:linear-gradient(135deg,${p.colors[0]},${p.colors[1]})">${initials(p.name)}</div>
<div class="card-body">
<h2>${p.name}</h2>
<p>${p.description}</p>
<div class="price">${fromMillimes(p.amount)}<small>TND</small></div>
<form method="post" action="/orders"><input type="hidden" name="productId" value="${p.id}"><button type="submit">Buy now</button></form>
</div>
</article>`,
  );
  return layout(
    ctx,
    'Catalog',
    'catalog',
    html`<h1>Fresh coffee, delivered</h1>
<p class="lead">Pick something you like; you will pay on the payment service's secure page.</p>
<section class="grid">
${cards}
</section>`,
  );
}
