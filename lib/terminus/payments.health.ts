import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import type { PaymentsClient } from '../core/client/index.js';
import { countOverdueOutcomes } from '../core/index.js';
import { asHealthProbe, TelemetryApiLoader } from '../core/telemetry/index.js';
import { getPaymentsClientToken } from '../nest/payments.tokens.js';

/** Options of {@link PaymentsHealthIndicator.isHealthy}. */
export interface PaymentsHealthCheckOptions {
  /**
   * Also check that the service answers and accepts the keys, with one cheap read
   * (`GET /api/v2/bindings/list` of a made-up customer id), at most once per `serviceCacheSecs`.
   * Default false: the store only.
   */
  checkService?: boolean;
  /** How long the service check's result (up or down) is reused, in seconds. Default 60. */
  serviceCacheSecs?: number;
  /** Time limit of each check, in ms. Default 3000. */
  timeoutMs?: number;
  /** The registration to check (its `name`); default the unnamed one. */
  registration?: string;
  /**
   * Payments whose outcome is overdue (still unknown after reconciliation's fast checks, so in its
   * slow lane or given up: their outcome record's `lastError` starts with `overdue:` or
   * `abandoned:`) tolerated before the result says `outcomes: 'degraded'`, with their count in
   * `overdue`. Counting reads the store's pending records (at most 10 pages of 500); `false`
   * skips it. Default 0: any overdue payment degrades the result.
   */
  maxOverdue?: number | false;
  /**
   * Whether degraded outcomes make the result `down`. Default false: a payment service outage
   * degrades every instance alike, and a readiness probe that took them all out would not help.
   */
  downWhenOverdue?: boolean;
}

/** The customer id the service check lists the bindings of: no customer has it. */
export const HEALTH_PROBE_CLIENT_ID = 'nestjs-payments-health-probe';

interface ServiceCheck {
  expiresAt: number;
  result: Promise<{ up: boolean; reason?: string; checkedAt: string }>;
}

/**
 * A health indicator for `@nestjs/terminus` (11 and 12): is the plugin's store reachable (its
 * `ping()`, or a `countPending()` read when it has none) and, optionally, does the payment service
 * answer and accept the keys. Provide it beside `TerminusModule`:
 *
 * ```ts
 * @Module({ imports: [TerminusModule, PaymentsModule.forRoot(...)], providers: [PaymentsHealthIndicator], controllers: [HealthController] })
 *
 * @Get('health') @HealthCheck()
 * check() {
 *   return this.health.check([() => this.payments.isHealthy('payments', { checkService: true })]);
 * }
 * ```
 *
 * The service check spends no `verify_payment` call (the service's docs warn that repeated
 * verifies are rate-limited): it lists the card bindings of a customer id no one has, a read that
 * touches no payment. Any answer of the service other than refused keys, a server error or no
 * answer at all (an empty list, or 400 "Invalid client_id") means the service is reachable and
 * accepts the keys. Its result is kept for `serviceCacheSecs`, so however often the health
 * endpoint is polled the service sees one call per interval (per registration and indicator:
 * provide it once). Results carry no secret and no error text, only codes.
 *
 * In traces and metrics the probe is a `payments listBindings` call like any other, marked
 * `payments.probe=true` (on its span and its call-duration metric): its expected
 * `error.type=INVALID_CLIENT_ID` is not a failure, and alerts on call errors should exclude it.
 */
@Injectable()
export class PaymentsHealthIndicator {
  /** The last service check of each client (one probe per interval, whatever the polling rate). */
  readonly #serviceChecks = new WeakMap<PaymentsClient, ServiceCheck>();
  /** Finds `@opentelemetry/api`, to mark the probe's calls. */
  readonly #otel = new TelemetryApiLoader();

  /**
   * @param health Terminus' result builder
   * @param moduleRef finds the registration's client
   */
  constructor(
    @Inject(HealthIndicatorService) private readonly health: HealthIndicatorService,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * Checks the store and, with `checkService`, the service.
   * @param key the key of the result, e.g. `'payments'`
   * @param options what to check
   * @returns `up` or `down`, with `store`, `outcomes` (`ok` or `degraded`) and `overdue` (a count,
   *   `>n` past the threshold) unless `maxOverdue` is false, `service` (when checked) and `reason`
   *   (a code) in the data
   */
  async isHealthy<const Key extends string>(
    key: Key,
    options: PaymentsHealthCheckOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    const timeoutMs = options.timeoutMs ?? 3000;
    let client: PaymentsClient;
    try {
      client = this.moduleRef.get<PaymentsClient>(getPaymentsClientToken(options.registration), { strict: false });
    } catch {
      return session.down({ store: 'unknown', reason: 'NO_REGISTRATION' });
    }
    const data: Record<string, string> = {};
    try {
      const store = client.store;
      await withTimeout<unknown>(store.ping ? store.ping() : store.countPending(), timeoutMs);
      data.store = 'up';
    } catch (error) {
      return session.down({ store: 'down', reason: healthReasonOf(error) });
    }
    const maxOverdue = options.maxOverdue ?? 0;
    if (maxOverdue !== false) {
      try {
        const overdue = await withTimeout(countOverdueOutcomes(client.store, maxOverdue), timeoutMs);
        data.overdue = overdue > maxOverdue ? `>${maxOverdue}` : String(overdue);
        data.outcomes = overdue > maxOverdue ? 'degraded' : 'ok';
        if (overdue > maxOverdue && options.downWhenOverdue)
          return session.down({ ...data, reason: 'OUTCOMES_OVERDUE' });
      } catch (error) {
        return session.down({ store: 'down', reason: healthReasonOf(error) });
      }
    }
    if (!options.checkService) return session.up(data);
    const service = await this.#checkService(client, timeoutMs, (options.serviceCacheSecs ?? 60) * 1000);
    data.service = service.up ? 'up' : 'down';
    data.serviceCheckedAt = service.checkedAt;
    if (!service.up) return session.down({ ...data, reason: service.reason ?? 'SERVICE_DOWN' });
    return session.up(data);
  }

  #checkService(
    client: PaymentsClient,
    timeoutMs: number,
    cacheMs: number,
  ): Promise<{ up: boolean; reason?: string; checkedAt: string }> {
    const now = Date.now();
    const cached = this.#serviceChecks.get(client);
    if (cached && cached.expiresAt > now) return cached.result;
    const result = withTimeout(
      asHealthProbe(() => client.listBindings(HEALTH_PROBE_CLIENT_ID), this.#otel),
      timeoutMs,
    ).then(
      () => ({ up: true, checkedAt: new Date().toISOString() }),
      (error: unknown) => {
        const e = error as { code?: unknown; httpStatus?: unknown };
        // The service answered about the made-up customer: reachable, keys accepted.
        const answered =
          e?.code === 'INVALID_CLIENT_ID' ||
          (typeof e?.httpStatus === 'number' &&
            e.httpStatus >= 400 &&
            e.httpStatus < 500 &&
            e.httpStatus !== 401 &&
            e.httpStatus !== 403 &&
            e.httpStatus !== 404 &&
            e.httpStatus !== 429);
        return answered
          ? { up: true, checkedAt: new Date().toISOString() }
          : { up: false, reason: healthReasonOf(error), checkedAt: new Date().toISOString() };
      },
    );
    this.#serviceChecks.set(client, { expiresAt: now + cacheMs, result });
    return result;
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'TIMEOUT' })), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The reason a health check gives for a failure: an error code only (`ECONNREFUSED`, `TIMEOUT`,
 * `NOAUTH`, ...), never a message (health endpoints are often public, and driver messages name
 * hosts and users) nor a class name (which says nothing to an operator). The one rule for every
 * check of the indicator.
 *
 * In order: the error's own `code` (Node's socket codes, the plugin's codes, PostgreSQL's SQLSTATE);
 * that of its `cause` or, for an AggregateError (a host with several addresses), of its first
 * error; a Redis error reply's leading word (`NOAUTH`, `WRONGPASS`, `LOADING`, `READONLY`);
 * `TIMEOUT` for a time-out; `CONNECTION_FAILED` for a client that gave up on a connection it
 * could not make (ioredis's retries per request); else `UNKNOWN_ERROR`.
 */
export function healthReasonOf(error: unknown, depth = 0): string {
  if (error === null || typeof error !== 'object') return 'UNKNOWN_ERROR';
  const e = error as { code?: unknown; cause?: unknown; errors?: unknown; name?: unknown; message?: unknown };
  if (typeof e.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(e.code)) return e.code;
  if (depth < 3) {
    const inner: unknown = e.cause ?? (Array.isArray(e.errors) ? (e.errors as unknown[])[0] : undefined);
    if (inner !== undefined) {
      const code = healthReasonOf(inner, depth + 1);
      if (code !== 'UNKNOWN_ERROR') return code;
    }
  }
  const message = typeof e.message === 'string' ? e.message : '';
  const name = typeof e.name === 'string' ? e.name : '';
  const reply = name === 'ReplyError' ? /^([A-Z][A-Z_]{2,31})\b/.exec(message) : null;
  if (reply) return reply[1];
  if (/timed out|timeout/i.test(message) || name === 'TimeoutError') return 'TIMEOUT';
  if (
    name === 'MaxRetriesPerRequestError' ||
    /connection is closed|connection terminated|connection refused/i.test(message)
  )
    return 'CONNECTION_FAILED';
  return 'UNKNOWN_ERROR';
}
