import { PaymentsValidationError, type PaymentsFieldError } from '../core/payments.errors.js';
import { resolvePaymentsOptions } from '../core/payments.options.js';
import type { PaymentsModuleOptions } from './payments.module-options.js';

/** Anything with `get(key)`: `ConfigService` from @nestjs/config, or a plain wrapper of `process.env`. */
export interface PaymentsConfigReader {
  /** Returns the raw value of a configuration key, or undefined. */
  get(key: string): unknown;
}

/** The environment variables read by {@link paymentsOptionsFromConfig}, by option. */
export const PAYMENTS_ENV = {
  /** `publicKey` */
  publicKey: 'PAYMENTS_PUBLIC_KEY',
  /** `privateKey` */
  privateKey: 'PAYMENTS_PRIVATE_KEY',
  /** `baseUrl` */
  baseUrl: 'PAYMENTS_BASE_URL',
  /** `successLink` */
  successLink: 'PAYMENTS_SUCCESS_LINK',
  /** `failLink` */
  failLink: 'PAYMENTS_FAIL_LINK',
  /** `acceptCard` (`true`/`false`/`1`/`0`) */
  acceptCard: 'PAYMENTS_ACCEPT_CARD',
  /** `sessionTimeoutSecs` */
  sessionTimeoutSecs: 'PAYMENTS_SESSION_TIMEOUT_SECS',
  /** `imageUrl` */
  imageUrl: 'PAYMENTS_IMAGE_URL',
  /** `timeoutMs` */
  timeoutMs: 'PAYMENTS_TIMEOUT_MS',
  /** `maxRetries` */
  maxRetries: 'PAYMENTS_MAX_RETRIES',
  /** `preAuthorizationFlag` (`pre_authorization`, `pre_auth` or `both`) */
  preAuthorizationFlag: 'PAYMENTS_PRE_AUTHORIZATION_FLAG',
  /** `webhook.path` */
  webhookPath: 'PAYMENTS_WEBHOOK_PATH',
  /** `webhook.publicUrl` */
  webhookPublicUrl: 'PAYMENTS_WEBHOOK_PUBLIC_URL',
  /** `webhook.secret` */
  webhookSecret: 'PAYMENTS_WEBHOOK_SECRET',
  /** `webhook.acceptUnsigned` (`true`/`false`/`1`/`0`) */
  webhookAcceptUnsigned: 'PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED',
  /** `reconciliation.enabled` (`true`/`false`/`1`/`0`) */
  reconciliationEnabled: 'PAYMENTS_RECONCILIATION_ENABLED',
  /** `reconciliation.intervalSecs` */
  reconciliationIntervalSecs: 'PAYMENTS_RECONCILIATION_INTERVAL_SECS',
} as const;

/** Option path (as validation errors name it) -> the variable it is read from. */
const VARIABLE_OF: Readonly<Record<string, string>> = {
  publicKey: PAYMENTS_ENV.publicKey,
  privateKey: PAYMENTS_ENV.privateKey,
  baseUrl: PAYMENTS_ENV.baseUrl,
  successLink: PAYMENTS_ENV.successLink,
  failLink: PAYMENTS_ENV.failLink,
  acceptCard: PAYMENTS_ENV.acceptCard,
  sessionTimeoutSecs: PAYMENTS_ENV.sessionTimeoutSecs,
  imageUrl: PAYMENTS_ENV.imageUrl,
  timeoutMs: PAYMENTS_ENV.timeoutMs,
  maxRetries: PAYMENTS_ENV.maxRetries,
  preAuthorizationFlag: PAYMENTS_ENV.preAuthorizationFlag,
  'webhook.path': PAYMENTS_ENV.webhookPath,
  'webhook.publicUrl': PAYMENTS_ENV.webhookPublicUrl,
  'webhook.secret': PAYMENTS_ENV.webhookSecret,
  'webhook.acceptUnsigned': PAYMENTS_ENV.webhookAcceptUnsigned,
  'reconciliation.enabled': PAYMENTS_ENV.reconciliationEnabled,
  'reconciliation.intervalSecs': PAYMENTS_ENV.reconciliationIntervalSecs,
};

function text(config: PaymentsConfigReader, key: string): string | undefined {
  const value = config.get(key);
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

// Numbers and booleans stay as written when malformed, so validation names the variable.
function integer(config: PaymentsConfigReader, key: string): number | undefined {
  const raw = text(config, key);
  if (raw === undefined) return undefined;
  return /^[0-9]+$/.test(raw) ? Number(raw) : (raw as unknown as number);
}

function boolean(config: PaymentsConfigReader, key: string): boolean | undefined {
  const raw = text(config, key)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  return raw as unknown as boolean;
}

/**
 * Builds module options from the configuration keys named in {@link PAYMENTS_ENV}, for
 * `forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (c) => paymentsOptionsFromConfig(c) })`.
 * Unset keys are left out (the defaults apply). `overrides` are merged last, and deeply for
 * `webhook` and `reconciliation` (an override `{ webhook: { decorators } }` keeps the
 * variables' webhook settings).
 *
 * The result is validated here, so that a problem names the variable to fix:
 * `PAYMENTS_PUBLIC_KEY (publicKey)` rather than `publicKey`.
 *
 * @param config `ConfigService` or any `{ get(key) }`
 * @param overrides options set in code (e.g. `store`, `logger`, `webhook.decorators`); default none
 * @throws PaymentsValidationError naming each invalid option and the variable it came from
 */
export function paymentsOptionsFromConfig(config: PaymentsConfigReader, overrides: Partial<PaymentsModuleOptions> = {}): PaymentsModuleOptions {
  const e = PAYMENTS_ENV;
  const fromEnv: Partial<PaymentsModuleOptions> = dropUndefined({
    publicKey: text(config, e.publicKey),
    privateKey: text(config, e.privateKey),
    baseUrl: text(config, e.baseUrl),
    successLink: text(config, e.successLink),
    failLink: text(config, e.failLink),
    acceptCard: boolean(config, e.acceptCard),
    sessionTimeoutSecs: integer(config, e.sessionTimeoutSecs),
    imageUrl: text(config, e.imageUrl),
    timeoutMs: integer(config, e.timeoutMs),
    maxRetries: integer(config, e.maxRetries),
    preAuthorizationFlag: text(config, e.preAuthorizationFlag) as PaymentsModuleOptions['preAuthorizationFlag'],
  });
  const webhook = dropUndefined({
    path: text(config, e.webhookPath),
    publicUrl: text(config, e.webhookPublicUrl),
    secret: text(config, e.webhookSecret),
    acceptUnsigned: boolean(config, e.webhookAcceptUnsigned),
  });
  const reconciliation = dropUndefined({
    enabled: boolean(config, e.reconciliationEnabled),
    intervalSecs: integer(config, e.reconciliationIntervalSecs),
  });

  const options: PaymentsModuleOptions = { ...fromEnv, ...dropUndefined(overrides) } as PaymentsModuleOptions;
  const mergedWebhook = { ...webhook, ...dropUndefined(overrides.webhook ?? {}) };
  if (Object.keys(mergedWebhook).length > 0) options.webhook = mergedWebhook;
  const mergedReconciliation = { ...reconciliation, ...dropUndefined(overrides.reconciliation ?? {}) };
  if (Object.keys(mergedReconciliation).length > 0) options.reconciliation = mergedReconciliation;

  try {
    const { decorators: _decorators, ...coreWebhook } = options.webhook ?? {};
    resolvePaymentsOptions({ ...options, webhook: options.webhook ? coreWebhook : undefined });
  } catch (error) {
    if (!(error instanceof PaymentsValidationError)) throw error;
    throw new PaymentsValidationError(
      error.fields.map((f) => withVariable(f, overrides)),
      'payments options from the environment',
    );
  }
  return options;
}

// An option set in code keeps its name; one read (or missing) from the environment is named by
// its variable, which is what the operator has to fix.
function withVariable(field: PaymentsFieldError, overrides: Partial<PaymentsModuleOptions>): PaymentsFieldError {
  const variable = VARIABLE_OF[field.field];
  if (variable === undefined || valueAt(overrides, field.field) !== undefined) return field;
  return { field: `${variable} (${field.field})`, messages: field.messages };
}

function valueAt(object: object, path: string): unknown {
  return path.split('.').reduce<unknown>((o, key) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined), object);
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
