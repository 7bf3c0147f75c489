import {
  parseRefundRecord,
  positiveMs,
  refundRecordText,
  type RefundLedger,
  type RefundRecord,
  type RefundSwap,
} from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';
import { writeThenWait } from './redis.replicas.js';

/**
 * Compare-and-set on the record's owner. KEYS[1] the record's key; ARGV[1] the new record, ARGV[2]
 * its TTL in ms, ARGV[3] the owner expected, ARGV[4] '1' when an owner is expected ('0': no record
 * may be held). Replies `{1}` when written, else `{0}` or `{0, held}`.
 */
const SWAP_REFUND_LUA = `
local held = redis.call('GET', KEYS[1])
local owner = nil
if held then
  local ok, record = pcall(cjson.decode, held)
  if ok and type(record) == 'table' and type(record['owner']) == 'string' then owner = record['owner'] end
end
if (ARGV[4] == '0' and not held) or (ARGV[4] == '1' and owner == ARGV[3]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
if held then return {0, held} end
return {0}`;

/**
 * The {@link RefundLedger} of `RedisPaymentsStore`: one key per payment refunded (under
 * `keyPrefix`, hash-tagged by it so that each script touches one slot), `{refund:<refundKey>}:record`
 * (the record, JSON, PX). With `replicas: { wait }` a write counts only once replicas have it, as an
 * order's settlement: a promotion must not lose the record that a refund is on its way.
 */
export class RedisRefundLedger implements RefundLedger {
  /** @param db the store's connection */
  constructor(private readonly db: RedisConnection) {}

  /** @inheritdoc */
  async findRefund(refundKey: string): Promise<RefundRecord | undefined> {
    const raw = await this.db.run('findRefund', () => this.db.client.get(this.db.keys.refund(refundKey)));
    return raw === null ? undefined : parseRefundRecord(raw);
  }

  /** @inheritdoc */
  async swapRefund(
    refundKey: string,
    record: RefundRecord,
    expectedOwner: string | undefined,
    ttlMs: number,
  ): Promise<RefundSwap> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    const key = this.db.keys.refund(refundKey);
    const text = refundRecordText(record);
    const args = [text, px, expectedOwner ?? '', expectedOwner === undefined ? '0' : '1'];
    const reply =
      this.db.replicas.wait > 0
        ? await writeThenWait(this.db, 'swapRefund', `the refund record of ${JSON.stringify(refundKey)}`, {
            lua: SWAP_REFUND_LUA,
            keys: [key],
            args,
          })
        : await this.db.run('swapRefund', () => this.db.client.eval(SWAP_REFUND_LUA, 1, key, ...args));
    if (!Array.isArray(reply)) throw new Error('RedisPaymentsStore: unexpected reply to swapRefund');
    if (Number(reply[0]) === 1) return { swapped: true, held: parseRefundRecord(text) };
    return { swapped: false, held: reply[1] === undefined ? undefined : parseRefundRecord(String(reply[1])) };
  }
}
