import type { PaymentsModuleOptions } from './payments.module-definition.js';

/** Anything with `get(key)`: `ConfigService` from @nestjs/config, or a plain wrapper of `process.env`. */
export interface PaymentsConfigReader {
  /** Returns the raw value of a configuration key, or undefined. */
  get(key: string): unknown;
}

/** The environment variables read by {@link paymentsOptionsFromConfig}, by option. */
export const PAYMENTS_ENV = {
  publicKey: 'PAYMENTS_PUBLIC_KEY',
  privateKey: 'PAYMENTS_PRIVATE_KEY',
  baseUrl: 'PAYMENTS_BASE_URL',
  successLink: 'PAYMENTS_SUCCESS_LINK',
  failLink: 'PAYMENTS_FAIL_LINK',
  acceptCard: 'PAYMENTS_ACCEPT_CARD',
  sessionTimeoutSecs: 'PAYMENTS_SESSION_TIMEOUT_SECS',
  imageUrl: 'PAYMENTS_IMAGE_URL',
  timeoutMs: 'PAYMENTS_TIMEOUT_MS',
  maxRetries: 'PAYMENTS_MAX_RETRIES',
  webhookPath: 'PAYMENTS_WEBHOOK_PATH',
  webhookPublicUrl: 'PAYMENTS_WEBHOOK_PUBLIC_URL',
  webhookSecret: 'PAYMENTS_WEBHOOK_SECRET',
} as const;

function text(config: PaymentsConfigReader, key: string): string | undefined {
  const value = config.get(key);
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

// Numbers and booleans stay as written when malformed, so start-up validation names the option.
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
 * Builds module options from configuration keys named in {@link PAYMENTS_ENV}, for
 * `forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: paymentsOptionsFromConfig })`.
 * Unset keys are left out, so the module's defaults apply and missing required ones are
 * reported by name at start-up.
 *
 * @param config `ConfigService` or any `{ get(key) }`
 * @param overrides options to set in code (e.g. `store`), applied last
 */
export function paymentsOptionsFromConfig(config: PaymentsConfigReader, overrides: Partial<PaymentsModuleOptions> = {}): PaymentsModuleOptions {
  const e = PAYMENTS_ENV;
  const webhook = {
    path: text(config, e.webhookPath),
    publicUrl: text(config, e.webhookPublicUrl),
    secret: text(config, e.webhookSecret),
  };
  const options = {
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
    webhook: dropUndefined(webhook),
  };
  return { ...dropUndefined(options), ...overrides } as PaymentsModuleOptions;
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
