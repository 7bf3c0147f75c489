import { isJsonObject, normalizeMillimes, type JsonObject } from './wire.values.js';
import { boolean, httpUrl, identifier, millimes, positiveInteger, type ValueRule } from './payment.rules.js';
import type { PaymentsFieldError } from './payments.errors.js';

/**
 * The wire names of the pre-authorization flag. The service's public pages disagree:
 * `pre_authorization` (advanced payment flow: initiate pre-authorization, the section whose
 * `confirm_payment` captures it) and `pre_auth` (the pre-authorization reference page). `both`
 * sends the two, for a service that ignores the name it does not know.
 */
export type PreAuthorizationFlag = 'pre_authorization' | 'pre_auth' | 'both';

/** Default of the `preAuthorizationFlag` option; see {@link PreAuthorizationFlag}. */
export const DEFAULT_PRE_AUTHORIZATION_FLAG: PreAuthorizationFlag = 'pre_authorization';

/** One part of a split payment. */
export interface PaymentDestination {
  /** The receiving merchant's id at the service. */
  merchantId: string;
  /** Its part, in millimes (digit string or positive safe integer). */
  amount: string | number;
}

/**
 * The kinds of value a request field holds, each with its TypeScript type. A kind also has one
 * value rule and one wire conversion (in this file): a field's type, validation and wire form
 * all follow from the kind the table gives it.
 */
export interface PaymentFieldTypes {
  /** Millimes: a digit string such as `'12500'` or a positive safe integer, at most 15 digits; travels as a digit string. */
  millimes: string | number;
  /** An absolute http(s) URL without `user:pass@`, at most 2048 characters. */
  httpUrl: string;
  /** A non-blank string of at most 256 characters, no control characters, well-formed Unicode. */
  identifier: string;
  /** A positive safe integer. */
  positiveInteger: number;
  /** `true` or `false`. */
  boolean: boolean;
  /** 1 to 32 `{ merchantId, amount }` parts; travels as `[{ amount: <integer>, destination: <merchantId> }]`. */
  destinations: PaymentDestination[];
}

/** The name of a kind of field value; see {@link PaymentFieldTypes}. */
export type PaymentFieldType = keyof PaymentFieldTypes;

/** What the table declares of one request field of `generate_payment`. */
export interface PaymentField<T extends PaymentFieldType = PaymentFieldType> {
  /** Its name on the wire; `preAuthorization` is named by the `preAuthorizationFlag` option instead. */
  readonly wire: string;
  /** The kind of value: gives the TypeScript type, the value rule and the wire form. */
  readonly type: T;
  /** Whether a payment cannot be generated without it (after module defaults are merged in). */
  readonly required: boolean;
  /** Whether the module options may give it a default (an option of the same name, and a `PAYMENTS_*` variable). */
  readonly fromOptions: boolean;
  /** What the service assumes when the field is not sent, when the service documents a value. */
  readonly serviceDefault?: PaymentFieldTypes[T];
}

/** A {@link PaymentField} of any kind, its `serviceDefault` checked against its own kind. */
type AnyPaymentField = { [T in PaymentFieldType]: PaymentField<T> }[PaymentFieldType];

/** Split payments: a non-empty list of `{ merchantId, amount }` (at most 32). */
const destinations: ValueRule = (value) => {
  if (!Array.isArray(value) || value.length === 0 || value.length > 32)
    return 'must be a list of 1 to 32 { merchantId, amount } entries';
  for (const [i, entry] of value.entries()) {
    if (!isJsonObject(entry)) return `entry ${i} must be an object { merchantId, amount }`;
    const unknown = Object.keys(entry).find((k) => k !== 'merchantId' && k !== 'amount');
    if (unknown !== undefined) return `entry ${i} has an unknown field ${JSON.stringify(unknown.slice(0, 40))}`;
    const problem = identifier(entry.merchantId) ?? millimes(entry.amount);
    if (problem) return `entry ${i}: ${identifier(entry.merchantId) ? 'merchantId' : 'amount'} ${problem}`;
  }
  return undefined;
};

/** The rule and wire conversion of each kind (values that passed the rule; default: sent as they are). */
const KINDS: {
  readonly [T in PaymentFieldType]: {
    readonly rule: ValueRule;
    readonly toWire?: (value: PaymentFieldTypes[T]) => unknown;
  };
} = {
  millimes: { rule: millimes, toWire: (value) => normalizeMillimes(value) },
  httpUrl: { rule: httpUrl },
  identifier: { rule: identifier },
  positiveInteger: { rule: positiveInteger },
  boolean: { rule: boolean },
  // The orchestration page shows integer millimes and the key `destination` for the merchant.
  destinations: {
    rule: destinations,
    toWire: (list) => list.map((d) => ({ amount: Number(normalizeMillimes(d.amount)), destination: d.merchantId })),
  },
};

/**
 * Every request field of `generate_payment`, once, with its documentation: the interface's fields
 * and those the public documentation adds (docs/service-facts.md §4). Everything
 * else is derived from this table: the type {@link GeneratePaymentInput}, validation, the wire
 * body, the module options that default fields and their `PAYMENTS_*` variables. Adding a field
 * means adding one entry here (its doc comment is the field's documentation).
 */
const FIELDS = {
  /**
   * Amount to pay, in millimes (1 dinar = 1000 millimes): a string of ASCII digits such as
   * `'12500'` or a positive safe integer. Decimals, signs and exponents are refused; use
   * `toMillimes('12.5')` to convert from dinars.
   */
  amount: { wire: 'amount', type: 'millimes', required: true, fromOptions: false },
  /**
   * Absolute http(s) URL the customer is sent to after success (the service appends
   * `payment_id`). Defaults to the module's `successLink` option.
   */
  successLink: { wire: 'success_link', type: 'httpUrl', required: true, fromOptions: true },
  /**
   * Absolute http(s) URL the customer is sent to after failure (the service appends
   * `payment_id`). Defaults to the module's `failLink` option.
   */
  failLink: { wire: 'fail_link', type: 'httpUrl', required: true, fromOptions: true },
  /**
   * Absolute http(s) URL that receives the payment confirmation. Leave unset to let the plugin
   * fill in its own signed webhook URL (when `webhook.publicUrl` and `webhook.secret` are set).
   */
  webhook: { wire: 'webhook', type: 'httpUrl', required: false, fromOptions: false },
  /** Your own identifier of the order; echoed back, not checked by the service. */
  developerTrackingId: { wire: 'developer_tracking_id', type: 'identifier', required: false, fromOptions: false },
  /** Session timeout in seconds (service default: 1200). Defaults to the module's `sessionTimeoutSecs` option. */
  sessionTimeoutSecs: {
    wire: 'session_timeout_secs',
    type: 'positiveInteger',
    required: false,
    fromOptions: true,
    serviceDefault: 1200,
  },
  /** Whether card payments are accepted (service default: false). Defaults to the module's `acceptCard` option. */
  acceptCard: { wire: 'accept_card', type: 'boolean', required: false, fromOptions: true, serviceDefault: false },
  /** Image shown on the payment page (service default: the merchant portal's). Defaults to the module's `imageUrl` option. */
  imageUrl: { wire: 'image_url', type: 'httpUrl', required: false, fromOptions: true },
  /**
   * Pre-authorize instead of charging: the amount is held, `payment.authorized` fires once the
   * customer paid, and `capturePayment` (all or part) or `cancelPayment` settles it. The wire
   * name of the flag is the `preAuthorizationFlag` option. Default: not sent (a standard payment).
   */
  preAuthorization: { wire: 'pre_authorization', type: 'boolean', required: false, fromOptions: false },
  /**
   * Your identifier of the customer: once they pay, the service keeps a card binding for it,
   * listed by `listBindings(clientId)` and named in `verifyPayment`'s `details` (`binding_id`, as the service sends it).
   */
  clientId: { wire: 'client_id', type: 'identifier', required: false, fromOptions: false },
  /** Split payment: parts of the amount for other merchants; their sum must not exceed `amount`. */
  destinations: { wire: 'destination', type: 'destinations', required: false, fromOptions: false },
} as const satisfies Readonly<Record<string, AnyPaymentField>>;

type Fields = typeof FIELDS;

/** The fields whose module option may default them (`successLink`, `failLink`, ...). */
export type OptionDefaultedFieldName = {
  [K in keyof Fields]: Fields[K]['fromOptions'] extends true ? K : never;
}[keyof Fields];

type RequiredInputName = {
  [K in keyof Fields]: Fields[K] extends { required: true; fromOptions: false } ? K : never;
}[keyof Fields];

// `keyof Fields` written out (not an alias) makes this mapped type homomorphic, and Pick, Omit and
// Partial keep that: each property keeps its declaration in the table (once: the two parts of the
// input share no key), so editors and TypeDoc show the table's doc comment for it.
type FieldValues = { -readonly [K in keyof Fields]: PaymentFieldTypes[Fields[K]['type']] };

/**
 * Input of `generatePayment`: the request fields in camelCase, derived from the field table
 * (`PAYMENT_FIELDS`). `amount` is required; `successLink` and `failLink` too, here or as module
 * options; the rest are optional and omitted from the wire when unset.
 * @interface
 */
export type GeneratePaymentInput = Pick<FieldValues, RequiredInputName> & Partial<Omit<FieldValues, RequiredInputName>>;

/** The name of a request field of `generatePayment` (camelCase). */
export type PaymentFieldName = keyof GeneratePaymentInput;

/**
 * The table of request fields, by camelCase name (see {@link PaymentField}): read it to list the
 * fields, their wire names, kinds and whether a module option defaults them.
 */
export const PAYMENT_FIELDS: Readonly<Record<PaymentFieldName, PaymentField>> = FIELDS;

/** Every field name, in the table's order (the order of the wire body). */
export const FIELD_NAMES = Object.keys(FIELDS) as readonly PaymentFieldName[];

/** The fields the module options may default, by name. */
export const OPTION_DEFAULTED_FIELDS: readonly OptionDefaultedFieldName[] = FIELD_NAMES.filter(
  (name): name is OptionDefaultedFieldName => FIELDS[name].fromOptions,
);

/** What the service assumes for a field that is not sent (e.g. a 1200 s session), as the table says. */
export function serviceDefaultOf<K extends PaymentFieldName>(
  name: K,
): Fields[K] extends { serviceDefault: infer D } ? D : undefined {
  const field: PaymentField = FIELDS[name];
  return field.serviceDefault as Fields[K] extends { serviceDefault: infer D } ? D : undefined;
}

/** The kinds of the fields that module options may default (each needs a way to be read from a variable). */
export type OptionDefaultedFieldType = { [K in OptionDefaultedFieldName]: Fields[K]['type'] }[OptionDefaultedFieldName];

/** The kind of an option-defaulted field, as the table gives it. */
export function optionFieldType(name: OptionDefaultedFieldName): OptionDefaultedFieldType {
  return FIELDS[name].type;
}

/** The value rule of a field (its kind's rule). */
export function ruleOf(name: PaymentFieldName): ValueRule {
  return KINDS[FIELDS[name].type].rule;
}

/** A field's value (one that passed its rule) in its kind's wire form. */
export function toWireValue(name: PaymentFieldName, value: unknown): unknown {
  const toWire = KINDS[FIELDS[name].type].toWire as ((v: unknown) => unknown) | undefined;
  return toWire ? toWire(value) : value;
}

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
