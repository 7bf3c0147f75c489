import { normalizeMillimes } from './money.util.js';
import { boolean, httpUrl, identifier, millimes, positiveInteger, type ValueRule } from './payment.rules.js';
import type { PaymentsFieldError } from './payments.errors.js';
import type { GeneratePaymentInput, PaymentDestination } from './payments.types.js';
import { isJsonObject, type JsonObject } from './wire.mapper.js';

/**
 * The wire names of the pre-authorization flag. The service's public pages disagree:
 * `pre_authorization` (advanced payment flow: initiate pre-authorization, the section whose
 * `confirm_payment` captures it) and `pre_auth` (the pre-authorization reference page). `both`
 * sends the two, for a service that ignores the name it does not know.
 */
export type PreAuthorizationFlag = 'pre_authorization' | 'pre_auth' | 'both';

/** Default of the `preAuthorizationFlag` option; see {@link PreAuthorizationFlag}. */
export const DEFAULT_PRE_AUTHORIZATION_FLAG: PreAuthorizationFlag = 'pre_authorization';

/** What the table knows of one request field of `generate_payment`. */
export interface PaymentField {
  /** The field in `generatePayment`'s input (camelCase). */
  readonly name: keyof GeneratePaymentInput;
  /** Its name on the wire; `preAuthorization` is named by the `preAuthorizationFlag` option instead. */
  readonly wire: string;
  /** Whether a payment cannot be generated without it (after module defaults are merged in). */
  readonly required: boolean;
  /** Whether the module options may give it a default (an option of the same name). */
  readonly fromOptions: boolean;
  /** The value rule. */
  readonly rule: ValueRule;
  /** Turns a valid value into what travels (e.g. amount -> digit string). Default: as it is. */
  readonly toWire?: (value: never) => unknown;
}

/** Split payments: a non-empty list of `{ merchantId, amount }` (at most 32). */
const destinations: ValueRule = (value) => {
  if (!Array.isArray(value) || value.length === 0 || value.length > 32) return 'must be a list of 1 to 32 { merchantId, amount } entries';
  for (const [i, entry] of value.entries()) {
    if (!isJsonObject(entry)) return `entry ${i} must be an object { merchantId, amount }`;
    const unknown = Object.keys(entry).find((k) => k !== 'merchantId' && k !== 'amount');
    if (unknown !== undefined) return `entry ${i} has an unknown field ${JSON.stringify(unknown.slice(0, 40))}`;
    const problem = identifier(entry.merchantId) ?? millimes(entry.amount);
    if (problem) return `entry ${i}: ${identifier(entry.merchantId) ? 'merchantId' : 'amount'} ${problem}`;
  }
  return undefined;
};

/**
 * Every request field of `generate_payment`, once: the spec's fields (interface §4.1) and those
 * the public documentation adds (public-api-facts §4). Types live in `GeneratePaymentInput`;
 * validation, the wire body and the option defaults are derived from this table.
 */
export const PAYMENT_FIELDS: readonly PaymentField[] = [
  { name: 'amount', wire: 'amount', required: true, fromOptions: false, rule: millimes, toWire: (v: string | number) => normalizeMillimes(v) },
  { name: 'successLink', wire: 'success_link', required: true, fromOptions: true, rule: httpUrl },
  { name: 'failLink', wire: 'fail_link', required: true, fromOptions: true, rule: httpUrl },
  { name: 'webhook', wire: 'webhook', required: false, fromOptions: false, rule: httpUrl },
  { name: 'developerTrackingId', wire: 'developer_tracking_id', required: false, fromOptions: false, rule: identifier },
  { name: 'sessionTimeoutSecs', wire: 'session_timeout_secs', required: false, fromOptions: true, rule: positiveInteger },
  { name: 'acceptCard', wire: 'accept_card', required: false, fromOptions: true, rule: boolean },
  { name: 'imageUrl', wire: 'image_url', required: false, fromOptions: true, rule: httpUrl },
  { name: 'preAuthorization', wire: 'pre_authorization', required: false, fromOptions: false, rule: boolean },
  { name: 'clientId', wire: 'client_id', required: false, fromOptions: false, rule: identifier },
  {
    name: 'destinations',
    wire: 'destination',
    required: false,
    fromOptions: false,
    rule: destinations,
    // The orchestration page shows integer millimes and the key `destination` for the merchant.
    toWire: (list: PaymentDestination[]) => list.map((d) => ({ amount: Number(normalizeMillimes(d.amount)), destination: d.merchantId })),
  },
];

const BY_NAME: ReadonlyMap<string, PaymentField> = new Map(PAYMENT_FIELDS.map((f) => [f.name, f]));

/** The fields the module options may default, by name. */
export const OPTION_DEFAULTED_FIELDS = PAYMENT_FIELDS.filter((f) => f.fromOptions).map((f) => f.name);

/** Undefined and null mean "not set": the wire omits them. */
const isSet = (value: unknown): boolean => value !== undefined && value !== null;

/**
 * Checks a `generatePayment` input (module defaults merged in) against the table, plus the one
 * rule across fields (destinations must not add up to more than the amount).
 * @returns every problem, by field; empty when valid
 */
export function checkPaymentInput(input: unknown): PaymentsFieldError[] {
  if (!isJsonObject(input)) return [{ field: 'input', messages: ['must be an object'] }];
  const errors: PaymentsFieldError[] = [];
  // Own keys only, looked up in a Map: `__proto__`, `constructor` and the like are unknown fields.
  for (const [key, value] of Object.entries(input)) {
    if (!isSet(value)) continue;
    const field = BY_NAME.get(key);
    if (!field) {
      errors.push({ field: key.slice(0, 64), messages: ['is not a field of generatePayment'] });
      continue;
    }
    const problem = field.rule(value);
    if (problem) errors.push({ field: key, messages: [problem] });
  }
  for (const field of PAYMENT_FIELDS) {
    if (field.required && !isSet(input[field.name])) {
      errors.push({ field: field.name, messages: [field.fromOptions ? `is required (here or as the module's ${field.name} option)` : 'is required'] });
    }
  }
  const list = input.destinations;
  if (errors.length === 0 && Array.isArray(list)) {
    const total = (list as PaymentDestination[]).reduce((sum, d) => sum + BigInt(normalizeMillimes(d.amount) as string), 0n);
    if (total > BigInt(normalizeMillimes(input.amount) as string)) {
      errors.push({ field: 'destinations', messages: ['must not add up to more than amount'] });
    }
  }
  return errors;
}

/**
 * camelCase input -> the JSON body of `generate_payment`: unset fields omitted (never null),
 * `amount` a digit string. Expects input that passed {@link checkPaymentInput}.
 * @param flag the wire name(s) of the pre-authorization flag
 */
export function toPaymentWire(input: GeneratePaymentInput, flag: PreAuthorizationFlag): JsonObject {
  const wire: JsonObject = {};
  const source = input as unknown as JsonObject;
  for (const field of PAYMENT_FIELDS) {
    const value = source[field.name];
    if (!isSet(value)) continue;
    const converted = field.toWire ? (field.toWire as (v: unknown) => unknown)(value) : value;
    if (field.name === 'preAuthorization') {
      for (const name of flag === 'both' ? ['pre_authorization', 'pre_auth'] : [flag]) wire[name] = converted;
    } else {
      wire[field.wire] = converted;
    }
  }
  return wire;
}
