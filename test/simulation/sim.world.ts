import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import type { PaymentsLogger } from '../../lib/core/common/payments.logger.js';
import { PaymentEvents, type PaymentEvent, type PaymentEventName } from '../../lib/core/settlement/payment.events.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import { STORE_METHODS, type PaymentsStore, type RateLimiter } from '../../lib/core/store/store.ports.js';
import { ORDER_LEDGER_METHODS, REFUND_LEDGER_METHODS } from '../../lib/core/store/store.ports.js';
import type {
  PaymentsTransaction,
  PaymentsTransactionScope,
  PaymentsTransactionWork,
} from '../../lib/core/store/store.transaction.js';
import type { PaymentsInbox, PaymentsInboxTransaction } from '../../lib/core/store/store.inbox.js';
import type { OrderSettlement } from '../../lib/core/store/store.types.js';
import { InstanceClock, type Random, type VirtualTime } from './sim.time.js';
import { SimDatabase, type SimTransaction } from './sim.transaction.js';

/*
 * The simulated world: a model of the service (its state lags its own webhooks, it fails, it
 * rate-limits, it hangs), one shared store, and the app's instances, each a real PaymentsClient on
 * its own skewed clock whose every I/O (store call, HTTP attempt) answers on virtual time and dies
 * with the instance: a crash cuts an instance at whatever await it is in.
 */

/** How the service treats one payment (what the customer did, and how the service lags). */
export interface ModelPayment {
  id: string;
  amount: string;
  trackingId?: string;
  webhookUrl?: string;
  createdAt: number;
  sessionEndsAt: number;
  /** When the customer paid (or failed), undefined: never. */
  settleAt?: number;
  /** The final status the payment reaches at `settleAt` (`PREAUTH_SUCCESS`: a pre-authorization held). */
  outcome: 'SUCCESS' | 'FAILURE' | 'PREAUTH_SUCCESS';
  /** Whether it was created as a pre-authorization (the request carried the flag). */
  preAuthorization?: boolean;
  /** How long after `settleAt` verify still answers PENDING (the service's own lag). */
  lagMs: number;
  /** The amount verify reports once settled: another one is a service-side mismatch. */
  reportedAmount: string;
  /** The currency verify reports once settled (ISO 4217 numeric); absent: `788`, the dinar. Another is a mismatch. */
  reportedCurrency?: string;
  /** The tracking id verify reports once settled: another one (verify naming another order) is a mismatch too. */
  reportedTrackingId?: string;
  /** Refunds the service made of it (as often as asked: its documentation promises no refusal). */
  refunds: number;
  /** Refund calls that reached the service for it, accepted or refused. */
  refundCalls: number;
  /** Whether the service refunded it and its answer was lost on the way (a 502 from its gateway). */
  refundAnswerLost?: boolean;
}

/** Settings of the world that a history draws. */
export interface WorldFaults {
  /** Probability that a verify attempt answers 503 / 429 / hangs past the timeout. */
  verify503: number;
  verify429: number;
  verifyHang: number;
  /** Windows [from, to) of virtual time during which the store refuses every call. */
  storeDown: Array<[number, number]>;
  /**
   * How long `generatePayment`'s queue write (`queueGenerated`) travels before it lands in the
   * store (a slow store); absent: it lands at once, as every other call does.
   */
  generateWriteMs?: () => number;
  /** Windows [from, to) during which one instance (by index) cannot reach the store while the others can. */
  partitions?: Array<{ index: number; from: number; to: number }>;
  /** The service echoes the credentials (and the webhook secret) in its answers: plain, URL-encoded, JSON-escaped. */
  echo?: boolean;
  /**
   * The transactional mode (`PostgresPaymentsStore(pool, { transactional: true })`): the store and the
   * shop's tables are one database ({@link SimDatabase}), and the handlers run in its transactions.
   */
  transactional?: {
    /** Probability that a COMMIT is applied and its answer lost (the connection dropped). */
    commitAnswerLost: () => boolean;
    /** Called before each statement of a transaction is sent (the history may crash the instance there). */
    beforeStatement?: (instance: Instance, statement: string) => void;
    /** Called after each statement of a transaction reached the database (the history may crash the instance there). */
    afterStatement?: (instance: Instance, statement: string) => void;
  };
  /**
   * The inbox model (with `transactional`): the database is the host's own, apart from the store,
   * and reached through the client's `inbox` option; the store is a plain one. The two commit
   * independently: the handlers' rows and the inbox row, then the store's done marker.
   */
  inbox?: boolean;
}

/** What the world counts and remembers for the checks. */
export interface Ledger {
  /** Verify attempts that reached the service, per payment id (invented ids included). */
  verifies: Map<string, number>;
  /** Final answers (a settled status) the service gave, per payment. */
  finalAnswers: Map<string, number>;
  /** When the service first answered a final status, per payment (no check of it can be earlier). */
  firstFinalAt: Map<string, number>;
  /** 404 answers, per payment id. */
  notFound: Map<string, number>;
  /** Every line the engine logged. */
  logs: string[];
  /** Refunds the service made, per payment (it refunds as often as asked: its documentation promises no refusal). */
  refunds: Map<string, number>;
}

// Each with characters that URL-encoding and JSON-escaping spell otherwise ('/', '+', '=', '"'), so
// that an echo in those forms is not the plain text.
export const PRIVATE_KEY = 'sk_sim/8f3d29c1+a7b64e05=d9c2"f1a83b7e6d40';
export const WEBHOOK_SECRET = 'whsec_sim/4c9e1b7a+2f6d3e8c=0b5a9f1e"7d2c6b3a8e0f';
/** The webhook secret a rotation moves to (`webhook.previousSecrets` holds the other). */
export const WEBHOOK_SECRET_NEXT = 'whsec_sim/next+9a7c5e3b1d=8f6a4c2e"0b9d7f5a3c1e';
/** Every secret a history configures: none may come out of the plugin, in any form. */
export const SECRETS = [PRIVATE_KEY, WEBHOOK_SECRET, WEBHOOK_SECRET_NEXT] as const;
export const SESSION_SECS_CHOICES = [300, 600] as const;

export class World {
  /** The store every instance shares: the memory store unless a history brings a real one. */
  readonly store: PaymentsStore;
  /**
   * The store's clock (`store.now()`, its leases and TTLs): the world's true time, unless a history
   * steps it ({@link World.stepStoreClock}).
   */
  readonly trueClock: InstanceClock;
  /** When the store's clock last stepped (virtual time); `-Infinity`: never. */
  storeClockSteppedAt = Number.NEGATIVE_INFINITY;
  readonly payments = new Map<string, ModelPayment>();
  readonly ledger: Ledger = {
    verifies: new Map(),
    finalAnswers: new Map(),
    firstFinalAt: new Map(),
    notFound: new Map(),
    logs: [],
    refunds: new Map(),
  };
  /** Told of each payment the service creates, as it creates it (before the plugin has its answer). */
  onCreated?: (payment: ModelPayment) => void;
  /** Told of each refund the service is asked for a paid payment, as the call arrives. */
  onRefund?: (payment: ModelPayment) => void;
  /** Told of each store call an instance makes, as the store applies it (the store reachable). */
  onStoreCall?: (instance: Instance, name: string, args: unknown[]) => void;
  /** The transactional mode's database (the store and the shop's tables), when the history runs it. */
  readonly db?: SimDatabase;
  #ids = 0;

  constructor(
    readonly time: VirtualTime,
    readonly random: Random,
    readonly faults: WorldFaults,
    store?: PaymentsStore,
    /** The memory store's cap on token bindings (a small one evicts them, as a busy shop's would). */
    maxBindings = 1_000,
  ) {
    const trueClock = (this.trueClock = new InstanceClock(time, 0, () => true));
    // Small caps, never reached but by the bindings' with `evictions`: a history holds a few payments.
    this.store =
      store ??
      new MemoryPaymentsStore({
        clock: trueClock,
        maxBindings,
        maxEvents: 1_000,
        maxPending: 1_000,
        maxOutcomes: 1_000,
        maxRateLimits: 1_000,
      });
    if (faults.transactional && !store)
      this.db = new SimDatabase(this.store as MemoryPaymentsStore, () => trueClock.now());
  }

  /**
   * Steps the store's clock by `ms` (negative: back), as a failover to a replica whose clock is
   * behind or an NTP correction of the database server would: what the store dated before reads as
   * that much in the future, and its leases and TTLs last that much longer. The instances learn it
   * when they next measure the store's clock (once a minute).
   */
  stepStoreClock(ms: number): void {
    this.trueClock.stepMs += ms;
    this.storeClockSteppedAt = this.time.now;
  }

  /** Whether the database went down since `since` (its restart ended every transaction open then). */
  restartedSince(since: number): boolean {
    return this.faults.storeDown.some(([from]) => from > since && from <= this.time.now);
  }

  storeIsDown(): boolean {
    return this.faults.storeDown.some(([from, to]) => this.time.now >= from && this.time.now < to);
  }

  /** Whether instance `index` cannot reach the store now (the store down, or that instance cut off from it). */
  storeUnreachableFrom(index: number): boolean {
    return (
      this.storeIsDown() ||
      (this.faults.partitions ?? []).some((p) => p.index === index && this.time.now >= p.from && this.time.now < p.to)
    );
  }

  /** Whether the service's settled answer differs from what the payment was made with. */
  static mismatched(payment: ModelPayment): boolean {
    return (
      payment.reportedAmount !== payment.amount ||
      payment.reportedTrackingId !== payment.trackingId ||
      payment.reportedCurrency !== undefined
    );
  }

  /** The status verify answers now. */
  statusOf(payment: ModelPayment): string {
    const now = this.time.now;
    if (payment.settleAt !== undefined && now >= payment.settleAt + payment.lagMs) return payment.outcome;
    return now >= payment.sessionEndsAt && (payment.settleAt === undefined || payment.settleAt >= payment.sessionEndsAt)
      ? 'EXPIRED'
      : 'PENDING';
  }

  /** When verify first answers a final status (undefined: never within the model). */
  finalAt(payment: ModelPayment): number {
    return payment.settleAt !== undefined && payment.settleAt < payment.sessionEndsAt
      ? payment.settleAt + payment.lagMs
      : payment.sessionEndsAt;
  }

  /** The service's answer to one HTTP attempt; `undefined`: it never answers (a hang). */
  answer(
    config: InternalAxiosRequestConfig,
  ): { status: number; body: unknown; headers?: Record<string, string> } | undefined {
    const path = String(config.url ?? '');
    if (config.method === 'POST' && path === '/api/v2/generate_payment') {
      const body = JSON.parse(String(config.data)) as Record<string, unknown>;
      const id = `pay_${++this.#ids}`;
      const now = this.time.now;
      const sessionSecs = Number(body.session_timeout_secs ?? 1200);
      const payment: ModelPayment = {
        id,
        amount: String(body.amount),
        createdAt: now,
        sessionEndsAt: now + sessionSecs * 1000,
        outcome: 'SUCCESS',
        lagMs: 0,
        reportedAmount: String(body.amount),
        refunds: 0,
        refundCalls: 0,
      };
      if (typeof body.developer_tracking_id === 'string')
        payment.trackingId = payment.reportedTrackingId = body.developer_tracking_id;
      if (typeof body.webhook === 'string') payment.webhookUrl = body.webhook;
      if (body.pre_authorization === true) payment.preAuthorization = true;
      this.payments.set(id, payment);
      this.onCreated?.(payment);
      return {
        status: 200,
        body: {
          result: {
            success: true,
            payment_id: id,
            // A link that carries what the request sent, URL-encoded as a query would.
            link: `https://pay.test/${id}${this.faults.echo ? `?echo=${encodeURIComponent(authorization(config))}` : ''}`,
            developer_tracking_id: payment.trackingId,
          },
        },
      };
    }
    if (config.method === 'GET' && path.startsWith('/api/v2/verify_payment/')) {
      const id = decodeURIComponent(path.slice('/api/v2/verify_payment/'.length));
      this.ledger.verifies.set(id, (this.ledger.verifies.get(id) ?? 0) + 1);
      if (process.env.SIM_DEBUG === id)
        this.ledger.logs.push(`${((this.time.now - 1_800_000_000_000) / 1000).toFixed(1)}s service: verify ${id}`);
      if (this.random.chance(this.faults.verifyHang)) return undefined;
      if (this.random.chance(this.faults.verify503))
        return {
          status: 503,
          body: this.faults.echo
            ? `Service Unavailable (request: Authorization=${encodeURIComponent(authorization(config))})`
            : 'Service Unavailable',
        };
      if (this.random.chance(this.faults.verify429))
        return {
          status: 429,
          body: { message: 'Too many requests' },
          headers: { 'retry-after': String(this.random.int(5, 20)) },
        };
      const payment = this.payments.get(id);
      if (!payment) {
        this.ledger.notFound.set(id, (this.ledger.notFound.get(id) ?? 0) + 1);
        const message = this.faults.echo ? `Payment not found (${authorization(config)})` : 'Payment not found';
        return { status: 404, body: { result: { status: 404, message } } };
      }
      const status = this.statusOf(payment);
      if (status !== 'PENDING') {
        this.ledger.finalAnswers.set(id, (this.ledger.finalAnswers.get(id) ?? 0) + 1);
        if (!this.ledger.firstFinalAt.has(id)) this.ledger.firstFinalAt.set(id, this.time.now);
      }
      const settled = status === 'SUCCESS' || status === 'FAILURE';
      const result: Record<string, unknown> = {
        type: 'card',
        amount: Number(settled ? payment.reportedAmount : payment.amount),
        status,
        details: { currency: (settled ? payment.reportedCurrency : undefined) ?? '788' },
      };
      const trackingId = settled ? payment.reportedTrackingId : payment.trackingId;
      if (trackingId !== undefined) result.developer_tracking_id = trackingId;
      const body = { success: true, result, status_code: 200, code: 0, version: '2.0.0' };
      if (!this.faults.echo) return { status: 200, body };
      // A service that echoes what it was sent: the Authorization header JSON-escaped (every
      // character but letters and digits as \uXXXX, and PHP's \/), URL-encoded, and the secret plain.
      const auth = authorization(config);
      const details =
        `{"echo":"${auth.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}",` +
        `"php":${JSON.stringify(auth).replace(/\//g, '\\/')},"query":"${encodeURIComponent(auth)}",` +
        `"hook":${JSON.stringify(WEBHOOK_SECRET)},"next":"${encodeURIComponent(WEBHOOK_SECRET_NEXT)}"}`;
      return { status: 200, body: JSON.stringify(body).replace('"details":{}', `"details":${details}`) };
    }
    if (config.method === 'POST' && path === '/api/v2/refund_payment') return this.#refund(config);
    return { status: 404, body: { result: { status: 404, message: 'Not Found' } } };
  }

  // A duplicate's automatic refund. No random draw (the histories' streams stay as they were):
  // by the payment's number, the service refunds and answers, refunds and loses the answer (a
  // 502 from its gateway), or fails before refunding (503).
  #refund(config: InternalAxiosRequestConfig): { status: number; body: unknown } {
    const id = String((JSON.parse(String(config.data)) as Record<string, unknown>).payment_id);
    const payment = this.payments.get(id);
    if (payment) payment.refundCalls++;
    if (!payment || this.statusOf(payment) !== 'SUCCESS')
      return { status: 400, body: { status: 'error', message: 'cannot be refunded', code: 'REFUND_NOT_ALLOWED' } };
    this.onRefund?.(payment);
    const way = Number(id.slice('pay_'.length)) % 3;
    if (way === 2) return { status: 503, body: 'Service Unavailable' };
    payment.refunds++;
    this.ledger.refunds.set(id, (this.ledger.refunds.get(id) ?? 0) + 1);
    if (way === 1) {
      payment.refundAnswerLost = true;
      return { status: 502, body: 'Bad Gateway' };
    }
    const refundedAt = new Date(this.time.now).toISOString();
    return {
      status: 200,
      body: {
        status: 'success',
        result: {
          refund_id: `ref_${id}`,
          payment_id: id,
          amount: payment.amount,
          status: 'success',
          refunded_at: refundedAt,
        },
      },
    };
  }
}

function authorization(config: InternalAxiosRequestConfig): string {
  const headers = config.headers as unknown as Record<string, unknown> | undefined;
  return String(headers?.Authorization ?? headers?.authorization ?? '');
}

/** One app instance: a real client over the shared store, its I/O on virtual time. */
export class Instance {
  alive = true;
  /** Until when the process is stalled (a long GC pause, its VM paused): it runs nothing meanwhile. */
  frozenUntil = 0;
  /** Whether it has read the store's clock (its shared time is then the store's, whatever its own clock does). */
  measured = false;
  /**
   * Answers of the store's clock that come back late once it measured that clock (a congested
   * return path): the store read its clock at once, so the round trip's middle is off by half the
   * delay while the earlier measurement's offset still fits (docs/confirmations.md, "One notion of time").
   */
  slowClockAnswers?: { draws: Random; chance: number; minMs: number; maxMs: number };
  /** Called when a reading of the store's clock finds the store out of reach (the `unsynced` situation ends its outage then). */
  onClockUnreachable?: () => void;
  /** When (virtual time) the store last read its clock for it; `-Infinity`: never. */
  storeClockReadAt = Number.NEGATIVE_INFINITY;
  /** When it last asked the service to verify each payment. */
  readonly verifiedAt = new Map<string, number>();
  /** When it last asked the store for each claim (by its event key). */
  readonly claimAskedAt = new Map<string, number>();
  /** When it last asked the store for each rate-limit slot (a payment's allowance of returns, say). */
  readonly rateLimitAskedAt = new Map<string, number>();
  readonly clock: InstanceClock;
  readonly client: PaymentsClient;
  /** Called when the instance dies (the checks close its open handler runs). */
  onCrash: Array<() => void> = [];
  readonly #latencies: Random;

  constructor(
    readonly index: number,
    readonly world: World,
    skewMs: number,
    options: {
      sessionSecs: number;
      dispatch: (instance: Instance, name: PaymentEventName, event: PaymentEvent) => Promise<void>;
      /** The instance's retry jitter, its own stream so that it leaves the world's draws alone. */
      jitter: Random;
      /** The registration's name (another merchant account of the app); default the unnamed one. */
      name?: string;
      /** The webhook secret and the previous ones still accepted (a rotation); default {@link WEBHOOK_SECRET}. */
      secret?: string;
      previousSecrets?: string[];
      /** `duplicates: { refund: true }`. */
      refundDuplicates?: boolean;
      /** Where the operations' events go (a duplicate's refund). */
      operations?: (instance: Instance, name: PaymentEventName, event: PaymentEvent) => Promise<void>;
      /**
       * The stream its I/O latencies are drawn from; default the world's. An instance a situation
       * adds draws from its own, so that the history's other draws stay as they were.
       */
      latencies?: Random;
      /** false: no handlers registered (a front instance serving the return page only), so no reconciliation. */
      handlers?: boolean;
    },
  ) {
    this.#latencies = options.latencies ?? world.random;
    this.clock = new InstanceClock(
      world.time,
      skewMs,
      () => this.alive,
      () => this.frozenUntil,
    );
    const logs = world.ledger.logs;
    const stamp = () => `${((world.time.now - 1_800_000_000_000) / 1000).toFixed(1)}s`;
    const logger: PaymentsLogger = {
      log: (m) => void logs.push(`${stamp()} #${index} log ${m}`),
      warn: (m) => void logs.push(`${stamp()} #${index} warn ${m}`),
      error: (m) => void logs.push(`${stamp()} #${index} error ${m}`),
    };
    this.client = new PaymentsClient(
      {
        publicKey: 'pk_sim',
        privateKey: PRIVATE_KEY,
        baseUrl: 'https://service.test',
        successLink: 'https://shop.test/back',
        failLink: 'https://shop.test/back',
        sessionTimeoutSecs: options.sessionSecs,
        webhook: {
          publicUrl: 'https://shop.test/payments/webhook',
          secret: options.secret ?? WEBHOOK_SECRET,
          ...(options.previousSecrets ? { previousSecrets: options.previousSecrets } : {}),
        },
        ...(options.name !== undefined ? { name: options.name } : {}),
        ...(options.refundDuplicates ? { duplicates: { refund: true } } : {}),
        // The shop's slow handlers take up to 90 s: healthy runs, within their deadline.
        handlers: { timeoutMs: 120_000 },
        store: this.#storeProxy(),
        ...(world.faults.inbox && world.db ? { inbox: this.#inbox(world.db) } : {}),
        logger,
        telemetry: false,
        clock: this.clock,
      },
      { adapter: this.#adapter(), random: () => options.jitter.next() },
    );
    const operations = options.operations;
    if (options.handlers === false) return;
    const OPERATIONS: PaymentEventName[] = [PaymentEvents.CAPTURED, PaymentEvents.REFUNDED, PaymentEvents.CANCELLED];
    this.client.setHandlers({
      handlersOf: (name) =>
        !OPERATIONS.includes(name)
          ? [(event: PaymentEvent) => options.dispatch(this, name, event)]
          : operations
            ? [(event: PaymentEvent) => operations(this, name, event)]
            : [],
    });
  }

  crash(): void {
    this.alive = false;
    for (const f of this.onCrash.splice(0)) f();
  }

  /**
   * One I/O: `work` lands at once (the store or the service applies it), its answer arrives after
   * a latency. A dead instance never resumes: its awaits hang for ever, wherever they are; one that
   * dies between the op and its answer has changed the world without knowing it.
   */
  io<T>(work: () => T | Promise<T>, latency = (): number => this.#latencies.between(1, 25)): Promise<T> {
    return new Promise<T>((resolve, reject) =>
      this.#awake(() => {
        let outcome: Promise<T>;
        try {
          outcome = this.world.time.track(Promise.resolve(work()));
        } catch (error) {
          outcome = Promise.reject(error instanceof Error ? error : new Error(String(error)));
        }
        const wait = latency();
        outcome.then(
          (value) => this.world.time.after(wait, () => this.#awake(() => this.alive && resolve(value))),
          (error: unknown) =>
            this.world.time.after(wait, () =>
              this.#awake(() => this.alive && reject(error instanceof Error ? error : new Error(String(error)))),
            ),
        );
      }),
    );
  }

  // A stalled process does nothing until it resumes: what it would do now waits for that.
  #awake(fn: () => void): void {
    if (this.frozenUntil > this.world.time.now) this.world.time.at(this.frozenUntil, () => this.#awake(fn));
    else fn();
  }

  #storeProxy(): PaymentsStore {
    const world = this.world;
    const shared = world.store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const call =
      (name: string) =>
      (...args: unknown[]): Promise<unknown> => {
        if (name === 'claim') this.claimAskedAt.set(String(args[0]), world.time.now);
        return this.io(() => {
          if (world.storeUnreachableFrom(this.index))
            throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:6379 (store down)'), { code: 'ECONNREFUSED' });
          world.onStoreCall?.(this, name, args);
          return shared[name](...args);
        });
      };
    const limits = world.store.rateLimits;
    const rateLimits: RateLimiter = {
      take: (key, windowMs) => {
        this.rateLimitAskedAt.set(key, world.time.now);
        return this.io(() =>
          world.storeUnreachableFrom(this.index) ? Promise.reject(new Error('store down')) : limits.take(key, windowMs),
        );
      },
      free: (key) =>
        this.io(() =>
          world.storeUnreachableFrom(this.index) ? Promise.reject(new Error('store down')) : limits.free(key),
        ),
    };
    const proxy: Record<string, unknown> = { rateLimits, close: async () => undefined };
    for (const name of [...STORE_METHODS, ...ORDER_LEDGER_METHODS, ...REFUND_LEDGER_METHODS]) {
      proxy[name] = call(name);
    }
    // A path's re-check write, merged in one atomic step with an entry queued meanwhile.
    if (typeof shared.queueRecheck === 'function') proxy.queueRecheck = call('queueRecheck');
    // generatePayment's order lock and lookup, and its checkout's write with the lock's release:
    // one step each in every shipped store.
    if (typeof shared.openCheckout === 'function') proxy.openCheckout = call('openCheckout');
    if (typeof shared.closeCheckout === 'function') proxy.closeCheckout = call('closeCheckout');
    if (world.db && !world.faults.inbox) this.#transactional(proxy, world.db, call);
    // The generated payment's queue write, one atomic step in every shipped store; with a slow
    // store it lands late, after a webhook that came meanwhile (the write is on its way: it lands
    // even if the instance dies).
    if (typeof shared.queueGenerated === 'function') {
      const queue = call('queueGenerated');
      const travel = world.faults.generateWriteMs;
      proxy.queueGenerated = travel
        ? (...args: unknown[]) =>
            new Promise<void>((resolve) => world.time.after(travel(), () => resolve())).then(() => queue(...args))
        : queue;
    }
    // The store's clock is the world's true time, whichever store it is: a real server's own clock
    // runs on real time, which a history on virtual time does not follow.
    const lateBy = (): number | undefined => {
      const slow = this.slowClockAnswers;
      return slow && this.measured && slow.draws.chance(slow.chance)
        ? slow.draws.between(slow.minMs, slow.maxMs)
        : undefined;
    };
    proxy.now = () => {
      const late = lateBy();
      return this.io(
        () => {
          if (world.storeUnreachableFrom(this.index)) {
            this.onClockUnreachable?.();
            throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:6379 (store down)'), { code: 'ECONNREFUSED' });
          }
          return { now: world.trueClock.now(), readAt: world.time.now };
        },
        late === undefined ? undefined : () => late,
      ).then(({ now, readAt }) => {
        this.measured = true;
        this.storeClockReadAt = Math.max(this.storeClockReadAt, readAt);
        return now;
      });
    };
    return proxy as unknown as PaymentsStore;
  }

  // The transactional mode: the proxy is a TransactionalPaymentsStore over the world's database. A
  // statement on a row another transaction holds waits for it to end (PostgreSQL's row locks).
  #transactional(
    proxy: Record<string, unknown>,
    db: SimDatabase,
    call: (name: string) => (...args: unknown[]) => Promise<unknown>,
  ): void {
    const claimKeyOf: Record<string, (args: unknown[]) => string> = {
      claim: (a) => String(a[0]),
      markDone: (a) => String(a[0]),
      release: (a) => String(a[0]),
      findBindingAndClaim: (a) => String(a[2]),
      finishOutcome: (a) => (a[0] as { eventKey: string }).eventKey,
    };
    for (const [name, keyOf] of Object.entries(claimKeyOf)) {
      const plain = call(name);
      proxy[name] = async (...args: unknown[]) => {
        await db.unlocked(`claim:${keyOf(args)}`);
        return plain(...args);
      };
    }
    const settle = call('settleOrder');
    proxy.settleOrder = async (orderKey: string, settlement: OrderSettlement, ttlMs: number, transaction?: unknown) => {
      if (transaction === undefined) return settle(orderKey, settlement, ttlMs);
      const tx = (transaction as PaymentsTransaction).client as SimTransaction;
      for (;;) {
        const held = await this.#statement(tx, 'settleOrder', () => db.settleOrder(tx, orderKey, settlement, ttlMs));
        if (!('locked' in held)) return held;
        await held.locked.ended;
      }
    };
    proxy.transactional = true;
    proxy.runInTransaction = <T>(work: PaymentsTransactionWork<T>) => this.#runInTransaction(db, work);
  }

  // One statement of an open transaction: it fails (and the transaction with it) when the store is out
  // of reach, or the database restarted since the transaction began. The inbox model's database is
  // the host's own (`host`): the store's outages are not its.
  #statement<T>(tx: SimTransaction, statement: string, work: () => T | Promise<T>, host = false): Promise<T> {
    const world = this.world;
    return this.io(async () => {
      if (!host && world.storeUnreachableFrom(this.index))
        throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:5432 (store down)'), { code: 'ECONNREFUSED' });
      if (!host && world.restartedSince(tx.beganAt)) world.db?.rollback(tx);
      if (tx.state !== 'open') throw new Error('Connection terminated: the transaction was rolled back');
      world.faults.transactional?.beforeStatement?.(this, statement);
      if (!this.alive) throw new Error('the process died before sending it');
      const result = await work();
      world.faults.transactional?.afterStatement?.(this, statement);
      return result;
    });
  }

  // The inbox model: the client's `inbox` over the host's database (the world's, apart from the store).
  #inbox(db: SimDatabase): PaymentsInbox {
    const world = this.world;
    return {
      transaction: async <T>(run: (tx: PaymentsInboxTransaction) => Promise<T>): Promise<T> => {
        const tx = await this.io(() => {
          const begun = db.begin(this.index);
          // The server ends a dead client's transaction.
          this.onCrash.push(() => db.rollback(begun));
          world.faults.transactional?.afterStatement?.(this, 'BEGIN');
          return begun;
        });
        const scope: PaymentsInboxTransaction = {
          handle: {
            client: tx,
            query: <Row>(text: string, params?: unknown[]) =>
              this.#statement(
                tx,
                'query',
                () => {
                  const [paymentId, name, startedAt] = (params ?? []) as [string, string, number];
                  db.write(tx, { paymentId, name, startedAt });
                  void text;
                  return { rows: [] as Row[] };
                },
                true,
              ),
          },
          markDone: async (entry) => {
            for (;;) {
              const mark = await this.#statement(tx, 'inbox', () => db.insertInbox(tx, entry.paymentId), true);
              if (typeof mark === 'string') return mark;
              await mark.locked.ended;
            }
          },
          beforeCommit: async () => {
            if (tx.state !== 'open') throw new Error('the host transaction ended under the handlers');
          },
        };
        try {
          const result = await run(scope);
          await this.#statement(
            tx,
            'COMMIT',
            async () => {
              await db.commit(tx);
              if (world.faults.transactional?.commitAnswerLost()) {
                db.lostAnswer(tx);
                throw Object.assign(new Error('Connection terminated unexpectedly (during COMMIT)'), {
                  code: 'ECONNRESET',
                });
              }
            },
            true,
          );
          return result;
        } catch (error) {
          db.rollback(tx);
          await this.io(() => undefined).catch(() => undefined);
          throw error;
        }
      },
    };
  }

  async #runInTransaction<T>(db: SimDatabase, work: PaymentsTransactionWork<T>): Promise<T> {
    const world = this.world;
    const tx = await this.io(() => {
      if (world.storeUnreachableFrom(this.index))
        throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:5432 (store down)'), { code: 'ECONNREFUSED' });
      const begun = db.begin(this.index);
      // The server ends a dead client's transaction.
      this.onCrash.push(() => db.rollback(begun));
      world.faults.transactional?.afterStatement?.(this, 'BEGIN');
      return begun;
    });
    const transaction: PaymentsTransaction = {
      client: tx,
      query: <Row>(text: string, params?: unknown[]) =>
        this.#statement(tx, 'query', () => {
          const [paymentId, name, startedAt] = (params ?? []) as [string, string, number];
          db.write(tx, { paymentId, name, startedAt });
          void text;
          return { rows: [] as Row[] };
        }),
    };
    const scope: PaymentsTransactionScope = {
      transaction,
      holdsDatabase: false,
      finishOutcome: (finish) => this.#statement(tx, 'finishOutcome', () => db.finishOutcome(tx, finish)),
    };
    try {
      const result = await work(scope);
      await this.#statement(tx, 'COMMIT', async () => {
        await db.commit(tx);
        if (world.faults.transactional?.commitAnswerLost())
          throw Object.assign(new Error('Connection terminated unexpectedly (during COMMIT)'), { code: 'ECONNRESET' });
      });
      return result;
    } catch (error) {
      db.rollback(tx);
      await this.io(() => undefined).catch(() => undefined);
      throw error;
    }
  }

  #adapter(): AxiosAdapter {
    return (config: InternalAxiosRequestConfig) =>
      new Promise<AxiosResponse>((resolve, reject) => {
        const signal = config.signal as
          { aborted?: boolean; addEventListener?: (t: string, l: () => void) => void } | undefined;
        signal?.addEventListener?.('abort', () =>
          reject(Object.assign(new Error('timeout of the attempt'), { code: 'ECONNABORTED' })),
        );
        const latency = (): number => this.#latencies.between(40, 600);
        const url = String(config.url ?? '');
        if (config.method === 'GET' && url.startsWith('/api/v2/verify_payment/'))
          this.verifiedAt.set(decodeURIComponent(url.slice('/api/v2/verify_payment/'.length)), this.world.time.now);
        this.io(() => this.world.answer(config), latency).then((answer) => {
          if (answer === undefined || signal?.aborted) return;
          resolve({
            data: typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body),
            status: answer.status,
            statusText: String(answer.status),
            headers: answer.headers ?? {},
            config,
            request: {},
          } as AxiosResponse);
        }, reject);
      });
  }
}
