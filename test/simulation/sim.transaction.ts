import type { PaymentsStore, OrderLedger } from '../../lib/core/store/store.ports.js';
import type { OrderSettlement, OutcomeFinish } from '../../lib/core/store/store.types.js';

/*
 * The transactional mode's database, as the simulation models it: the shop's tables and the
 * plugin's store in one database (`PostgresPaymentsStore(pool, { transactional: true })`), where
 * what a transaction writes (the handlers' rows, the order's settlement, the done marker, the
 * queue removal and the outcome record) is invisible to the others until it commits, and
 * vanishes when it rolls back: a throw, a crash of its instance (the server ends a dead client's
 * transaction), the database going down. A row a transaction wrote is locked until it ends: the
 * order's settlement (another transaction settling that order waits for it, as PostgreSQL's
 * `INSERT ... ON CONFLICT` does) and the payment's claim once its done marker is written.
 *
 * The inbox model uses the same database as the host's own, apart from the store: the handlers'
 * rows and the inbox row commit together, and the store's done marker follows in a separate
 * step, so a crash between the two leaves the row and not the marker.
 */

/** What one handler run wrote through its transaction. */
export interface EffectRow {
  paymentId: string;
  /** The event whose handler wrote it. */
  name: string;
  /** Virtual time the handler run began. */
  startedAt: number;
}

/** One committed handler run of a payment: the rows it wrote, committed together. */
export interface CommittedRun {
  /** The instance whose transaction committed it. */
  instance: number;
  name: string;
  startedAt: number;
  rows: number;
  committedAt: number;
}

/** One open (or ended) transaction of an instance. */
export class SimTransaction {
  state: 'open' | 'committed' | 'rolled-back' = 'open';
  readonly rows: EffectRow[] = [];
  readonly orders: Array<{ orderKey: string; settlement: OrderSettlement; ttlMs: number }> = [];
  finish?: OutcomeFinish;
  /** The inbox rows it inserted (the inbox model: payments whose handlers it runs). */
  readonly inboxRows: string[] = [];
  /** Rows this transaction holds locked until it ends. */
  readonly locks = new Set<string>();
  /** Payments it touched (for the count of rollbacks). */
  readonly payments = new Set<string>();
  readonly ended: Promise<void>;
  #end!: () => void;

  constructor(
    readonly instance: number,
    readonly beganAt: number,
  ) {
    this.ended = new Promise<void>((resolve) => (this.#end = resolve));
  }

  /** @internal */
  close(state: 'committed' | 'rolled-back'): void {
    this.state = state;
    this.#end();
  }
}

/** The claims' table of the simulation's memory store (read without taking a claim: a row's state, as SQL sees it). */
interface ClaimsTable {
  claims: Map<string, { owner: string; expiresAt: number }>;
  done: { has(key: string): boolean };
}

export class SimDatabase {
  /** Committed handler runs, per payment. */
  readonly committed = new Map<string, CommittedRun[]>();
  /** The inbox's committed rows (the inbox model: the host's database, apart from the store). */
  readonly inbox = new Set<string>();
  /** Commits whose answer was lost, per payment they touched (the inbox model: the next attempt verifies again). */
  readonly unanswered = new Map<string, number>();
  /** Transactions rolled back, per payment they touched. */
  readonly rollbacks = new Map<string, number>();
  /** Told of each committed run (the history's bookkeeping of handled payments). */
  onCommit?: (paymentId: string, run: CommittedRun) => void;
  /** Told of what each transaction did (SIM_DEBUG traces). */
  trace?: (paymentId: string, what: string) => void;
  readonly #locks = new Map<string, SimTransaction>();

  constructor(
    private readonly store: PaymentsStore & OrderLedger,
    private readonly now: () => number,
  ) {}

  begin(instance: number): SimTransaction {
    return new SimTransaction(instance, this.now());
  }

  /** The open transaction holding `row` locked, if any. */
  lockedBy(row: string): SimTransaction | undefined {
    const holder = this.#locks.get(row);
    return holder?.state === 'open' ? holder : undefined;
  }

  /** Resolves once no other transaction holds `row`. */
  async unlocked(row: string, mine?: SimTransaction): Promise<void> {
    for (let holder = this.lockedBy(row); holder && holder !== mine; holder = this.lockedBy(row)) await holder.ended;
  }

  /** A handler's row, written through its transaction. */
  write(tx: SimTransaction, row: EffectRow): void {
    tx.rows.push(row);
    tx.payments.add(row.paymentId);
  }

  /**
   * The order's settlement through the transaction: the committed one holds, else this one (first
   * writer wins). `locked`: another open transaction holds the order's row; wait for it, then ask again.
   */
  async settleOrder(
    tx: SimTransaction,
    orderKey: string,
    settlement: OrderSettlement,
    ttlMs: number,
  ): Promise<OrderSettlement | { locked: SimTransaction }> {
    const row = `order:${orderKey}`;
    const holder = this.lockedBy(row);
    if (holder && holder !== tx) return { locked: holder };
    this.#lock(tx, row);
    tx.payments.add(settlement.paymentId);
    const mine = tx.orders.find((o) => o.orderKey === orderKey);
    if (mine) return { ...mine.settlement };
    const held = await this.store.findOrderSettlement(orderKey);
    if (held) return held;
    tx.orders.push({ orderKey, settlement: { ...settlement }, ttlMs });
    return { ...settlement };
  }

  /**
   * The inbox row of a payment through the transaction, under its unique key: `exists` when a
   * committed row holds the key; `locked` while another open transaction inserted it (wait for it
   * to end, then ask again, as the unique index makes the insert wait).
   */
  insertInbox(tx: SimTransaction, paymentId: string): 'inserted' | 'exists' | { locked: SimTransaction } {
    tx.payments.add(paymentId);
    if (this.inbox.has(paymentId) || tx.inboxRows.includes(paymentId)) return 'exists';
    const holder = this.lockedBy(`inbox:${paymentId}`);
    if (holder && holder !== tx) return { locked: holder };
    this.#lock(tx, `inbox:${paymentId}`);
    tx.inboxRows.push(paymentId);
    this.trace?.(paymentId, `#${tx.instance} inbox row inserted`);
    return 'inserted';
  }

  /** The done marker through the transaction: written when `finish.owner` still holds the claim. */
  finishOutcome(tx: SimTransaction, finish: OutcomeFinish): boolean {
    tx.payments.add(finish.record.paymentId);
    const table = this.store as unknown as ClaimsTable;
    const claim = table.claims.get(finish.eventKey);
    const held =
      !table.done.has(finish.eventKey) &&
      claim !== undefined &&
      claim.owner === finish.owner &&
      claim.expiresAt > this.now();
    this.trace?.(finish.record.paymentId, `#${tx.instance} in-transaction finishOutcome: ${held ? 'held' : 'lost'}`);
    if (!held) return false;
    this.#lock(tx, `claim:${finish.eventKey}`);
    tx.finish = finish;
    return true;
  }

  /** Applies everything the transaction wrote, at once. */
  async commit(tx: SimTransaction): Promise<void> {
    if (tx.state !== 'open') throw new Error(`commit of a transaction ${tx.state}`);
    for (const o of tx.orders) await this.store.settleOrder(o.orderKey, o.settlement, o.ttlMs);
    for (const id of tx.inboxRows) this.inbox.add(id);
    if (tx.finish) {
      // Its row is locked since the done marker was written: the claim is still this owner's.
      if ((await this.store.claim(tx.finish.eventKey, tx.finish.owner, 60_000)) !== 'claimed')
        throw new Error(`the simulation's database lost the locked claim ${tx.finish.eventKey}`);
      await this.store.finishOutcome(tx.finish);
    }
    const byPayment = new Map<string, EffectRow[]>();
    for (const row of tx.rows) byPayment.set(row.paymentId, [...(byPayment.get(row.paymentId) ?? []), row]);
    for (const [paymentId, rows] of byPayment) {
      const run: CommittedRun = {
        instance: tx.instance,
        name: rows[0].name,
        startedAt: rows[0].startedAt,
        rows: rows.length,
        committedAt: this.now(),
      };
      this.committed.set(paymentId, [...(this.committed.get(paymentId) ?? []), run]);
      this.onCommit?.(paymentId, run);
    }
    for (const id of tx.payments) this.trace?.(id, `#${tx.instance} COMMIT (${tx.rows.length} rows)`);
    this.#end(tx, 'committed');
  }

  /** Notes a commit whose answer was lost. */
  lostAnswer(tx: SimTransaction): void {
    for (const id of tx.payments) this.unanswered.set(id, (this.unanswered.get(id) ?? 0) + 1);
  }

  /** Discards what the transaction wrote (nothing when it already ended). */
  rollback(tx: SimTransaction): void {
    if (tx.state !== 'open') return;
    for (const id of tx.payments) {
      this.rollbacks.set(id, (this.rollbacks.get(id) ?? 0) + 1);
      this.trace?.(id, `#${tx.instance} ROLLBACK`);
    }
    this.#end(tx, 'rolled-back');
  }

  #lock(tx: SimTransaction, row: string): void {
    this.#locks.set(row, tx);
    tx.locks.add(row);
  }

  #end(tx: SimTransaction, state: 'committed' | 'rolled-back'): void {
    for (const row of tx.locks) if (this.#locks.get(row) === tx) this.#locks.delete(row);
    tx.close(state);
  }
}
