/**
 * A tiny HTML template helper: `html` is a tagged template that escapes every interpolated
 * value unless it is itself the output of `html`. Escaping is therefore the default, and
 * forgetting it is impossible rather than merely unlikely.
 */

/** HTML that is already safe to insert (built by {@link html}). */
export class SafeHtml {
  /** @param value markup whose every dynamic part was escaped */
  constructor(readonly value: string) {}

  /** The markup. */
  toString(): string {
    return this.value;
  }
}

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  // Lets templates write `${cond && html`...`}` and `${optional}` without "false"/"undefined".
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template: `` html`<p>${text}</p>` ``; values are escaped, nested `html` and arrays of it are kept. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}
