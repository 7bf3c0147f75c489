import { html } from './html.util.js';
import { layout, type PageContext } from './layout.view.js';

/** An error page: a heading, one sentence, and a way back. */
export function errorPage(ctx: PageContext, title: string, text: string): string {
  return layout(
    ctx,
    title,
    'none',
    html`<section class="panel narrow" id="error">
      <h1>${title}</h1>
      <p class="muted">${text}</p>
      <a class="button secondary" href="/">Back to the catalog</a>
    </section>`,
  );
}
