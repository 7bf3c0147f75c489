import { defaultPaymentsLogger, type PaymentsLogger } from '../core/client/payments.logger.js';
import {
  epochMs,
  positiveMs,
  outcomeCursor,
  outcomePageLimit,
  parseOutcomeCursor,
  type BindingClaim,
  type ClaimOutcome,
  type OutcomeFinish,
  type OutcomePage,
  type OutcomeQuery,
  type OutcomeRecord,
  type PaymentBinding,
  type PaymentsStore,
  type PendingPayment,
} from '../core/store/payments.store.js';
import { resolvePostgresOptions, type PostgresPaymentsStoreOptions, type PostgresQueryable } from './postgres.options.js';
import { parseBinding, parseOutcome, parsePending, valueOf } from './postgres.rows.js';
import { ensureTablesStatement, storeTables } from './postgres.schema.js';
import { storeStatements, type StoreStatements } from './postgres.statements.js';
import { assertTransactional, finishOutcomeParams, runPostgresTransaction } from './postgres.transaction.js';
import type { PaymentsTransactionWork } from '../core/store/store.transaction.js';

/** The part of a `pg` Pool the store uses when it creates one. */
interface OwnedPool extends PostgresQueryable {
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

type PoolConstructor = new (config: Record<string, unknown>) => OwnedPool;

/**
 * A {@link PaymentsStore} in PostgreSQL, for several app instances sharing one database (or one
 * PGlite database in a single process, e.g. in tests or an embedded app).
 *
 * Every operation is one SQL statement, atomic on its own: claims are
 * `INSERT ... ON CONFLICT ... DO UPDATE ... RETURNING` (no read-then-write), the reconciliation
 * queue is taken with `FOR UPDATE SKIP LOCKED`. Leases and TTLs run on the database clock, so
 * instances agree on expiry whatever their own clocks say. Expired rows are ignored by reads,
 * overwritten by writes, and deleted in small batches every `cleanupEveryWrites` writes: no cron.
 *
 * ```ts
 * PaymentsModule.forRoot({ ..., store: new PostgresPaymentsStore(pool) })              // a pg Pool
 * PaymentsModule.forRoot({ ..., store: new PostgresPaymentsStore(process.env.DATABASE_URL!) })
 * ```
 *
 * Operations reject after `operationTimeoutMs` (default 5 s), so that an unreachable database
 * makes webhooks answer 503 (the service delivers again later) instead of hanging.
 */
export class PostgresPaymentsStore implements PaymentsStore {
  // Private fields (not `private`) keep the connection string, whose password may be in it, and
  // the pool out of util.inspect and JSON.stringify of the store.
  readonly #given: PostgresQueryable | undefined;
  readonly #connectionString: string | undefined;
  readonly #options: PostgresPaymentsStoreOptions;
  readonly #sql: StoreStatements;
  readonly #ensureSql: string;
  readonly #createTables: boolean;
  readonly #timeoutMs: number;
  readonly #cleanupEvery: number;
  readonly #logger: PaymentsLogger;
  #pool: Promise<OwnedPool> | undefined;
  #ready: Promise<void> | undefined;
  #writes = 0;
  /** Claim statements not settled yet, by (key, owner): see #trackClaim. */
  readonly #claimsInFlight = new Map<string, Promise<unknown>>();
  #cleaning: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @param poolOrUrl a `pg` Pool (or Client), a PGlite instance, anything with
   *   `query(text, params)` answering `{ rows }`: the store uses it and never ends it, it is the
   *   host's. Or a connection string (`postgres://user:password@host:5432/db`): the store then
   *   creates a `pg` Pool (the optional peer dependency `pg`, loaded only then) and ends it on
   *   {@link close}.
   * @param options see {@link PostgresPaymentsStoreOptions}
   * @throws TypeError or RangeError on a bad argument or option
   */
  constructor(poolOrUrl: PostgresQueryable | string, options: PostgresPaymentsStoreOptions = {}) {
    const resolved = resolvePostgresOptions(options);
    if (typeof poolOrUrl === 'string') {
      if (poolOrUrl.length === 0) throw new TypeError('PostgresPaymentsStore: the connection string is empty');
      this.#connectionString = poolOrUrl;
    } else if (typeof poolOrUrl === 'object' && poolOrUrl !== null && typeof poolOrUrl.query === 'function') {
      this.#given = poolOrUrl;
    } else {
      throw new TypeError('PostgresPaymentsStore: expected a connection string, a pg Pool, a PGlite instance or an object with query(text, params)');
    }
    this.#options = options;
    const tables = storeTables(resolved);
    this.#sql = storeStatements(tables);
    this.#ensureSql = ensureTablesStatement(resolved);
    this.#createTables = resolved.createTables;
    this.#timeoutMs = resolved.operationTimeoutMs;
    this.#cleanupEvery = resolved.cleanupEveryWrites;
    this.#logger = options.logger ?? defaultPaymentsLogger;
    this.transactional = resolved.transactional;
    if (this.transactional && this.#given) assertTransactional(this.#given);
  }

  /** See {@link PostgresPaymentsStoreOptions.transactional}. */
  readonly transactional: boolean;

  /**
   * Runs `work` in one transaction of the store's database, then commits (rolls back on a throw): the
   * capability `TransactionalPaymentsStore.runInTransaction` that the outcome runner uses.
   * @throws Error unless the store was created with `{ transactional: true }`
   */
  async runInTransaction<T>(work: PaymentsTransactionWork<T>): Promise<T> {
    if (!this.transactional) throw new Error('PostgresPaymentsStore: runInTransaction needs the option transactional: true');
    if (this.#closing) throw new Error('PostgresPaymentsStore: runInTransaction called after close()');
    const db = await this.#database();
    await this.#ensureTables(db);
    return runPostgresTransaction(db, this.#sql, this.#timeoutMs, work);
  }

  /** @inheritdoc */
  async saveBinding(tokenId: string, binding: PaymentBinding, ttlMs: number): Promise<void> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    await this.#write('saveBinding', this.#sql.saveBinding, [tokenId, JSON.stringify(binding), ttl]);
  }

  /** @inheritdoc */
  async findBinding(tokenId: string): Promise<PaymentBinding | undefined> {
    const rows = await this.#query('findBinding', this.#sql.findBinding, [tokenId]);
    return rows.length === 0 ? undefined : parseBinding(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async claim(eventKey: string, owner: string, leaseMs: number): Promise<ClaimOutcome> {
    const lease = positiveMs('PostgresPaymentsStore', leaseMs, 'leaseMs');
    const sent = this.#send('claim', this.#sql.claim, [eventKey, owner, lease]);
    this.#trackClaim(eventKey, owner, sent);
    const rows = await this.#bounded('claim', sent);
    this.#countWrite();
    const row = rows[0] as { state?: unknown; owner?: unknown } | undefined;
    if (row?.state === 'done') return 'done';
    if (row?.state === 'claimed') return row.owner === owner ? 'claimed' : 'busy';
    throw new Error('PostgresPaymentsStore: unexpected answer to claim');
  }

  /** The binding lookup and claim of a webhook in one statement (one round trip): claims only when the binding names the payment. */
  async findBindingAndClaim(tokenId: string, paymentId: string, eventKey: string, owner: string, leaseMs: number): Promise<BindingClaim> {
    const lease = positiveMs('PostgresPaymentsStore', leaseMs, 'leaseMs');
    const sent = this.#send('findBindingAndClaim', this.#sql.findBindingAndClaim, [tokenId, eventKey, owner, paymentId, lease]);
    this.#trackClaim(eventKey, owner, sent);
    const rows = await this.#bounded('findBindingAndClaim', sent);
    this.#countWrite();
    const row = rows[0] as { value?: unknown; state?: unknown; owner?: unknown } | undefined;
    const binding = row === undefined ? undefined : parseBinding(row.value);
    if (row?.state === null || row?.state === undefined) return { binding };
    const claim: ClaimOutcome = row.state === 'done' ? 'done' : row.owner === owner ? 'claimed' : 'busy';
    if (!binding) {
      // The statement read a payment id from a value this store does not take for a binding
      // (written by hand or by another version): nothing may be claimed for it.
      if (claim === 'claimed') await this.release(eventKey, owner);
      return { binding };
    }
    return { binding, claim };
  }

  /** markDone (or release), removePending and saveOutcome with its attempts counted, in one statement (one round trip). */
  async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    const rows = await this.#write('finishOutcome', this.#sql.finishOutcome, finishOutcomeParams(finish));
    return valueOf(rows[0]) === '1';
  }

  /** @inheritdoc */
  async markDone(eventKey: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    const rows = await this.#write('markDone', this.#sql.markDone, [eventKey, owner, ttl]);
    return rows.length === 1;
  }

  /**
   * Gives a claim up if `owner` still holds it. Also what to call after a claim timed out (see
   * `operationTimeoutMs`): the claim may still be waiting for a connection or in flight, and
   * commit later on another connection than this release. A release is therefore sent only once
   * this store's claims of the same key and owner have settled, so it frees such a late claim
   * (its promise may reject on the timeout meanwhile; the release still goes out).
   */
  async release(eventKey: string, owner: string): Promise<void> {
    const inFlight = this.#claimsInFlight.get(claimId(eventKey, owner));
    await this.#query(
      'release',
      this.#sql.release,
      [eventKey, owner],
      inFlight?.catch(() => undefined),
    );
    this.#countWrite();
  }

  /** @inheritdoc */
  async schedulePending(entry: PendingPayment, dueAt: number): Promise<void> {
    // Rounded up: an entry is never offered before the time asked for.
    const due = Math.ceil(epochMs('PostgresPaymentsStore', dueAt, 'dueAt'));
    await this.#write('schedulePending', this.#sql.schedulePending, [entry.paymentId, JSON.stringify(entry), String(due)]);
  }

  /** @inheritdoc */
  async takeDuePending(now: number, limit: number, leaseMs: number): Promise<PendingPayment[]> {
    const lease = positiveMs('PostgresPaymentsStore', leaseMs, 'leaseMs');
    const at = Math.floor(epochMs('PostgresPaymentsStore', now, 'now'));
    const count = Math.floor(limit);
    if (!(count > 0)) return [];
    const rows = await this.#write('takeDuePending', this.#sql.takeDuePending, [String(at), Math.min(count, 2 ** 31 - 1), String(at + lease)]);
    return rows.map((row) => parsePending(valueOf(row))).filter((e): e is PendingPayment => e !== undefined);
  }

  /** @inheritdoc */
  async findPending(paymentId: string): Promise<PendingPayment | undefined> {
    const rows = await this.#query('findPending', this.#sql.findPending, [paymentId]);
    return rows.length === 0 ? undefined : parsePending(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async removePending(paymentId: string): Promise<void> {
    await this.#write('removePending', this.#sql.removePending, [paymentId]);
  }

  /** @inheritdoc */
  async countPending(): Promise<number> {
    const rows = await this.#query('countPending', this.#sql.countPending, []);
    return Number(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async saveOutcome(record: OutcomeRecord, ttlMs: number): Promise<void> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    await this.#write('saveOutcome', this.#sql.saveOutcome, [record.paymentId, record.outcome, record.handlers, record.updatedAt, JSON.stringify(record), ttl]);
  }

  /** @inheritdoc */
  async getOutcome(paymentId: string): Promise<OutcomeRecord | undefined> {
    const rows = await this.#query('getOutcome', this.#sql.getOutcome, [paymentId]);
    return rows.length === 0 ? undefined : parseOutcome(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async listOutcomes(query: OutcomeQuery = {}): Promise<OutcomePage> {
    const limit = outcomePageLimit(query);
    const after = query.cursor === undefined ? undefined : parseOutcomeCursor(query.cursor);
    // One row more than the page tells whether there is a next page.
    const sql = query.handlers === 'failed' ? this.#sql.listFailedOutcomes : this.#sql.listOutcomes;
    const rows = await this.#query('listOutcomes', sql, [
      query.handlers ?? null,
      query.outcome ?? null,
      after?.updatedAt ?? null,
      after?.paymentId ?? null,
      limit + 1,
    ]);
    const items = rows
      .slice(0, limit)
      .map((row) => parseOutcome(valueOf(row)))
      .filter((r): r is OutcomeRecord => r !== undefined);
    if (rows.length <= limit) return { items };
    // The cursor comes from the row's key columns, not the parsed record, so that a row that
    // failed to parse cannot stop the paging.
    const last = rows[limit - 1] as { updated_at?: unknown; payment_id?: unknown };
    return { items, nextCursor: outcomeCursor({ updatedAt: String(last.updated_at), paymentId: String(last.payment_id) }) };
  }

  /** Runs `SELECT 1` (and creates the tables if that is still to do); rejects when the database does not answer. */
  async ping(): Promise<void> {
    await this.#query('ping', this.#sql.ping, []);
  }

  /**
   * Waits for a cleanup in progress, then ends the pool the store created from a connection
   * string; later operations reject at once. A pool or PGlite passed in is left open (it is the
   * host's) and the store keeps working on it. Safe to call more than once.
   */
  async close(): Promise<void> {
    await this.#cleaning;
    if (this.#connectionString === undefined) return;
    this.#closing ??= (async () => {
      const pool = await this.#pool?.catch(() => undefined);
      await pool?.end();
    })();
    return this.#closing;
  }

  async #write(operation: string, text: string, params: unknown[]): Promise<unknown[]> {
    const rows = await this.#query(operation, text, params);
    this.#countWrite();
    return rows;
  }

  #countWrite(): void {
    this.#writes += 1;
    if (this.#writes % this.#cleanupEvery !== 0 || this.#cleaning || this.#closing) return;
    // In the background: a write must not wait for the sweep. close() waits for it.
    this.#cleaning = this.#query('cleanup', this.#sql.cleanup, [])
      .then(
        () => undefined,
        (error: unknown) => this.#logger.warn(`PostgreSQL store cleanup of expired rows failed: ${errorMessage(error)}`),
      )
      .finally(() => {
        this.#cleaning = undefined;
      });
  }

  // Bounds every operation by our own timer rather than trusting the pool's settings: a host's
  // pool may wait for a free connection forever (pg's default connectionTimeoutMillis is 0).
  #query(operation: string, text: string, params: unknown[], after?: Promise<unknown>): Promise<unknown[]> {
    return this.#bounded(operation, this.#send(operation, text, params, after));
  }

  // The statement itself, unbounded: it may still run and commit after #bounded gave up on it.
  // `after`: a statement that must have settled before this one is sent.
  #send(operation: string, text: string, params: unknown[], after?: Promise<unknown>): Promise<unknown[]> {
    if (this.#closing) return Promise.reject(new Error(`PostgresPaymentsStore: ${operation} called after close()`));
    const pending = Promise.all([this.#database(), after]).then(async ([db]) => {
      await this.#ensureTables(db);
      const result = await db.query(text, params);
      return Array.isArray(result?.rows) ? result.rows : [];
    });
    // The late result of a timed-out query is dropped, not left as an unhandled rejection.
    pending.catch(() => undefined);
    return pending;
  }

  #bounded(operation: string, pending: Promise<unknown[]>): Promise<unknown[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`PostgresPaymentsStore: ${operation} timed out after ${this.#timeoutMs} ms (is the database reachable?)`));
      }, this.#timeoutMs);
      // A pending store call must never be what keeps the process alive.
      timer.unref();
    });
    return Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
  }

  // A claim statement is remembered until it settles, whether or not its caller still waits: a
  // claim that timed out on our side may still be queued for a connection or in flight, and
  // commit after the caller's release() ran on another connection, blocking the payment for a
  // whole lease. release() of the same (key, owner) is sent only once it settled (see release).
  #trackClaim(eventKey: string, owner: string, sent: Promise<unknown[]>): void {
    const id = claimId(eventKey, owner);
    const previous = this.#claimsInFlight.get(id);
    const tracked = previous ? Promise.allSettled([previous, sent]) : sent;
    this.#claimsInFlight.set(id, tracked);
    const forget = () => {
      if (this.#claimsInFlight.get(id) === tracked) this.#claimsInFlight.delete(id);
    };
    tracked.then(forget, forget);
  }

  #database(): Promise<PostgresQueryable> {
    if (this.#given) return Promise.resolve(this.#given);
    this.#pool ??= this.#createPool();
    return this.#pool;
  }

  async #createPool(): Promise<OwnedPool> {
    // Imported here, not at the top: hosts that pass a PGlite or their own pool need no `pg`.
    const mod = (await import('pg')) as unknown as { default?: { Pool: PoolConstructor }; Pool?: PoolConstructor };
    const Pool = mod.Pool ?? mod.default?.Pool;
    if (!Pool) throw new Error('PostgresPaymentsStore: the installed `pg` has no Pool');
    const pool = new Pool({
      connectionString: this.#connectionString,
      connectionTimeoutMillis: Math.ceil(this.#timeoutMs),
      // The server gives up too, so a statement the store stopped waiting for does not run on.
      statement_timeout: Math.ceil(this.#timeoutMs),
      ...this.#options.poolOptions,
    });
    // An idle connection dropped by the server is emitted on the pool; unheard, it would crash
    // the process. The pool replaces the connection by itself.
    pool.on('error', (error) => this.#logger.error(`PostgreSQL store connection failed: ${error.message}`));
    return pool;
  }

  #ensureTables(db: PostgresQueryable): Promise<void> {
    if (!this.#createTables) return Promise.resolve();
    this.#ready ??= db.query(this.#ensureSql, []).then(
      () => undefined,
      (error: unknown) => {
        // Tried again by the next operation: the database may just not be up yet.
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }
}

// NUL cannot occur in a PostgreSQL text value, so the pair cannot collide.
const claimId = (eventKey: string, owner: string): string => `${eventKey}\u0000${owner}`;

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
