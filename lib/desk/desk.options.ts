import type { PaymentsClient } from '../core/client/index.js';
import type { PaymentsLogger } from '../core/common/index.js';

/**
 * Who is using the desk, as the host's authentication names them: an id (a user id, an email), or
 * an id and a name to show. The id ties the desk's form tokens to this person and is written in
 * the log line of every action.
 */
export type DeskPrincipal =
  | string
  | {
      /** The person's id: ties the form tokens to them, and is logged with each action. */
      id: string;
      /** The name shown on the pages. Default: the id. */
      name?: string;
    };

/**
 * What an `authorize` callback answers: a {@link DeskPrincipal} lets the request in; `undefined`
 * or `null` means not signed in (401); `false` means signed in but not allowed (403).
 */
export type DeskAuthorization = DeskPrincipal | undefined | null | false;

/** What the desk shares between Express and Nest. */
export interface PaymentsDeskBaseOptions {
  /**
   * The key of the desk's form tokens (CSRF), at least 32 characters. Default: 32 random bytes
   * drawn when the desk is built, so a form served by one instance is refused by another (and
   * after a restart: the page is reloaded). Behind a load balancer without sticky sessions, give
   * every instance the same value (a secret of its own, not the service's keys).
   */
  formKey?: string;
  /** How long a page's forms can be sent, in seconds. Default 7200 (two hours). */
  formTtlSecs?: number;
  /** Rows shown per list on the overview. Default 20. */
  listSize?: number;
  /**
   * Records read at most per list to count it (the store is read page by page, 500 a page).
   * Default 5000: a larger count is shown as "5000+".
   */
  scanLimit?: number;
  /**
   * How long a "mark reviewed" is kept, in seconds (in the store, through its binding port). Past
   * it, a payment that still needs a person is back in its list. Default 2592000 (30 days).
   */
  reviewRetentionSecs?: number;
  /**
   * Where each action is written, with who did it (`log`) and what it failed on (`warn`).
   * Default for Express: one line on stdout per action; for Nest: Nest's `Logger` with context `PaymentsDesk`.
   */
  logger?: PaymentsLogger;
}

/** Options of {@link createPaymentsDesk}. */
export interface PaymentsDeskOptions<R = unknown> extends PaymentsDeskBaseOptions {
  /** The client whose store and service the desk reads and acts on. */
  client: PaymentsClient;
  /**
   * The host's check of every request, pages and actions alike (required: the desk refuses to be
   * built without it). Answer the person's {@link DeskPrincipal} to let them in, `undefined` or
   * `null` for 401 (not signed in), `false` for 403 (not allowed). A throw answers 500.
   */
  authorize: (request: R) => DeskAuthorization | Promise<DeskAuthorization>;
}

/** The options every part of the desk reads, with their defaults applied. */
export interface ResolvedDeskOptions {
  /** See {@link PaymentsDeskBaseOptions.formKey}. */
  readonly formKey: Buffer;
  /** In ms. */
  readonly formTtlMs: number;
  /** See {@link PaymentsDeskBaseOptions.listSize}. */
  readonly listSize: number;
  /** See {@link PaymentsDeskBaseOptions.scanLimit}. */
  readonly scanLimit: number;
  /** See {@link PaymentsDeskBaseOptions.reviewRetentionSecs}; in ms. */
  readonly reviewRetentionMs: number;
  /** See {@link PaymentsDeskBaseOptions.logger}. */
  readonly logger: PaymentsLogger;
}

/** Reviews are kept 30 days by default. */
const DEFAULT_REVIEW_RETENTION_SECS = 30 * 24 * 3600;

/** Form tokens expire after two hours by default. */
const DEFAULT_FORM_TTL_SECS = 7200;

function positiveInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new TypeError(`nestjs-payments desk: ${name} must be a positive integer`);
  return value;
}

/**
 * The options with their defaults; `random` draws the form key when none is given.
 * @throws TypeError naming the option that is wrong
 */
export function resolveDeskOptions(
  options: PaymentsDeskBaseOptions,
  random: (bytes: number) => Buffer,
  defaultLogger: PaymentsLogger,
): ResolvedDeskOptions {
  const { formKey } = options;
  if (formKey !== undefined && (typeof formKey !== 'string' || formKey.length < 32))
    throw new TypeError('nestjs-payments desk: formKey must be a string of at least 32 characters');
  return {
    formKey: formKey === undefined ? random(32) : Buffer.from(formKey, 'utf8'),
    formTtlMs: positiveInteger(options.formTtlSecs, 'formTtlSecs', DEFAULT_FORM_TTL_SECS) * 1000,
    listSize: positiveInteger(options.listSize, 'listSize', 20),
    scanLimit: positiveInteger(options.scanLimit, 'scanLimit', 5000),
    reviewRetentionMs:
      positiveInteger(options.reviewRetentionSecs, 'reviewRetentionSecs', DEFAULT_REVIEW_RETENTION_SECS) * 1000,
    logger: options.logger ?? defaultLogger,
  };
}

/** The id and the name to show of a principal. */
export function principalOf(principal: DeskPrincipal): { id: string; name: string } {
  return typeof principal === 'string'
    ? { id: principal, name: principal }
    : { id: principal.id, name: principal.name ?? principal.id };
}

/** Whether `value` is a usable {@link DeskPrincipal} (a non-empty id). */
export function isPrincipal(value: unknown): value is DeskPrincipal {
  if (typeof value === 'string') return value.length > 0;
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { id?: unknown }).id === 'string' &&
    (value as { id: string }).id.length > 0
  );
}
