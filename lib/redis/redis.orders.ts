import { parseOrderCheckout, parseOrderSettlement, settlementText } from '../core/store/order.values.js';
import { positiveMs } from '../core/store/store.rules.js';
import type { OrderCheckout, OrderSettlement } from '../core/store/store.types.js';
import type { OrderLedger } from '../core/store/store.ports.js';
import type { RedisConnection } from './redis.connection.js';

/**
 * First writer wins: the order's settlement is set only when absent, and the value that holds is
 * returned. One key, so one hash slot under Redis Cluster.
 */
const SETTLE_ORDER_LUA = `
local held = redis.call('GET', KEYS[1])
if held then return held end
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
    const reply = await this.db.run('settleOrder', () =>
      this.db.client.eval(SETTLE_ORDER_LUA, 1, this.#key(orderKey, 'settled'), settlementText(settlement), px),
    );
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
