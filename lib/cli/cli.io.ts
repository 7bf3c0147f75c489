import { SYSTEM_CLOCK, type Clock } from '../core/index.js';

/** Where a command writes, and the environment it reads; the process's own by default, replaceable in tests. */
export interface CliIo {
  /** Receives results (the doctor's lines, a payment, a list). */
  readonly stdout: { write(text: string): unknown };
  /** Receives errors and usage after a usage error. */
  readonly stderr: { write(text: string): unknown };
  /** The variables the commands read (`PAYMENTS_*`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Emits `SIGINT` / `SIGTERM` (the sandbox command runs until one). */
  readonly signals: {
    once(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
    off(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  };
  /** The time (a migration's timestamp). */
  readonly clock: Pick<Clock, 'now'>;
}

/** The running process's streams, environment and signals. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, signals: process, clock: SYSTEM_CLOCK };
}

/** A command line that cannot be run; its message says why. */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}

// C0 and C1 controls, DEL, and the Unicode line and paragraph separators: a value from the store
// or the service must not move the cursor, forge a line or recolour the terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** A value from outside (store, service, URL) made safe to print on one line: control characters become `?`. */
export function printable(value: unknown): string {
  return String(value).replace(CONTROL, '?');
}

/** A URL shown without its user name, password, query or fragment (they may hold credentials). */
export function safeUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
