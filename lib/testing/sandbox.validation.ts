/**
 * Validation of request input, as strict as the spec's types: the sandbox exists to catch a
 * client that sends the wrong wire, so it refuses what the spec does not allow (a JSON number
 * as `amount`, `null` for an optional field) rather than guessing what the service tolerates.
 */
import type { NewPayment } from './sandbox.state.js';

const DIGITS = /^[0-9]+$/;
const CLIENT_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Whether `value` is an absolute http(s) URL with a host. */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** A positive amount in millimes as ASCII digits, without leading zeros; undefined when invalid. */
export function parseMillimes(value: unknown): string | undefined {
  if (typeof value !== 'string' || !DIGITS.test(value) || !/[1-9]/.test(value)) return undefined;
  return value.replace(/^0+/, '');
}

/** Whether a `client_id` is acceptable: 1 to 128 characters of `[A-Za-z0-9._:@-]`. */
export function isValidClientId(value: unknown): value is string {
  return typeof value === 'string' && CLIENT_ID.test(value);
}

/** Whether a parsed JSON value is a plain object (not an array, not null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validates a `generate_payment` body. Unknown fields are ignored. Returns undefined when any
 * field is invalid: the service's error is a bare "Bad Request", so there is nothing to list.
 */
export function parseGenerateRequest(body: Record<string, unknown>): NewPayment | undefined {
  const amount = parseMillimes(body.amount);
  if (amount === undefined || !isHttpUrl(body.success_link) || !isHttpUrl(body.fail_link)) return undefined;
  const result: NewPayment = { amount, successLink: body.success_link, failLink: body.fail_link };
  if ('webhook' in body) {
    if (!isHttpUrl(body.webhook)) return undefined;
    result.webhook = body.webhook;
  }
  if ('image_url' in body) {
    if (!isHttpUrl(body.image_url)) return undefined;
    result.imageUrl = body.image_url;
  }
  if ('developer_tracking_id' in body) {
    if (typeof body.developer_tracking_id !== 'string') return undefined;
    result.developerTrackingId = body.developer_tracking_id;
  }
  if ('session_timeout_secs' in body) {
    const secs = body.session_timeout_secs;
    if (typeof secs !== 'number' || !Number.isSafeInteger(secs) || secs <= 0) return undefined;
    result.sessionTimeoutSecs = secs;
  }
  if ('accept_card' in body) {
    if (typeof body.accept_card !== 'boolean') return undefined;
    result.acceptCard = body.accept_card;
  }
  return result;
}
