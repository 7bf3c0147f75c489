import {
  DEFAULT_PRE_AUTHORIZATION_FLAG,
  OPTION_DEFAULTED_FIELDS,
  ruleOf,
  boolean,
  httpUrl,
  integerBetween,
  matches,
  minLength,
  oneOf,
  positiveInteger,
  type ValueRule,
  PaymentsValidationError,
  type PaymentsFieldError,
} from '../api/index.js';
import { defaultPaymentsLogger } from '../common/index.js';
import { STORE_METHODS, isPaymentsInbox, isPaymentsStore, isTransactional } from '../store/index.js';
import { commitPathOf } from '../settlement/index.js';
import { telemetrySettings } from '../telemetry/index.js';
import { SYSTEM_CLOCK } from '../time/index.js';
import {
  PAYMENTS_DEFAULTS,
  type PaymentFieldDefaults,
  type PaymentsOptions,
  type ResolvedPaymentsOptions,
} from './payments.options.js';

/*
 * Options checked and resolved once, when a client is made: every problem named, defaults filled in.
 */

const preAuthorizationFlag: ValueRule = oneOf(['pre_authorization', 'pre_auth', 'both']);
const registrationName: ValueRule = matches(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, - or _');
const webhookPath: ValueRule = matches(/^\/?[A-Za-z0-9._~\-/]+$/, 'must be a URL path such as "payments/webhook"');
const webhookSecret: ValueRule = minLength(PAYMENTS_DEFAULTS.minSecretLength);
const retries: ValueRule = integerBetween(0, 10);

/**
 * Validates options and fills in defaults. Every problem is reported at once, by option name;
 * values are never echoed (the private key and the secret must not reach a log).
 *
 * @throws PaymentsValidationError listing each missing or invalid option
 */
export function resolvePaymentsOptions(options: PaymentsOptions | undefined): ResolvedPaymentsOptions {
  const o = (options ?? {}) as Partial<PaymentsOptions>;
  const errors: PaymentsFieldError[] = [];
  const bad = (field: string, message: string) => errors.push({ field, messages: [message] });

  // An option left undefined takes its default; a set one must pass its rule.
  const check = (field: string, value: unknown, rule: ValueRule) => {
    const problem = value === undefined ? undefined : rule(value);
    if (problem) bad(field, problem);
  };

  if (typeof o.publicKey !== 'string' || o.publicKey.trim() === '')
    bad('publicKey', 'is required (a non-empty string)');
  else if (/[\s:]/.test(o.publicKey)) bad('publicKey', 'must not contain spaces or colons');
  if (typeof o.privateKey !== 'string' || o.privateKey.trim() === '')
    bad('privateKey', 'is required (a non-empty string)');
  else if (/[\r\n]/.test(o.privateKey)) bad('privateKey', 'must not contain line breaks');
  if (o.baseUrl === undefined) bad('baseUrl', 'is required (an absolute http(s) URL)');
  check('baseUrl', o.baseUrl, httpUrl);
  // The options that default fields take the fields' own rules (the field table).
  for (const name of OPTION_DEFAULTED_FIELDS) check(name, o[name], ruleOf(name));
  check('timeoutMs', o.timeoutMs, positiveInteger);
  check('maxRetries', o.maxRetries, retries);
  if (o.store !== undefined && !isPaymentsStore(o.store))
    bad(
      'store',
      `must implement PaymentsStore (${STORE_METHODS.join(', ')}, rateLimits); extend BasicPaymentsStore for a custom one`,
    );
  if (o.inbox !== undefined && !isPaymentsInbox(o.inbox))
    bad('inbox', 'must have transaction(run) (a PaymentsInbox: build one with sqlInbox() from nestjs-payments/store)');
  else if (o.inbox !== undefined && isPaymentsStore(o.store)) {
    const path = commitPathOf({ transactionalStore: isTransactional(o.store), inbox: true });
    if (path.kind === 'refused') bad('inbox', path.reason);
  }
  check('preAuthorizationFlag', o.preAuthorizationFlag, preAuthorizationFlag);
  check('outcomeRecordTtlSecs', o.outcomeRecordTtlSecs, positiveInteger);
  const clock = o.clock as Partial<Record<'now' | 'setTimeout' | 'clearTimeout', unknown>> | null | undefined;
  if (
    clock !== undefined &&
    (typeof clock !== 'object' ||
      clock === null ||
      ['now', 'setTimeout', 'clearTimeout'].some((m) => typeof clock[m as 'now'] !== 'function'))
  )
    bad('clock', 'must have now(), setTimeout() and clearTimeout() (a Clock)');
  const t = o.telemetry;
  if (t !== undefined && typeof t !== 'boolean' && (typeof t !== 'object' || t === null))
    bad('telemetry', 'must be a boolean or an object');
  else if (typeof t === 'object') check('telemetry.backlogIntervalSecs', t.backlogIntervalSecs, positiveInteger);
  check('name', o.name, registrationName);

  const w = o.webhook ?? {};
  check('webhook.path', w.path, webhookPath);
  check('webhook.publicUrl', w.publicUrl, httpUrl);
  check('webhook.secret', w.secret, webhookSecret);
  if (w.previousSecrets !== undefined && !Array.isArray(w.previousSecrets))
    bad('webhook.previousSecrets', 'must be a list of secrets');
  else
    (w.previousSecrets ?? []).forEach((previous, i) => check(`webhook.previousSecrets[${i}]`, previous, webhookSecret));
  if (w.previousSecrets?.length && w.secret === undefined)
    bad('webhook.secret', 'is required when webhook.previousSecrets is set');
  if (w.publicUrl !== undefined && w.secret === undefined)
    bad('webhook.secret', 'is required when webhook.publicUrl is set');
  if (w.secret !== undefined && w.publicUrl === undefined)
    bad('webhook.publicUrl', 'is required when webhook.secret is set');
  check('webhook.acceptUnsigned', w.acceptUnsigned, boolean);
  for (const field of ['maxBodyBytes', 'tokenTtlSecs', 'leaseMs', 'doneTtlSecs', 'unsignedIntervalSecs'] as const)
    check(`webhook.${field}`, w[field], positiveInteger);
  if (o.handlers !== undefined && (typeof o.handlers !== 'object' || o.handlers === null))
    bad('handlers', 'must be an object');
  else check('handlers.timeoutMs', o.handlers?.timeoutMs, positiveInteger);
  check('orders.reuseOpenPayment', o.orders?.reuseOpenPayment, boolean);
  check('duplicates.refund', o.duplicates?.refund, boolean);
  const r = o.reconciliation ?? {};
  check('reconciliation.enabled', r.enabled, boolean);
  for (const field of ['intervalSecs', 'graceSecs', 'maxChecks', 'batchSize', 'horizonDays'] as const)
    check(`reconciliation.${field}`, r[field], positiveInteger);

  if (errors.length > 0) throw new PaymentsValidationError(errors, 'payments options');

  const opts = o as PaymentsOptions;
  const defaults: Partial<PaymentFieldDefaults> = {};
  for (const name of OPTION_DEFAULTED_FIELDS)
    if (opts[name] !== undefined) Object.assign(defaults, { [name]: opts[name] });
  return {
    publicKey: opts.publicKey,
    privateKey: opts.privateKey,
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    // Checked here once and frozen: generatePayment reads them in place without checking them again.
    defaults: Object.freeze(defaults),
    timeoutMs: opts.timeoutMs ?? PAYMENTS_DEFAULTS.timeoutMs,
    maxRetries: opts.maxRetries ?? PAYMENTS_DEFAULTS.maxRetries,
    webhook: {
      enabled: w.publicUrl !== undefined && w.secret !== undefined,
      path: (w.path ?? PAYMENTS_DEFAULTS.webhookPath).replace(/^\/+|\/+$/g, ''),
      publicUrl: w.publicUrl,
      secret: w.secret,
      previousSecrets: Object.freeze([...((w.previousSecrets ?? []) as readonly string[])]),
      acceptUnsigned: w.acceptUnsigned ?? false,
      unsignedIntervalSecs: w.unsignedIntervalSecs ?? PAYMENTS_DEFAULTS.unsignedIntervalSecs,
      maxBodyBytes: w.maxBodyBytes ?? PAYMENTS_DEFAULTS.maxBodyBytes,
      tokenTtlMs: (w.tokenTtlSecs ?? PAYMENTS_DEFAULTS.tokenTtlSecs) * 1000,
      leaseMs: w.leaseMs ?? PAYMENTS_DEFAULTS.leaseMs,
      doneTtlMs: (w.doneTtlSecs ?? PAYMENTS_DEFAULTS.doneTtlSecs) * 1000,
    },
    reconciliation: { ...PAYMENTS_DEFAULTS.reconciliation, ...dropUndefined(r) },
    preAuthorizationFlag: opts.preAuthorizationFlag ?? DEFAULT_PRE_AUTHORIZATION_FLAG,
    outcomeRecordTtlMs: (opts.outcomeRecordTtlSecs ?? PAYMENTS_DEFAULTS.outcomeRecordTtlSecs) * 1000,
    store: opts.store,
    inbox: opts.inbox,
    clock: opts.clock ?? SYSTEM_CLOCK,
    logger: opts.logger ?? defaultPaymentsLogger,
    name: opts.name,
    orders: { reuseOpenPayment: opts.orders?.reuseOpenPayment ?? true },
    duplicates: { refund: opts.duplicates?.refund ?? false },
    handlers: { timeoutMs: opts.handlers?.timeoutMs ?? PAYMENTS_DEFAULTS.handlerTimeoutMs },
    telemetry: telemetrySettings(opts.telemetry),
  };
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
