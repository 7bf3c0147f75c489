/**
 * The CLI's configuration: the `PAYMENTS_*` variables read exactly as the Nest module reads them
 * (`paymentsOptionsFromConfig`, one list of names for both), plus the two store variables only
 * the CLI reads (the module takes its store in code).
 */
import {
  PaymentsValidationError,
  type PaymentsFieldError,
  type PaymentsLogger,
  type PaymentsOptions,
  type PaymentsStore,
} from '../core/index.js';
import { PAYMENTS_ENV, paymentsOptionsFromConfig, type PaymentsConfigReader } from '../nest/payments.config.js';
import type { PaymentsModuleOptions } from '../nest/payments.module-options.js';
import { printable, safeUrl } from './cli.io.js';

/**
 * The store variables of the CLI (`doctor` checks the store answers, `outcomes` reads it). The
 * module has none: an app passes its store in code, so these must name the same server the app
 * uses. The store's default key prefix (Redis) and table names (PostgreSQL) are assumed.
 */
export const CLI_STORE_ENV = Object.freeze({
  /** A Redis URL, e.g. `redis://127.0.0.1:6379`: the app's `RedisPaymentsStore`. */
  redisUrl: 'PAYMENTS_REDIS_URL',
  /** A PostgreSQL connection string, e.g. `postgres://user:password@host:5432/shop`: the app's `PostgresPaymentsStore`. */
  databaseUrl: 'PAYMENTS_DATABASE_URL',
} as const);

/** The variables of the connection to the service alone: enough to call it, whatever the rest says. */
const CONNECTION_VARIABLES: readonly string[] = [
  PAYMENTS_ENV.publicKey,
  PAYMENTS_ENV.privateKey,
  PAYMENTS_ENV.baseUrl,
  PAYMENTS_ENV.timeoutMs,
  PAYMENTS_ENV.maxRetries,
];

/** What the CLI makes of the environment. */
export interface CliConfig {
  /** Every option, when every variable is valid. */
  readonly options?: PaymentsOptions;
  /** The problems of the variables, each naming its variable: `PAYMENTS_WEBHOOK_SECRET (webhook.secret)`. */
  readonly problems: readonly PaymentsFieldError[];
  /** The options of the connection alone (keys, base URL, timeout, retries), when those variables are valid. */
  readonly connection?: PaymentsOptions;
  /** The problems of the connection variables alone. */
  readonly connectionProblems: readonly PaymentsFieldError[];
}

/** Reads `process.env`-like variables as `ConfigService` would (an empty value is unset). */
function reader(env: Readonly<Record<string, string | undefined>>, only?: readonly string[]): PaymentsConfigReader {
  return { get: (key) => (only === undefined || only.includes(key) ? env[key] : undefined) };
}

// The CLI runs one-shot commands: no reconciliation, no telemetry, and its own logger.
function forCli(options: PaymentsModuleOptions, logger: PaymentsLogger): PaymentsOptions {
  const { webhook, ...rest } = options;
  const result: PaymentsOptions = { ...rest, reconciliation: { enabled: false }, telemetry: false, logger };
  if (webhook) {
    const { decorators: _decorators, ...coreWebhook } = webhook;
    result.webhook = coreWebhook;
  }
  return result;
}

function attempt(
  config: PaymentsConfigReader,
  logger: PaymentsLogger,
): { options?: PaymentsOptions; problems: PaymentsFieldError[] } {
  try {
    return { options: forCli(paymentsOptionsFromConfig(config), logger), problems: [] };
  } catch (error) {
    if (error instanceof PaymentsValidationError) return { problems: [...error.fields] };
    throw error;
  }
}

/**
 * Reads the `PAYMENTS_*` variables through `paymentsOptionsFromConfig`, as the module does.
 * @param logger the logger the client built from these options will use
 */
export function readCliConfig(env: Readonly<Record<string, string | undefined>>, logger: PaymentsLogger): CliConfig {
  const full = attempt(reader(env), logger);
  const connection = full.options ? full : attempt(reader(env, CONNECTION_VARIABLES), logger);
  return {
    options: full.options,
    problems: full.problems,
    connection: connection.options,
    connectionProblems: connection.problems,
  };
}

/** The variable a problem names (`PAYMENTS_X (option)` -> `PAYMENTS_X`), or undefined for an option set in code. */
export function problemVariable(problem: PaymentsFieldError): string | undefined {
  return /^(PAYMENTS_[A-Z0-9_]+) \(/.exec(problem.field)?.[1];
}

/** One line per problem: `PAYMENTS_X (option) must ...; ...`. */
export function describeProblem(problem: PaymentsFieldError): string {
  return `${problem.field} ${problem.messages.join('; ')}`;
}

/** A logger that keeps quiet: the commands report what matters themselves, on their own lines. */
export const QUIET_LOGGER: PaymentsLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** The client package each store loads: what to install when it is missing. */
export const STORE_CLIENT_PACKAGES = Object.freeze({ Redis: 'ioredis', PostgreSQL: 'pg' } as const);

/**
 * The store's client package is not installed: one line naming the variable that asked for the
 * store and the package to install (the loader's own message has a require stack).
 */
export class CliStoreClientMissingError extends Error {
  /**
   * @param variable the store variable that names the store
   * @param packageName the client package that could not be loaded (`ioredis` or `pg`)
   */
  constructor(
    readonly variable: string,
    readonly packageName: string,
  ) {
    super(`${variable} needs the package ${packageName}, which is not installed here: npm install ${packageName}`);
    this.name = 'CliStoreClientMissingError';
  }
}

/**
 * Whether an error of loading a store's entry says that the package `name` itself is missing
 * (CommonJS `MODULE_NOT_FOUND`, ES modules `ERR_MODULE_NOT_FOUND`), not a file inside it or
 * another package it needs.
 */
export function isMissingPackage(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false;
  const first = (error instanceof Error ? error.message : '').split('\n')[0] ?? '';
  return first.startsWith(`Cannot find module '${name}'`) || first.startsWith(`Cannot find package '${name}'`);
}

/**
 * The error as a missing client package of that store (its entry may load the package at once
 * or on first use), or undefined when it is something else.
 */
export function storeClientMissing(
  source: Pick<CliStoreSource, 'kind' | 'variable'>,
  error: unknown,
): CliStoreClientMissingError | undefined {
  if (error instanceof CliStoreClientMissingError) return error;
  const name = STORE_CLIENT_PACKAGES[source.kind];
  return isMissingPackage(error, name) ? new CliStoreClientMissingError(source.variable, name) : undefined;
}

/** A store named by a CLI variable, not opened yet. */
export interface CliStoreSource {
  /** `Redis` or `PostgreSQL`. */
  readonly kind: 'Redis' | 'PostgreSQL';
  /** The variable it came from. */
  readonly variable: string;
  /** Where it is, without credentials. */
  readonly where: string;
  /** Creates the store (loading `ioredis` or `pg`, see {@link storeClientMissing}): the caller closes it. */
  open(): Promise<PaymentsStore>;
}

// One-shot commands: a store that is down must fail the command at once, not be waited for
// (the stores' own defaults favour a long-running app riding out short outages).
const REDIS_ONE_SHOT = { maxRetriesPerRequest: 0, retryStrategy: (): null => null, connectTimeout: 3000 };

/** The stores the variables name (none, one or both). */
export function storeSources(
  env: Readonly<Record<string, string | undefined>>,
  logger: PaymentsLogger,
): CliStoreSource[] {
  const sources: CliStoreSource[] = [];
  const redisUrl = env[CLI_STORE_ENV.redisUrl];
  if (redisUrl) {
    sources.push({
      kind: 'Redis',
      variable: CLI_STORE_ENV.redisUrl,
      where: printable(safeUrl(redisUrl)),
      open: async () => {
        const { RedisPaymentsStore } = await import('../redis/index.js');
        return new RedisPaymentsStore(redisUrl, { logger, redisOptions: REDIS_ONE_SHOT, operationTimeoutMs: 3000 });
      },
    });
  }
  const databaseUrl = env[CLI_STORE_ENV.databaseUrl];
  if (databaseUrl) {
    sources.push({
      kind: 'PostgreSQL',
      variable: CLI_STORE_ENV.databaseUrl,
      where: printable(safeUrl(databaseUrl)),
      open: async () => {
        const { PostgresPaymentsStore } = await import('../postgres/index.js');
        // createTables off: a check must not change the database.
        return new PostgresPaymentsStore(databaseUrl, { logger, createTables: false, operationTimeoutMs: 3000 });
      },
    });
  }
  return sources;
}
