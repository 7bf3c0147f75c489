import {
  type CheckoutOpen,
  type CheckoutOpening,
  type CheckoutSave,
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
import { SCRIPT_NAMES } from './redis.scripts.js';
import { parseOutcome } from './redis.values.js';

/** A character no payment id holds, marking where the id goes in a key built around it. */
const ID_MARK = '\u0000';

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
 * settled it, JSON, PX) and `{order:<orderKey>}:checkout` (its open checkout, JSON, PX); the
 * checkout's lock is `event:checkout:<orderKey>` in the single layout (the claim key of earlier
 * versions) and `{order:<orderKey>}:lock` in the cluster layout (its checkout's slot).
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

  /**
   * The order's lock and checkout in one script (one round trip). In the single layout the script
   * also reads the found payment's outcome record and cancellation note; in the cluster layout
   * they live in other slots, and the caller reads them (`standing` left out).
   */
  async openCheckout(open: CheckoutOpen): Promise<CheckoutOpening> {
    const px = positiveMs('RedisPaymentsStore', open.leaseMs, 'leaseMs');
    const keys = this.db.keys;
    // The note's key around the payment id: the order key of the note is the prefix and the id.
    const [noteHead, noteTail] = keys.order(`${open.cancellationPrefix}${ID_MARK}`, 'settled').split(ID_MARK);
    const reply = await this.db.run('openCheckout', () =>
      this.db.scripts[SCRIPT_NAMES.openCheckout](
        this.#key(open.orderKey, 'checkout'),
        keys.orderLock(open.orderKey),
        open.owner,
        px,
        keys.layout === 'single' ? '1' : '0',
        keys.outcomePrefix,
        noteHead,
        noteTail,
      ),
    );
    if (!Array.isArray(reply) || reply.length === 0)
      throw new Error('RedisPaymentsStore: unexpected reply to openCheckout');
    const [lock, raw, record, note] = reply.map((v) => String(v));
    if (lock !== 'claimed' && lock !== 'done' && lock !== 'busy')
      throw new Error(`RedisPaymentsStore: unexpected reply to openCheckout: ${lock}`);
    const checkout = raw === undefined ? undefined : parseOrderCheckout(raw);
    if (!checkout) return { lock };
    if (record === undefined || note === undefined) return { lock, checkout };
    const outcome = record === '' ? undefined : parseOutcome(record)?.outcome;
    const cancelled = note !== '' && parseOrderSettlement(note)?.paymentId === checkout.paymentId;
    return { lock, checkout, standing: { outcome, cancelled } };
  }

  /** The checkout saved (when given) and the lock freed if `owner` holds it, in one script (one round trip). */
  async closeCheckout(orderKey: string, owner: string, save?: CheckoutSave): Promise<void> {
    const px = save ? positiveMs('RedisPaymentsStore', save.ttlMs, 'ttlMs') : 1;
    await this.db.run('closeCheckout', () =>
      this.db.scripts[SCRIPT_NAMES.closeCheckout](
        this.#key(orderKey, 'checkout'),
        this.db.keys.orderLock(orderKey),
        owner,
        save ? JSON.stringify(save.checkout) : '',
        px,
      ),
    );
  }

  #key(orderKey: string, what: 'settled' | 'checkout'): string {
    return this.db.keys.order(orderKey, what);
  }
}
