/**
 * Validation of request input, as strict as the documented types: the sandbox exists to catch a
 * client that sends the wrong wire, so it refuses what no public page allows (`null` for an
 * optional field, a fractional amount) rather than guessing what the service tolerates. Where the
 * public pages disagree (`amount` as a string or a JSON integer, the two pre-authorization flag
 * names; docs/service-facts.md §4), it accepts every documented form.
 */
// The sandbox runs with no package installed (test/testing/sandbox.cli.e2e-spec.ts): a barrel would
// load the HTTP transport and axios, so it takes this dependency-free rule file directly.
// eslint-disable-next-line no-restricted-imports -- see above
import { identifier } from '../core/api/wire.values.js';
import type { NewPayment } from './sandbox.state.js';
import type { SandboxDestination, SandboxPreauthorizationInput } from './sandbox.types.js';

const DIGITS = /^[0-9]+$/;

/**
 * Whether `value` is a link the service side takes: anything the WHATWG URL parser reads as
 * http(s) with a host. Deliberately more lenient than the plugin's `httpUrl` rule (which also
 * refuses `user:pass@` and URLs over 2048 characters before sending): the service's own rule is
 * not documented, and a stand-in for it must not refuse what it may accept.
 */
export function isParsableHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * A positive amount in millimes as ASCII digits, without leading zeros; undefined when invalid.
 * A string of digits always; a JSON integer only when `integers` is set (generate_payment, where
 * pages show both, service facts §4), never elsewhere (confirm_payment documents a string, §5).
 */
export function parseMillimes(value: unknown, integers = false): string | undefined {
  if (integers && typeof value === 'number')
    return Number.isSafeInteger(value) && value > 0 ? String(value) : undefined;
  if (typeof value !== 'string' || !DIGITS.test(value) || !/[1-9]/.test(value)) return undefined;
  return value.replace(/^0+/, '');
}

/**
 * The pre-authorization flag of a generate_payment body: `pre_auth` (api-reference/pre-authorization)
 * or `pre_authorization` (advanced-payment-flow/initiate-pre-authorization), booleans. Both
 * present with different values is ambiguous and refused (undefined), never resolved by guessing.
 */
export function parsePreAuthorization(body: Record<string, unknown>): boolean | undefined {
  const flags = (['pre_auth', 'pre_authorization'] as const).filter((name) => name in body).map((name) => body[name]);
  if (flags.some((flag) => typeof flag !== 'boolean')) return undefined;
  if (flags.length === 2 && flags[0] !== flags[1]) return undefined;
  return flags[0] === true;
}

/**
 * The `destination` list of a split payment (api-reference/payment-orchestration): objects
 * `{amount: <positive JSON integer>, destination: <non-empty string>}` whose amounts add up to at
 * most `total` millimes. Undefined when invalid; extra fields of an entry are dropped.
 */
export function parseDestinations(value: unknown, total: string): SandboxDestination[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const destinations: SandboxDestination[] = [];
  let sum = 0n;
  for (const entry of value) {
    if (!isJsonObject(entry)) return undefined;
    const { amount, destination } = entry;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) return undefined;
    if (typeof destination !== 'string' || destination.trim() === '') return undefined;
    sum += BigInt(amount);
    destinations.push(Object.freeze({ amount, destination }));
  }
  return sum <= BigInt(total) ? destinations : undefined;
}

/**
 * Whether a `client_id` is acceptable. The service documents no rule ("Invalid client_id when the
 * identifier is invalid", docs/service-facts.md §7), so the sandbox takes exactly what the plugin sends: its
 * identifier rule (non-blank, at most 256 characters, no control characters, well-formed
 * Unicode). It thus never refuses an id the plugin lets through, and what it refuses the plugin
 * refuses first, before sending, with a message naming the field.
 */
export function isValidClientId(value: unknown): value is string {
  return identifier(value) === undefined;
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
  const amount = parseMillimes(body.amount, true);
  if (amount === undefined || !isParsableHttpUrl(body.success_link) || !isParsableHttpUrl(body.fail_link))
    return undefined;
  const result: NewPayment = { amount, successLink: body.success_link, failLink: body.fail_link };
  if ('webhook' in body) {
    if (!isParsableHttpUrl(body.webhook)) return undefined;
    result.webhook = body.webhook;
  }
  if ('image_url' in body) {
    if (!isParsableHttpUrl(body.image_url)) return undefined;
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
  const preAuthorization = parsePreAuthorization(body);
  if (preAuthorization === undefined) return undefined;
  if (preAuthorization) result.preAuthorization = true;
  if ('client_id' in body) {
    if (!isValidClientId(body.client_id)) return undefined;
    result.clientId = body.client_id;
  }
  if ('destination' in body) {
    const destinations = parseDestinations(body.destination, amount);
    if (destinations === undefined) return undefined;
    result.destinations = destinations;
  }
  return result;
}

/**
 * Refuses a client id that `bindings/list` would refuse.
 * @throws TypeError naming the rule
 */
export function checkClientId(clientId: unknown): void {
  if (!isValidClientId(clientId))
    throw new TypeError(
      'PaymentsSandbox: clientId must be a non-blank string of at most 256 characters, without control characters',
    );
}

/**
 * The amount of `createPreauthorizedPayment`'s input, after checking the input.
 * @throws TypeError when `amount` is not positive millimes or `clientId` is one bindings/list refuses
 */
export function preauthorizedAmount(input: SandboxPreauthorizationInput): string {
  const amount = parseMillimes(input.amount, true);
  if (amount === undefined)
    throw new TypeError(
      'PaymentsSandbox: amount must be a positive number of millimes (a string of digits or a safe integer)',
    );
  if (input.clientId !== undefined) checkClientId(input.clientId);
  return amount;
}
