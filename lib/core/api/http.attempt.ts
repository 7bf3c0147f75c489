import type { GenericAbortSignal } from 'axios';
import type { Clock, ClockTimer } from '../time/index.js';

// Errors raised before a single byte reached the service: a POST may be sent again safely.
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL', 'ENETUNREACH', 'EHOSTUNREACH']);
const TIMEOUTS = new Set(['ETIMEDOUT', 'ECONNABORTED']);

/**
 * A deadline for one attempt (connect, headers and body), given to axios' http adapter as its
 * signal: the adapter only reads `aborted` and adds and removes one abort listener. An
 * AbortController per attempt is costly to construct and to collect (docs/performance.md).
 */
export class AttemptDeadline implements GenericAbortSignal {
  aborted = false;
  #listener: (() => void) | undefined;
  readonly #timer: ClockTimer;

  /**
   * @param ms how long the attempt may take
   * @param clock what it is timed on
   */
  constructor(
    ms: number,
    private readonly clock: Clock,
  ) {
    this.#timer = clock.setTimeout(() => {
      this.aborted = true;
      const listener = this.#listener;
      this.#listener = undefined;
      listener?.();
    }, ms);
  }

  /** Remembers the adapter's abort listener (the only one it adds). */
  addEventListener(type: string, listener: () => void): void {
    if (type === 'abort') this.#listener = listener;
  }

  /** Forgets the listener once the attempt is over. */
  removeEventListener(type: string, listener: () => void): void {
    if (type === 'abort' && this.#listener === listener) this.#listener = undefined;
  }

  /** Stops the timer (the attempt ended first). */
  clear(): void {
    this.clock.clearTimeout(this.#timer);
  }
}

/** How an attempt that got no answer failed. */
export interface Failure {
  /** What went wrong, for the log and the error's reason. */
  error: string;
  /** Whether it ran out of time. */
  timeout: boolean;
  /** Whether it surely never reached the service (a POST may then be sent again). */
  neverSent: boolean;
  /** Whether the answer was over the size limit. */
  tooLarge: boolean;
}

/** What an attempt's error says: a timeout, never sent, too large. */
export function classify(error: unknown, deadlinePassed: boolean): Failure {
  const code = (error as { code?: unknown })?.code;
  const text = typeof code === 'string' ? code : '';
  const tooLarge = error instanceof Error && /maxContentLength|maxBodyLength/.test(error.message);
  return {
    error: tooLarge
      ? 'answer larger than the 1 MiB limit'
      : text || (error instanceof Error ? error.message : 'unknown error'),
    timeout: deadlinePassed || TIMEOUTS.has(text),
    neverSent: NEVER_SENT.has(text),
    tooLarge,
  };
}
