/**
 * The report of `nestjs-payments doctor`: what a check found, how checks are named, and the small
 * helpers every check builds its line with.
 */
import { printable } from './cli.io.js';

/** What a check found: passed, failed, or did not apply (not configured, not asked for). */
export type DoctorStatus = 'ok' | 'fail' | 'skip';

/** The checks, in the order they run and print. */
export type DoctorCheckId = 'variables' | 'baseUrl' | 'keys' | 'webhookUrl' | 'secret' | 'store' | 'probe';

/** One line of the report. */
export interface DoctorCheck {
  /** Which check. */
  readonly id: DoctorCheckId;
  /** Its outcome. */
  readonly status: DoctorStatus;
  /** What was found, one line, free of secrets. */
  readonly message: string;
  /** What to do about a failure. */
  readonly fix?: string;
}

/** The whole report, as `--json` prints it. */
export interface DoctorReport {
  /** True when no check failed. */
  readonly ok: boolean;
  /** Every check, in order. */
  readonly checks: readonly DoctorCheck[];
}

/** Options of {@link runDoctor}. */
export interface DoctorOptions {
  /** Send a signed probe to the webhook public URL. */
  readonly probe: boolean;
}

/** How each check is named in the report. */
export const LABELS: Readonly<Record<DoctorCheckId, string>> = {
  variables: 'variables',
  baseUrl: 'base URL',
  keys: 'keys',
  webhookUrl: 'webhook URL',
  secret: 'webhook secret',
  store: 'store',
  probe: 'webhook probe',
};

/** Longest wait for one HTTP answer or store operation of a check. */
export const CHECK_TIMEOUT_MS = 10_000;

/** Whether a URL's host is this machine: plain HTTP is then acceptable (a local sandbox). */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Why a fetch() failed, short: `ECONNREFUSED`, `timed out after 10000 ms`, ... */
export function fetchFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return `timed out after ${timeoutMs} ms`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const text =
    typeof cause?.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error);
  return printable(code && !text.includes(code) ? `${code}: ${text}` : text).slice(0, 200);
}

/** Rejects when `promise` has not settled within `ms`, naming `what`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A passed check. */
export const ok = (id: DoctorCheckId, message: string): DoctorCheck => ({ id, status: 'ok', message });
/** A failed check, with its fix. */
export const fail = (id: DoctorCheckId, message: string, fix: string): DoctorCheck => ({
  id,
  status: 'fail',
  message,
  fix,
});
/** A check that did not apply. */
export const skip = (id: DoctorCheckId, message: string): DoctorCheck => ({ id, status: 'skip', message });
