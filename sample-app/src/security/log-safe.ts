const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A value someone else chose (a query parameter, a path, a service's message) made safe for one
 * log line: control characters are written as escapes (`\n`, `\u001b`), so a line break cannot
 * forge a log line and an escape sequence cannot reach the terminal; long values are cut.
 * @param max longest kept, in characters (before escaping)
 */
export function logSafe(value: unknown, max = 200): string {
  const text = String(value);
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(CONTROL, (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
