import {
  OPTION_DEFAULTED_FIELDS,
  optionFieldType,
  PaymentsValidationError,
  type OptionDefaultedFieldName,
  type OptionDefaultedFieldType,
  type PaymentsFieldError,
} from '../core/api/index.js';
import { resolvePaymentsOptions, type PaymentFieldDefaults } from '../core/client/index.js';
import type { PaymentsModuleOptions } from './payments.module-options.js';

/** Anything with `get(key)`: `ConfigService` from @nestjs/config, or a plain wrapper of `process.env`. */
export interface PaymentsConfigReader {
  /** Returns the raw value of a configuration key, or undefined. */
  get(key: string): unknown;
}

type Reader = (config: PaymentsConfigReader, key: string) => unknown;

function text(config: PaymentsConfigReader, key: string): string | undefined {
  const value = config.get(key);
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

// Numbers and booleans stay as written when malformed, so validation names the variable.
function integer(config: PaymentsConfigReader, key: string): number | string | undefined {
  const raw = text(config, key);
  if (raw === undefined) return undefined;
  return /^[0-9]+$/.test(raw) ? Number(raw) : raw;
}

// A comma-separated list (`a,b`), blanks dropped: secrets never contain commas.
function list(config: PaymentsConfigReader, key: string): string[] | undefined {
  const raw = text(config, key);
  if (raw === undefined) return undefined;
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  return items.length === 0 ? undefined : items;
}

function boolean(config: PaymentsConfigReader, key: string): boolean | string | undefined {
  const raw = text(config, key)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  return raw;
}

/** How a variable of each kind of field value is read (a kind a module option may default needs one). */
const READ_FIELD: { readonly [T in OptionDefaultedFieldType]: Reader } = {
  httpUrl: text,
  positiveInteger: integer,
  boolean,
};

/** One variable: its name, the option path it sets (as validation errors name it), how it is read. */
interface VariableSource {
  readonly variable: string;
  readonly option: string;
  readonly read: Reader;
}

/** The variables of the options that are not `generatePayment` field defaults. */
const OPTION_VARIABLES = {
  /** `publicKey` */
  publicKey: { variable: 'PAYMENTS_PUBLIC_KEY', option: 'publicKey', read: text },
  /** `privateKey` */
  privateKey: { variable: 'PAYMENTS_PRIVATE_KEY', option: 'privateKey', read: text },
  /** `baseUrl` */
  baseUrl: { variable: 'PAYMENTS_BASE_URL', option: 'baseUrl', read: text },
  /** `timeoutMs` */
  timeoutMs: { variable: 'PAYMENTS_TIMEOUT_MS', option: 'timeoutMs', read: integer },
  /** `maxRetries` */
  maxRetries: { variable: 'PAYMENTS_MAX_RETRIES', option: 'maxRetries', read: integer },
  /** `preAuthorizationFlag` (`pre_authorization`, `pre_auth` or `both`) */
  preAuthorizationFlag: { variable: 'PAYMENTS_PRE_AUTHORIZATION_FLAG', option: 'preAuthorizationFlag', read: text },
  /** `webhook.path` */
  webhookPath: { variable: 'PAYMENTS_WEBHOOK_PATH', option: 'webhook.path', read: text },
  /** `webhook.publicUrl` */
  webhookPublicUrl: { variable: 'PAYMENTS_WEBHOOK_PUBLIC_URL', option: 'webhook.publicUrl', read: text },
  /** `webhook.secret` */
  webhookSecret: { variable: 'PAYMENTS_WEBHOOK_SECRET', option: 'webhook.secret', read: text },
  /** `webhook.previousSecrets` (comma-separated) */
  webhookPreviousSecrets: {
    variable: 'PAYMENTS_WEBHOOK_PREVIOUS_SECRETS',
    option: 'webhook.previousSecrets',
    read: list,
  },
  /** `webhook.acceptUnsigned` (`true`/`false`/`1`/`0`) */
  webhookAcceptUnsigned: {
    variable: 'PAYMENTS_WEBHOOK_ACCEPT_UNSIGNED',
    option: 'webhook.acceptUnsigned',
    read: boolean,
  },
  /** `reconciliation.enabled` (`true`/`false`/`1`/`0`) */
  reconciliationEnabled: {
    variable: 'PAYMENTS_RECONCILIATION_ENABLED',
    option: 'reconciliation.enabled',
    read: boolean,
  },
  /** `reconciliation.intervalSecs` */
  reconciliationIntervalSecs: {
    variable: 'PAYMENTS_RECONCILIATION_INTERVAL_SECS',
    option: 'reconciliation.intervalSecs',
    read: integer,
  },
} as const satisfies Readonly<Record<string, VariableSource>>;

/** `successLink` -> `SUCCESS_LINK`. */
type ScreamingSnake<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Uppercase<Head> : `_${Head}`}${ScreamingSnake<Tail>}`
  : S;

const screamingSnake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/**
 * The variables of the options that default `generatePayment` fields, derived from the field
 * table: `PAYMENTS_` and the field's name in SCREAMING_SNAKE_CASE (`PAYMENTS_SUCCESS_LINK`).
 */
const FIELD_VARIABLES: ReadonlyArray<readonly [OptionDefaultedFieldName, VariableSource]> = OPTION_DEFAULTED_FIELDS.map(
  (name) =>
    [
      name,
      { variable: `PAYMENTS_${screamingSnake(name)}`, option: name, read: READ_FIELD[optionFieldType(name)] },
    ] as const,
);

/** Every variable, options and field defaults alike: the one list the reader and the error messages use. */
const SOURCES: readonly VariableSource[] = [
  ...Object.values(OPTION_VARIABLES),
  ...FIELD_VARIABLES.map(([, source]) => source),
];

/**
 * The environment variables read by {@link paymentsOptionsFromConfig}, by option: those of the
 * options that default `generatePayment` fields (`successLink`: `PAYMENTS_SUCCESS_LINK`, ...;
 * booleans as `true`/`false`/`1`/`0`) follow from the field table, the others are listed here.
 * @namespace
 */
export const PAYMENTS_ENV: {
  readonly [K in keyof typeof OPTION_VARIABLES]: (typeof OPTION_VARIABLES)[K]['variable'];
} & {
  readonly [K in keyof PaymentFieldDefaults]-?: `PAYMENTS_${ScreamingSnake<K>}`;
} = Object.freeze(
  Object.fromEntries([
    ...Object.entries(OPTION_VARIABLES).map(([key, source]) => [key, source.variable]),
    ...FIELD_VARIABLES.map(([name, source]) => [name, source.variable]),
  ]),
) as never;

/** Settings of {@link paymentsOptionsFromConfig}. */
export interface PaymentsConfigSettings {
  /**
   * What the variables' names start with instead of `PAYMENTS_`, for a second merchant account:
   * with `'PAYMENTS_OUTLET_'`, `PAYMENTS_OUTLET_PUBLIC_KEY`, `PAYMENTS_OUTLET_WEBHOOK_PUBLIC_URL`,
   * ... (every variable, none shared with the default account). Default `'PAYMENTS_'`.
   */
  prefix?: string;
}

/** The prefix of the variables of {@link PAYMENTS_ENV}. */
const DEFAULT_PREFIX = 'PAYMENTS_';

/**
 * Builds module options from the configuration keys named in {@link PAYMENTS_ENV}, for
 * `forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (c) => paymentsOptionsFromConfig(c) })`.
 * Unset keys are left out (the defaults apply). `overrides` are merged last, and deeply for
 * `webhook` and `reconciliation` (an override `{ webhook: { acceptUnsigned: true } }` keeps the
 * variables' webhook settings). The route's `path` and `decorators` belong beside `name` in
 * `forRootAsync`, not in the factory's result: the route is fixed when the module is defined.
 *
 * The result is validated here, so that a problem names the variable to fix:
 * `PAYMENTS_PUBLIC_KEY (publicKey)` rather than `publicKey`.
 *
 * @param config `ConfigService` or any `{ get(key) }`
 * @param overrides options set in code (e.g. `store`, `logger`, `telemetry`); default none
 * @param settings `prefix`: another account's variables (`PAYMENTS_OUTLET_`); default `PAYMENTS_`
 * @throws PaymentsValidationError naming each invalid option and the variable it came from
 */
export function paymentsOptionsFromConfig(
  config: PaymentsConfigReader,
  overrides: Partial<PaymentsModuleOptions> = {},
  settings: PaymentsConfigSettings = {},
): PaymentsModuleOptions {
  const prefix = settings.prefix ?? DEFAULT_PREFIX;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix)) {
    throw new PaymentsValidationError(
      [{ field: 'prefix', messages: ['must be letters, digits and _, such as PAYMENTS_OUTLET_'] }],
      'paymentsOptionsFromConfig',
    );
  }
  const sources = SOURCES.map((source) => ({
    ...source,
    variable: prefix + source.variable.slice(DEFAULT_PREFIX.length),
  }));
  // Every set variable lands at its option path (`webhook.secret` -> { webhook: { secret } }).
  const fromEnv: Record<string, unknown> = {};
  const webhook: Record<string, unknown> = {};
  const reconciliation: Record<string, unknown> = {};
  const groups: Readonly<Record<string, Record<string, unknown>>> = { webhook, reconciliation };
  for (const { variable, option, read } of sources) {
    const value = read(config, variable);
    if (value === undefined) continue;
    const [group, key] = option.split('.');
    if (key === undefined) fromEnv[group] = value;
    else groups[group][key] = value;
  }

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
      error.fields.map((f) => withVariable(f, overrides, sources)),
      'payments options from the environment',
    );
  }
  return options;
}

// An option set in code keeps its name; one read (or missing) from the environment is named by
// its variable, which is what the operator has to fix.
function withVariable(
  field: PaymentsFieldError,
  overrides: Partial<PaymentsModuleOptions>,
  sources: readonly VariableSource[],
): PaymentsFieldError {
  // An item of a list (`webhook.previousSecrets[1]`) comes from the list's variable.
  const option = field.field.replace(/\[\d+\]$/, '');
  const variable = sources.find((source) => source.option === option)?.variable;
  if (variable === undefined || valueAt(overrides, option) !== undefined) return field;
  return { field: `${variable} (${field.field})`, messages: field.messages };
}

function valueAt(object: object, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>(
      (o, key) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined),
      object,
    );
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
