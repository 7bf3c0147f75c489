import { WEBHOOK_TOKEN_PARAM } from './webhook.token.js';
import { isJsonObject, type JsonObject } from './wire.mapper.js';

/** What a webhook request carries, framework-neutral. */
export interface WebhookRequest {
  /** Parsed query string (Express and Fastify give objects of strings or arrays). */
  query: unknown;
  /** Parsed body: a JSON or form object, a raw string or Buffer, or nothing. */
  body: unknown;
  /** The request's Content-Length header, if any. */
  contentLength?: string | string[] | number;
}

/** The payload of a webhook after parsing, or the reason it is malformed. */
export type ParsedWebhook =
  | { ok: true; token: unknown; paymentIds: string[]; body: JsonObject; query: JsonObject }
  | { ok: false; reason: string };

const ID_KEYS = ['payment_id', 'paymentId', 'id'] as const;

/**
 * Parses a webhook request. The spec shows no payload, so the payment id is looked for where
 * services usually put it: `payment_id`, `paymentId`, `id` in the query or the body, and
 * `result.payment_id` in the body. Every candidate found is returned; the caller requires them
 * to agree with the payment the token was issued for.
 */
export function parseWebhook(request: WebhookRequest): ParsedWebhook {
  const query = isJsonObject(request.query) ? request.query : {};
  const body = toBody(request.body);
  if (body === undefined) return { ok: false, reason: 'body is neither JSON nor form data' };

  const ids: string[] = [];
  const add = (value: unknown): string | undefined => {
    // A parameter repeated with one value (`?payment_id=X&payment_id=X`, which query parsers turn
    // into an array) is that value; copies that differ stay malformed.
    if (Array.isArray(value) && value.length > 0 && value.length <= 16 && value.every((v) => v === (value as unknown[])[0])) value = value[0];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value === 'number' && Number.isSafeInteger(value)) value = String(value);
    if (typeof value !== 'string') return 'payment id must be a single string';
    if (value.length > 256) return 'payment id is too long';
    ids.push(value);
    return undefined;
  };
  for (const source of [query, body]) {
    for (const key of ID_KEYS) {
      const problem = add(source[key]);
      if (problem) return { ok: false, reason: problem };
    }
  }
  if (isJsonObject(body.result)) {
    const problem = add(body.result.payment_id);
    if (problem) return { ok: false, reason: problem };
  }

  const { [WEBHOOK_TOKEN_PARAM]: token, ...rest } = query;
  return { ok: true, token, paymentIds: [...new Set(ids)], body, query: rest };
}

function toBody(body: unknown): JsonObject | undefined {
  if (body === undefined || body === null || body === '') return {};
  if (isJsonObject(body) && !Buffer.isBuffer(body)) return body;
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : undefined;
  if (text === undefined) return undefined;
  if (text.trim() === '') return {};
  try {
    const json = JSON.parse(text) as unknown;
    return isJsonObject(json) ? json : undefined;
  } catch {
    // Not JSON: accept form encoding, which is what many services post.
    if (!/^[^=&]+=[^&]*(&[^=&]+=[^&]*)*$/.test(text.trim())) return undefined;
    return Object.fromEntries(new URLSearchParams(text.trim()));
  }
}
