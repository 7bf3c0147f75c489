import { pathSegmentId, isJsonObject, type JsonObject } from '../api/index.js';
import { WEBHOOK_TOKEN_PARAM } from './webhook.token.js';

/** What a webhook request carries, framework-neutral. */
export interface WebhookRequest {
  /** Parsed query string (Express and Fastify give objects of strings or arrays). */
  query: unknown;
  /** Parsed body: a JSON or form object, a raw string or Buffer, or nothing. */
  body: unknown;
  /** The request's Content-Length header, if any. */
  contentLength?: string | string[] | number;
  /** The token from the route's last path segment, when the route has one. */
  pathToken?: string;
}

/** The payload of a webhook after parsing, or the reason it is malformed. */
export type ParsedWebhook =
  { ok: true; token?: string; paymentId?: string; body: JsonObject; query: JsonObject } | { ok: false; reason: string };

/** Where a request carries parameters: its query string, or its body. */
type Source = 'query' | 'body';

/**
 * Where public clients of the service find the payment id (docs/service-facts.md §2), most specific
 * first, and in which part of the request to look. The most specific name wins wherever it is:
 * a `payment_id` in the body beats an `id` in the query, which is most often the merchant's own
 * (a public URL such as `.../hook?id=store7`), so an unrelated `id` never refuses a delivery.
 * The bare `id` is read from the body before the query for the same reason.
 */
const ID_PLACES: ReadonlyArray<{ read: (source: JsonObject) => unknown; from: readonly Source[] }> = [
  { read: (s) => s.payment_id, from: ['query', 'body'] },
  { read: (s) => s.paymentId, from: ['query', 'body'] },
  { read: (s) => (isJsonObject(s.data) ? s.data.payment_id : undefined), from: ['body'] },
  { read: (s) => (isJsonObject(s.result) ? s.result.payment_id : undefined), from: ['body'] },
  { read: (s) => s.payment_ref, from: ['query', 'body'] },
  { read: (s) => s.id, from: ['body', 'query'] },
];

/**
 * Deepest nesting of objects and arrays a webhook body may have (the body itself is level 1). The
 * service's bodies are flat; a deeper one gets 400 (`body nested deeper than 32 levels`) before
 * anything walks it: a recursive walk (JSON.stringify, a logger, a validation pipe) of a body a few
 * thousand levels deep overflows the stack, and would answer 500.
 */
export const MAX_BODY_DEPTH = 32;

const TOO_DEEP = `body nested deeper than ${MAX_BODY_DEPTH} levels`;

/**
 * Where a path segment's parameters start: its first `&` or `;` (characters that end a path token:
 * none of them can be in one, `[A-Za-z0-9._-]`), or -1.
 */
function firstParamSeparator(segment: string): number {
  const amp = segment.indexOf('&');
  const semi = segment.indexOf(';');
  return amp < 0 ? semi : semi < 0 ? amp : Math.min(amp, semi);
}

/**
 * Parses a webhook request: its token (path segment, else the `webhook_token` query parameter)
 * and the payment id (see {@link ID_PLACES}). However the service appends `payment_id`, it is
 * found: `?payment_id=X` (a plain query), `&payment_id=X` to a URL without a query (it lands in
 * the path segment, `TOKEN&payment_id=X`: split at the first `&` or `;`), or a second
 * `?payment_id=X` to a URL that already has a query (`...?a=b?payment_id=X`: split back into
 * its parameters).
 */
export function parseWebhook(request: WebhookRequest, maxBodyBytes: number): ParsedWebhook {
  const split = splitPathToken(request.pathToken);
  const query = repairQuery(isJsonObject(request.query) ? request.query : {}, split.params);
  const body = toBody(request.body, maxBodyBytes);
  if (typeof body === 'string') return { ok: false, reason: body };

  const sources: Record<Source, JsonObject> = { query, body };
  let paymentId: string | undefined;
  search: for (const place of ID_PLACES) {
    for (const from of place.from) {
      const found = single(place.read(sources[from]));
      if (found === undefined) continue;
      if (typeof found !== 'string') return { ok: false, reason: 'payment id must be a single string' };
      // An id that could never be verified is malformed: a 5xx would have the service deliver it again for ever.
      const problem = pathSegmentId(found);
      if (problem) return { ok: false, reason: `payment id ${problem}` };
      paymentId = found;
      break search;
    }
  }

  const { [WEBHOOK_TOKEN_PARAM]: queryToken, ...rest } = query;
  const token = split.token ?? single(queryToken);
  return { ok: true, token: typeof token === 'string' ? token : undefined, paymentId, body, query: rest };
}

/**
 * A path token followed by what a service appended with `&` (or `;`) to a URL that had no query:
 * the token, and the rest as parameters.
 */
function splitPathToken(segment: string | undefined): { token?: string; params: Array<[string, string]> } {
  if (segment === undefined) return { params: [] };
  const end = firstParamSeparator(segment);
  if (end < 0) return { token: segment, params: [] };
  const params = [...new URLSearchParams(segment.slice(end + 1).replace(/;/g, '&'))].filter(([k]) => k !== '');
  return { token: end === 0 ? undefined : segment.slice(0, end), params };
}

// A parameter repeated with one value (`?payment_id=X&payment_id=X`, which query parsers turn
// into an array) is that value; copies that differ stay ambiguous (returned as the array).
function single(value: unknown): unknown {
  if (
    Array.isArray(value) &&
    value.length > 0 &&
    value.length <= 16 &&
    value.every((v: unknown) => v === (value as unknown[])[0])
  )
    value = value[0];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return value;
}

function repairQuery(query: JsonObject, fromPath: Array<[string, string]>): JsonObject {
  const repaired: JsonObject = {};
  const add = (key: string, value: unknown) => {
    const existing = repaired[key];
    repaired[key] = existing === undefined ? value : ([] as unknown[]).concat(existing, value);
  };
  for (const [key, value] of Object.entries(query)) {
    if (typeof value === 'string' && (key.includes('?') || value.includes('?'))) {
      // A naive `?payment_id=X` lands in a value (`...?a=b` -> `a` = `b?payment_id=X`), or in the
      // key when the query ended in a bare flag or an empty `?` (`debug?payment_id` = `X`).
      const q = key.indexOf('?');
      const [ownKey, ownValue] = q < 0 ? [key, value.split('?')[0]] : [key.slice(0, q), ''];
      const appended =
        q < 0
          ? value.split('?').slice(1).join('&')
          : `${key
              .slice(q + 1)
              .split('?')
              .join('&')}=${value.split('?').join('&')}`;
      if (ownKey !== '') add(ownKey, ownValue);
      for (const [k, v] of new URLSearchParams(appended)) if (k !== '') add(k, v);
    } else {
      add(key, value);
    }
  }
  for (const [key, value] of fromPath) add(key, value);
  return repaired;
}

/** The body as an object, or the reason it is refused. */
function toBody(body: unknown, maxBodyBytes: number): JsonObject | string {
  if (body === undefined || body === null || body === '') return {};
  if (isJsonObject(body) && !Buffer.isBuffer(body)) {
    // Parsed by the host's parser: its depth first, since JSON.stringify below recurses.
    if (nestedDeeperThan(body, MAX_BODY_DEPTH)) return TOO_DEEP;
    // A chunked body has no Content-Length to check up front: measure what was parsed.
    return JSON.stringify(body).length > maxBodyBytes ? 'payload too large' : body;
  }
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : undefined;
  if (text === undefined) return 'body is neither JSON nor form data';
  if (Buffer.byteLength(text) > maxBodyBytes) return 'payload too large';
  if (text.trim() === '') return {};
  // Only what looks like JSON: a form body may carry brackets in its values.
  if (/^\s*[[{]/.test(text) && bracketsDeeperThan(text, MAX_BODY_DEPTH)) return TOO_DEEP;
  try {
    const json = JSON.parse(text) as unknown;
    return isJsonObject(json) ? json : 'body is neither JSON nor form data';
  } catch {
    // Not JSON: form encoding (what many services post), also when sent as text/plain.
    const trimmed = text.trim();
    if (!/^[^=&]+=[^&]*(&[^=&]+=[^&]*)*$/.test(trimmed)) return 'body is neither JSON nor form data';
    return Object.fromEntries(new URLSearchParams(trimmed));
  }
}

/**
 * Whether a parsed value nests objects and arrays deeper than `max` (the value itself is level 1).
 * Iterative, so that no depth overflows the stack; a cycle counts as too deep, so it ends too.
 */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[object, number]> = [];
  if (value !== null && typeof value === 'object') stack.push([value, 1]);
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, depth] = next;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? (node as unknown[]) : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child as object, depth + 1]);
    }
  }
  return false;
}

/**
 * Whether JSON text opens more than `max` objects or arrays inside one another, by counting
 * brackets outside strings: one pass over the text, before JSON.parse builds anything.
 */
function bracketsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character (an escaped quote stays in the string)
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}
