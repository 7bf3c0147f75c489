import {
  parseOrderCheckout,
  parseOrderSettlement,
  positiveMs,
  settlementText,
  type OrderCheckout,
  type OrderLedger,
  type OrderSettlement,
} from '../core/store/index.js';
import type { RedisConnection } from './redis.connection.js';
import { writeThenWait } from './redis.replicas.js';

/**
 * First writer wins: the order's settlement is set only when absent, and the value that holds is
 * returned. One key, so one hash slot under Redis Cluster. KEYS[1] the order's key; ARGV[1] the
 * settlement, ARGV[2] its TTL in ms, ARGV[3] '1' when replicas are awaited: a settlement found
 * (written by another connection, maybe not replicated yet) is then written again as it is, with
 * the TTL it has left, so that the WAIT after the script covers it before anyone acts on it.
 */
const SETTLE_ORDER_LUA = `
local held = redis.call('GET', KEYS[1])
if held then
  if ARGV[3] == '1' then
    local ttl = redis.call('PTTL', KEYS[1])
    if ttl > 0 then redis.call('SET', KEYS[1], held, 'PX', ttl) else redis.call('SET', KEYS[1], held) end
  end
  return held
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]`;

/**
 * The {@link OrderLedger} of `RedisPaymentsStore`. Keys (under `keyPrefix`), both hash-tagged by
 * the order so that each operation touches one slot: `{order:<orderKey>}:settled` (the payment that
 * settled it, JSON, PX) and `{order:<orderKey>}:checkout` (its open checkout, JSON, PX).
 */
export class RedisOrderLedger implements OrderLedger {
  /** @param db the store's connection */
  constructor(private readonly db: RedisConnection) {}

  /** @inheritdoc */
  async settleOrder(orderKey: string, settlement: OrderSettlement, ttlMs: number): Promise<OrderSettlement> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    const key = this.#key(orderKey, 'settled');
    const text = settlementText(settlement);
    // The settlement decides which payment's handlers run: replicas (when awaited) have it first.
    const reply =
      this.db.replicas.wait > 0
        ? await writeThenWait(this.db, 'settleOrder', `the settlement of order ${JSON.stringify(orderKey)}`, {
            lua: SETTLE_ORDER_LUA,
            keys: [key],
            args: [text, px, '1'],
          })
        : await this.db.run('settleOrder', () => this.db.client.eval(SETTLE_ORDER_LUA, 1, key, text, px, '0'));
    const held = parseOrderSettlement(String(reply));
    if (!held)
      throw new Error(
        `RedisPaymentsStore: the settlement of order ${JSON.stringify(orderKey)} is not one this store wrote`,
      );
    return held;
  }

  /** @inheritdoc */
  async findOrderSettlement(orderKey: string): Promise<OrderSettlement | undefined> {
    const raw = await this.db.run('findOrderSettlement', () => this.db.client.get(this.#key(orderKey, 'settled')));
    return raw === null ? undefined : parseOrderSettlement(raw);
  }

  /** @inheritdoc */
  async saveCheckout(orderKey: string, checkout: OrderCheckout, ttlMs: number): Promise<void> {
    const px = positiveMs('RedisPaymentsStore', ttlMs, 'ttlMs');
    await this.db.run('saveCheckout', () =>
      this.db.client.set(this.#key(orderKey, 'checkout'), JSON.stringify(checkout), 'PX', px),
    );
  }

  /** @inheritdoc */
  async findCheckout(orderKey: string): Promise<OrderCheckout | undefined> {
    const raw = await this.db.run('findCheckout', () => this.db.client.get(this.#key(orderKey, 'checkout')));
    return raw === null ? undefined : parseOrderCheckout(raw);
  }

  #key(orderKey: string, what: 'settled' | 'checkout'): string {
    return this.db.keys.order(orderKey, what);
  }
}
