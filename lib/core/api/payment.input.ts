import { normalizeMillimes } from './money.util.js';
import {
  FIELD_NAMES,
  PAYMENT_FIELDS,
  ruleOf,
  toWireValue,
  type GeneratePaymentInput,
  type PaymentDestination,
  type PaymentFieldName,
  type PreAuthorizationFlag,
} from './payment.fields.js';
import type { PaymentsFieldError } from './payments.errors.js';
import { isJsonObject, type JsonObject } from './json.util.js';

/** Undefined and null mean "not set": the wire omits them. */
const isSet = (value: unknown): boolean => value !== undefined && value !== null;

const isFieldName = (key: string): key is PaymentFieldName => Object.hasOwn(PAYMENT_FIELDS, key);

const REQUIRED_FIELDS: readonly PaymentFieldName[] = FIELD_NAMES.filter((name) => PAYMENT_FIELDS[name].required);

/**
 * Checks a `generatePayment` input against the table, plus the one rule across fields
 * (destinations must not add up to more than the amount).
 *
 * @param defaults values for the fields the input leaves unset (the module's options): they count
 *   for the required fields but are not checked again, since the options passed the same rules
 *   once, when they were resolved (checking the links again would dominate the call's cost;
 *   docs/performance.md)
 * @returns every problem, by field; empty when valid
 */
export function checkPaymentInput(
  input: unknown,
  defaults?: Readonly<Partial<Record<PaymentFieldName, unknown>>>,
): PaymentsFieldError[] {
  if (!isJsonObject(input)) return [{ field: 'input', messages: ['must be an object'] }];
  const errors: PaymentsFieldError[] = [];
  // Own keys only, checked with Object.hasOwn: `__proto__`, `constructor` and the like are unknown fields.
  for (const key of Object.keys(input)) {
    const value = input[key];
    if (!isSet(value)) continue;
    if (!isFieldName(key)) {
      errors.push({ field: key.slice(0, 64), messages: ['is not a field of generatePayment'] });
      continue;
    }
    const problem = ruleOf(key)(value);
    if (problem) errors.push({ field: key, messages: [problem] });
  }
  for (const name of REQUIRED_FIELDS) {
    if (!isSet(input[name]) && !isSet(defaults?.[name])) {
      const field = PAYMENT_FIELDS[name];
      errors.push({
        field: name,
        messages: [field.fromOptions ? `is required (here or as the module's ${name} option)` : 'is required'],
      });
    }
  }
  const list = input.destinations;
  if (errors.length === 0 && Array.isArray(list)) {
    const total = (list as PaymentDestination[]).reduce(
      (sum, d) => sum + BigInt(normalizeMillimes(d.amount) as string),
      0n,
    );
    if (total > BigInt(normalizeMillimes(input.amount) as string)) {
      errors.push({ field: 'destinations', messages: ['must not add up to more than amount'] });
    }
  }
  return errors;
}

/**
 * camelCase input -> the JSON body of `generate_payment`: unset fields omitted (never null),
 * each value in its kind's wire form (`amount` a digit string). Expects input that passed
 * {@link checkPaymentInput}.
 * @param flag the wire name(s) of the pre-authorization flag
 * @param fallback values for the fields the input leaves unset (the module's defaults): read in
 *   place, so that no merged copy of the input is made per call
 */
export function toPaymentWire(
  input: GeneratePaymentInput,
  flag: PreAuthorizationFlag,
  fallback?: Readonly<Partial<Record<PaymentFieldName, unknown>>>,
): JsonObject {
  const wire: JsonObject = {};
  const source: Partial<Record<PaymentFieldName, unknown>> = input;
  for (const name of FIELD_NAMES) {
    let value = source[name];
    if (!isSet(value)) value = fallback?.[name];
    if (!isSet(value)) continue;
    const converted = toWireValue(name, value);
    if (name === 'preAuthorization') {
      for (const wireName of flag === 'both' ? ['pre_authorization', 'pre_auth'] : [flag]) wire[wireName] = converted;
    } else {
      wire[PAYMENT_FIELDS[name].wire] = converted;
    }
  }
  return wire;
}
