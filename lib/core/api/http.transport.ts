// The only place that talks HTTP to the service, and the one decision of when it may send a
// request again (the transport that retries holds its rule): first the retry decision, pure and
// table-tested, then the per-attempt deadline, the failure's reading and the transport itself.
import http from 'node:http';
import https from 'node:https';
import axios, {
  type AxiosAdapter,
  type GenericAbortSignal,
  type AxiosRequestHeaders,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';
import { PaymentsConnectionError, type PaymentsOperation } from './payments.errors.js';
import type { PaymentsLogger } from '../common/index.js';
import { parseJson, type RawResponse } from './wire.mapper.js';
import { SecretRedactor } from './secret.redactor.js';
import { SYSTEM_CLOCK, type Clock, type ClockTimer } from '../time/index.js';

/**
 * When a request to the service may be sent again: the one retry decision, pure so that a table
 * test can pin it down. A GET changes nothing at the service, so it is retried on network
 * errors, 429 and 5xx. A POST (payment, refund, capture, cancel) is retried only when it surely
 * never reached the service: a second refund must never be risked.
 */
export type AttemptResult =
  /** An answer came back with this HTTP status. */
  | { status: number }
  /** No answer: `neverSent` when the failure happened before a byte was sent (connection refused, DNS). */
  | { error: string; neverSent: boolean; tooLarge?: boolean };

/**
 * @param method the request's method
 * @param result what the attempt produced
 * @returns whether another attempt is safe and useful (the caller also checks the attempt budget
 *   and {@link retryDelay})
 */
export function isRetryable(method: 'GET' | 'POST', result: AttemptResult): boolean {
  if ('status' in result) return method === 'GET' && (result.status === 429 || result.status >= 500);
  // A too-large answer will be as large next time.
  if (result.tooLarge) return false;
  return method === 'GET' || result.neverSent;
}

const BASE_DELAY_MS = 100;
/** Longest wait between two attempts of one call. */
export const MAX_RETRY_WAIT_MS = 5_000;
/** Longest `Retry-After` taken into account, in seconds. */
const MAX_RETRY_AFTER_SECS = 3_600;

/**
 * Exponential backoff with "equal jitter" (half fixed, half random), capped at {@link MAX_RETRY_WAIT_MS}.
 * @param attempt the attempt that just failed (1 for the first)
 * @param random the jitter's source, uniform in [0, 1) (default `Math.random`; a seeded one replays)
 */
export function backoff(attempt: number, random: () => number = Math.random): number {
  const exp = Math.min(MAX_RETRY_WAIT_MS, BASE_DELAY_MS * 2 ** (attempt - 1));
  return exp / 2 + random() * (exp / 2);
}

/**
 * How long to wait before the next attempt of a retryable call: the backoff, or what the
 * service asked (`Retry-After`) when that is longer. Undefined when the service asked for more
 * than {@link MAX_RETRY_WAIT_MS}: the call then ends at once with the answer (`RATE_LIMITED` and
 * its `retryAfterSecs` for a 429), since waiting less would spend a call the service said it will
 * refuse, and waiting that long would hold a webhook or a return page.
 *
 * @param attempt the attempt that just failed (1 for the first)
 * @param retryAfter seconds the service asked to wait, if it said
 * @param random the jitter's source (see {@link backoff})
 */
export function retryDelay(
  attempt: number,
  retryAfter?: number,
  random: () => number = Math.random,
): number | undefined {
  const askedMs = (retryAfter ?? 0) * 1000;
  if (askedMs > MAX_RETRY_WAIT_MS) return undefined;
  return Math.max(backoff(attempt, random), askedMs);
}

/**
 * Seconds of a `Retry-After` header, given in seconds or as an HTTP date (at most an hour);
 * undefined when absent, malformed, or not in the future.
 *
 * @param header the header's value
 * @param now the current time in ms (for an HTTP date)
 */
export function retryAfterSecs(header: unknown, now = Date.now()): number | undefined {
  if (typeof header !== 'string' || header.trim() === '') return undefined;
  const text = header.trim();
  const seconds = /^[0-9]+$/.test(text) ? Number(text) : Math.ceil((Date.parse(text) - now) / 1000);
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, MAX_RETRY_AFTER_SECS) : undefined;
}

/**
 * The retry decision as the transport is handed it by the client's composition root: whether an
 * attempt may be repeated, and how long to wait before it.
 */
export interface RetryPolicy {
  /** See {@link isRetryable}. */
  isRetryable: typeof isRetryable;
  /** See {@link backoff}. */
  backoff: typeof backoff;
  /** See {@link retryDelay}. */
  retryDelay: typeof retryDelay;
}

/** The plugin's retry policy: never risk a double refund (docs/confirmations.md, "Retries, only where a repeat cannot do harm"). */
export const RETRY_POLICY: RetryPolicy = Object.freeze({ isRetryable, backoff, retryDelay });

// Errors raised before a single byte reached the service: a POST may be sent again safely.
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL', 'ENETUNREACH', 'EHOSTUNREACH']);
const TIMEOUTS = new Set(['ETIMEDOUT', 'ECONNABORTED']);

/**
 * A deadline for one attempt (connect, headers and body), given to axios' http adapter as its
 * signal: the adapter only reads `aborted` and adds and removes one abort listener. An
 * AbortController per attempt is costly to construct and to collect (docs/performance.md).
 */

/** The longest a kept-alive socket stays idle (below Node's and most servers' 5 s). */
const IDLE_SOCKET_MS = 4_000;
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

/** Settings of the transport. */
export interface TransportOptions {
  baseUrl: string;
  publicKey: string;
  privateKey: string;
  timeoutMs: number;
  maxRetries: number;
  logger: PaymentsLogger;
  /** Largest accepted answer, in bytes. Default 1 MiB. */
  maxResponseBytes?: number;
  /** The webhook settings: their secret is cut out of answers too. */
  webhook?: { secret?: string; previousSecrets?: readonly string[] };
  /** Which attempts may be repeated, and after how long (`RETRY_POLICY`, handed in by the client). */
  retry: RetryPolicy;
  /** What deadlines and back-offs are timed on. Default: the system clock. */
  clock?: Clock;
  /**
   * Sends one attempt instead of axios' http adapter: the engine's simulation answers from a model
   * of the service on virtual time. Default: axios' http adapter.
   * @internal
   */
  adapter?: AxiosAdapter;
  /**
   * The back-off's jitter, uniform in [0, 1): the engine's simulation draws it from its seed, so
   * that a history replays. Default: `Math.random`.
   * @internal
   */
  random?: () => number;
}

/** One request to the service. */
export interface TransportRequest {
  operation: PaymentsOperation;
  method: 'GET' | 'POST';
  path: string;
  /** The JSON body, or its text when the caller serialised it already (sent as it is); none for a GET. */
  body?: object | string;
  query?: Record<string, string>;
}

/**
 * The only place that talks HTTP to the service. Drives axios' http adapter with keep-alive agents,
 * never follows redirects (the credentials must not travel to another host), applies a timeout
 * to every attempt, and retries only where a repeat cannot do harm:
 * GET on network errors, 429 and 5xx; POST only when the connection was refused before sending.
 * A `Retry-After` longer than one wait (5 s) ends the call with the answer instead: the caller
 * (a webhook, reconciliation) defers by that much.
 */
export class HttpTransport {
  /**
   * The headers of each method, built once: axios copies them into each request's own, so they are
   * never mutated (for clarity, not speed: an object literal per call costs next to nothing).
   */
  readonly #headers: {
    readonly GET: Readonly<Record<string, string>>;
    readonly POST: Readonly<Record<string, string>>;
  };
  /** Cuts the private key and the webhook secret, in every common encoding, out of every answer. */
  readonly #redactor: SecretRedactor;
  /** axios' Node http adapter, called with one prebuilt config per request (see the constructor). */
  readonly #adapter: AxiosAdapter;
  /** Everything a request's config holds but its method, path, body, headers and deadline. */
  readonly #template: Omit<InternalAxiosRequestConfig, 'headers'>;
  readonly #agents: { http: http.Agent; https: https.Agent };
  readonly #maxRetries: number;
  readonly #logger: PaymentsLogger;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #clock: Clock;
  readonly #random: () => number;
  /** Aborted by close(): no new attempt starts and pending backoffs end at once. */
  readonly #lifetime = new AbortController();

  /** @param options where and how to send */
  constructor(options: TransportOptions) {
    this.#retry = options.retry;
    const authorization = `Bearer ${options.publicKey}:${options.privateKey}`;
    this.#headers = {
      GET: { Authorization: authorization, Accept: 'application/json' },
      POST: { Authorization: authorization, Accept: 'application/json', 'Content-Type': 'application/json' },
    };
    // The forms are built once per client; each answer then costs one scan (secret.redactor.ts).
    const { privateKey, publicKey, webhook } = options;
    this.#redactor = new SecretRedactor({
      privateKey,
      publicKey,
      webhookSecret: webhook?.secret,
      previousWebhookSecrets: webhook?.previousSecrets,
    });
    this.#maxRetries = options.maxRetries;
    this.#logger = options.logger;
    this.#timeoutMs = options.timeoutMs;
    // An idle kept-alive socket is dropped a second before the timeout the server announces
    // (`Keep-Alive: timeout=N`; Node's agent reads the hint only when it has a timeout of its own),
    // and after IDLE_SOCKET_MS at most: a socket the server closed while the event loop was busy
    // would take the next request and fail it (ECONNRESET), and a POST is never sent twice.
    this.#agents = {
      http: new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
      https: new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
    };
    const maxBytes = options.maxResponseBytes ?? 1024 * 1024;
    // axios is driven through its http adapter with one prebuilt config, each request's config an
    // object whose prototype is that template (the adapter reads inherited members of a template by
    // design). Going through `instance.request()` instead merges the defaults into every call's
    // config, runs the interceptor chain and the transforms, and re-normalises the headers: more
    // CPU per call than everything else the plugin does for a verifyPayment (docs/performance.md).
    this.#adapter = options.adapter ?? axios.getAdapter('http');
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#random = options.random ?? Math.random;
    // The credentials are added per request, not to the template: it is easy to inspect or log,
    // and would carry the private key along.
    this.#template = {
      baseURL: options.baseUrl,
      // No axios `timeout`: it is a socket idle timer (re-armed on every chunk) that the
      // per-attempt deadline in send() makes redundant.
      maxRedirects: 0,
      validateStatus: () => true,
      // The body is serialised once, by send(), and parsed once, by the redactor's answer(): no
      // transforms run here (axios' default ones would serialise and parse again, at several times
      // the cost of JSON.stringify and JSON.parse: docs/performance.md).
      responseType: 'text',
      transitional: { clarifyTimeoutError: true, silentJSONParsing: true, forcedJSONParsing: false },
      httpAgent: this.#agents.http,
      httpsAgent: this.#agents.https,
      // axios looks the proxy variables up on every request; when none is set at start-up, saying
      // so once spares that (one set later then takes a restart, like every other setting).
      proxy: proxyConfigured() ? undefined : false,
      maxContentLength: maxBytes,
      maxBodyLength: maxBytes,
      decompress: true,
    };
  }

  /**
   * Sends a request, with the retries allowed for its method.
   * @param stats when given, receives the number of attempts made
   * @returns the final answer's status and raw body (any status: the caller interprets it)
   * @throws PaymentsConnectionError when no usable answer came back
   */
  async send(request: TransportRequest, stats?: { attempts: number }): Promise<RawResponse> {
    const headers = this.#headers[request.method];
    const body = request.body;
    const data = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);

    for (let attempt = 1; ; attempt++) {
      if (this.#lifetime.signal.aborted) throw this.#closedError(request, attempt - 1);
      if (stats) stats.attempts = attempt; // for the call's span (telemetry.otel.ts)
      // A deadline for the whole attempt (connect, headers and body). axios' own `timeout` is a
      // socket idle timer: an answer trickling in byte by byte would never trip it.
      const deadline = new AttemptDeadline(this.#timeoutMs, this.#clock);
      const config = Object.create(this.#template) as InternalAxiosRequestConfig;
      config.method = request.method;
      config.url = request.path;
      if (request.query !== undefined) config.params = request.query;
      config.data = data;
      // A plain object: the adapter copies it into headers of its own before adding to them.
      config.headers = headers as unknown as AxiosRequestHeaders;
      config.signal = deadline;
      let response: AxiosResponse<unknown>;
      try {
        response = await this.#adapter(config);
      } catch (error) {
        const failure = classify(error, deadline.aborted);
        if (
          attempt <= this.#maxRetries &&
          this.#retry.isRetryable(request.method, failure) &&
          !this.#lifetime.signal.aborted
        ) {
          this.#logger.log(`${request.operation}: ${failure.error}, retrying (attempt ${attempt + 1})`);
          await this.#pause(this.#retry.backoff(attempt, this.#random));
          continue;
        }
        throw new PaymentsConnectionError({
          operation: request.operation,
          code: failure.timeout ? 'TIMEOUT' : 'CONNECTION_FAILED',
          mayHaveBeenProcessed: request.method === 'POST' && !failure.neverSent,
          attempts: attempt,
          reason: failure.timeout
            ? `no answer within ${this.#timeoutMs} ms`
            : this.#lifetime.signal.aborted
              ? 'the client was closed'
              : failure.error,
        });
      } finally {
        deadline.clear();
      }
      const status = response.status;
      const waitSecs = retryAfterSecs(response.headers['retry-after'], this.#clock.now());
      if (
        attempt <= this.#maxRetries &&
        this.#retry.isRetryable(request.method, { status }) &&
        !this.#lifetime.signal.aborted
      ) {
        const wait = this.#retry.retryDelay(attempt, waitSecs, this.#random);
        if (wait !== undefined) {
          this.#logger.log(`${request.operation}: HTTP ${status}, retrying (attempt ${attempt + 1})`);
          await this.#pause(wait);
          continue;
        }
        // The service asked for a longer wait than a call may take: answer now with what it asked
        // (a 429 becomes RATE_LIMITED with retryAfterSecs) rather than spend an attempt it refuses.
        this.#logger.log(
          `${request.operation}: HTTP ${status} with Retry-After ${waitSecs} s: not retried within this call`,
        );
      }
      // A service (or a proxy in front of it) echoing the request's headers must not put a secret into
      // an error, an excerpt, a verify answer's details or a log line: cut out here, parsed once.
      const { body, json } = this.#redactor.answer(
        typeof response.data === 'string' ? response.data : String(response.data ?? ''),
        parseJson,
        status,
      );
      const answer: RawResponse = { status, body, json };
      if (waitSecs !== undefined) answer.retryAfterSecs = waitSecs;
      return answer;
    }
  }

  /**
   * Closes the keep-alive sockets so the process can exit. Calls in flight fail (a POST as "may
   * have been processed"), pending retries are dropped, and no new request is sent.
   */
  /**
   * A text with the private key and the webhook secrets cut out, in every form the answers are
   * searched for (for pages and exports that show what the service or a customer wrote).
   */
  redact(text: string): string {
    return this.#redactor.text(text);
  }

  close(): void {
    this.#lifetime.abort();
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }

  /** Waits before a retry; close() cuts the wait short (the loop then stops). */
  async #pause(ms: number): Promise<void> {
    const lifetime = this.#lifetime.signal;
    if (lifetime.aborted) return;
    // Aborted by close(): the wait ends at once and the next loop turn reports it.
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.#clock.clearTimeout(timer);
        lifetime.removeEventListener('abort', done);
        resolve();
      };
      // Kept alive: the caller awaits this back-off (a script would otherwise exit mid-retry).
      const timer = this.#clock.setTimeout(done, ms, true);
      lifetime.addEventListener('abort', done, { once: true });
    });
  }

  // Only reached before an attempt: the request was never sent (again), and the earlier attempts
  // of a POST were only retried because they surely never reached the service.
  #closedError(request: TransportRequest, attempts: number): PaymentsConnectionError {
    return new PaymentsConnectionError({
      operation: request.operation,
      code: 'CONNECTION_FAILED',
      mayHaveBeenProcessed: false,
      attempts,
      reason: 'the client was closed',
    });
  }
}

/** Whether a proxy variable axios would honour (http_proxy, https_proxy, all_proxy; any case) is set. */
function proxyConfigured(): boolean {
  return ['http_proxy', 'https_proxy', 'all_proxy'].some((name) =>
    Boolean(process.env[name] || process.env[name.toUpperCase()]),
  );
}
