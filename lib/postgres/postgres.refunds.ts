import {
  parseRefundRecord,
  positiveMs,
  refundRecordText,
  type RefundLedger,
  type RefundRecord,
  type RefundSwap,
} from '../core/store/index.js';
import type { PostgresConnection } from './postgres.connection.js';
import { valueOf } from './postgres.rows.js';
import type { StoreTables } from './postgres.schema.js';

const expiresIn = (param: string) => `statement_timestamp() + ${param}::double precision * interval '1 millisecond'`;

/** The statements of the refund ledger (values bound, table names quoted). */
export interface RefundStatements {
  /** The live record of a key. */
  findRefund: string;
  /** The write when no record is expected: only over none, or an expired one. Returns a row when written. */
  createRefund: string;
  /** The write over the expected owner's live record. Returns a row when written. */
  replaceRefund: string;
}

/** Builds the refund ledger's statements for a set of tables. */
export function refundStatements(t: Pick<StoreTables, 'refunds'>): RefundStatements {
  // Both writes are a compare-and-set under the row's lock: ON CONFLICT re-checks its WHERE on
  // the row as it stands once a concurrent writer committed, and so does the UPDATE.
  return {
    findRefund: `SELECT record::text AS value FROM ${t.refunds} WHERE refund_key = $1::text AND expires_at > statement_timestamp()`,
    createRefund: `INSERT INTO ${t.refunds} AS r (refund_key, owner, record, expires_at)
VALUES ($1::text, $2::text, $3::text::jsonb, ${expiresIn('$4')})
ON CONFLICT (refund_key) DO UPDATE SET owner = EXCLUDED.owner, record = EXCLUDED.record, expires_at = EXCLUDED.expires_at
WHERE r.expires_at <= statement_timestamp()
RETURNING 1 AS ok`,
    replaceRefund: `UPDATE ${t.refunds} SET owner = $2::text, record = $3::text::jsonb, expires_at = ${expiresIn('$4')}
WHERE refund_key = $1::text AND owner = $5::text AND expires_at > statement_timestamp()
RETURNING 1 AS ok`,
  };
}

/**
 * The {@link RefundLedger} of `PostgresPaymentsStore`: rows of `<prefix>refunds`, one per payment
 * refunded. Written outside the handlers' transaction in the transactional mode too: a refund sent
 * to the service is not undone by a rollback, so neither is its record.
 */
export class PostgresRefundLedger implements RefundLedger {
  readonly #sql: RefundStatements;

  /**
   * @param db the store's connection
   * @param tables the store's tables
   */
  constructor(
    private readonly db: PostgresConnection,
    tables: Pick<StoreTables, 'refunds'>,
  ) {
    this.#sql = refundStatements(tables);
  }

  /** @inheritdoc */
  async findRefund(refundKey: string): Promise<RefundRecord | undefined> {
    const rows = await this.db.query('findRefund', this.#sql.findRefund, [refundKey]);
    return rows.length === 0 ? undefined : parseRefundRecord(valueOf(rows[0]));
  }

  /** @inheritdoc */
  async swapRefund(
    refundKey: string,
    record: RefundRecord,
    expectedOwner: string | undefined,
    ttlMs: number,
  ): Promise<RefundSwap> {
    const ttl = positiveMs('PostgresPaymentsStore', ttlMs, 'ttlMs');
    const text = refundRecordText(record);
    const params = [refundKey, record.owner, text, ttl];
    const rows =
      expectedOwner === undefined
        ? await this.db.write('swapRefund', this.#sql.createRefund, params)
        : await this.db.write('swapRefund', this.#sql.replaceRefund, [...params, expectedOwner]);
    if (rows.length === 1) return { swapped: true, held: parseRefundRecord(text) };
    return { swapped: false, held: await this.findRefund(refundKey) };
  }
}
