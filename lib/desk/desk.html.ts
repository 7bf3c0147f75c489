/**
 * HTML built by one rule: every value interpolated into a page is escaped, unless it is markup
 * this folder built ({@link SafeHtml}). Values the service or a customer controls (order ids,
 * error messages, statuses) can only ever reach a page as text.
 */

/** Markup built by {@link html}: interpolated as it is. */
export class SafeHtml {
  /** @param value markup whose every interpolated value was escaped */
  constructor(readonly value: string) {}

  /** The markup. */
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escapes text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c] ?? c);
}

/** What may be interpolated: text (escaped), numbers, markup, lists of these; nothing else renders. */
export type HtmlValue = string | number | SafeHtml | undefined | null | false | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === undefined || value === null || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

/** The tagged template of every page: `html\`<td>${orderId}</td>\`` escapes `orderId`. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}
