import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PGlite } from '@electric-sql/pglite';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type PaymentsClient } from '../../lib/express/index.js';
import { BasicPaymentsStore, MemoryPaymentsStore, STORE_METHODS, type PaymentsStore } from '../../lib/store/index.js';
import { PostgresPaymentsStore, type PostgresQueryable } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { FakeService } from '../support/fake-service.js';
import {
  answerVerify,
  DelegatingStore,
  generateVia,
  postJson,
  startRouter,
  fakeServiceClient,
} from '../support/outcome-kit.js';
import { itWithService, POSTGRES_URL, REDIS_URL, postgresAvailable, redisAvailable } from '../support/services.js';

// Store round trips per webhook confirmation (a signed token with its binding, verified SUCCESS,
// one handler): what the store costs on the hot path, counted at the wire of each backend.

const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);
const SECRET = 'whsec_round_trips_0123456789abcdef012345';
let fake: FakeService;

beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(async () => {
  await fake.close();
});

interface Counted {
  store: PaymentsStore;
  count: () => number;
  close: () => Promise<void>;
}

function newClient(store: PaymentsStore): PaymentsClient {
  return fakeServiceClient(fake, SECRET, { store });
}

async function perConfirmation(counted: Counted): Promise<{ router: number; split: number }> {
  const client = newClient(counted.store);
  let handled = 0;
  const router = await startRouter({ client, onPaymentConfirmed: () => void handled++ });
  try {
    const once = async (via: 'router' | 'split') => {
      const p = await generateVia(client, fake, `pay_rt_${randomUUID()}`, { amount: '12500' });
      answerVerify(fake, p.paymentId, { status: 'SUCCESS', amount: 12500 });
      const before = counted.count();
      if (via === 'router') {
        const answer = await postJson(`${router.url}/${p.token}`, { payment_id: p.paymentId });
        expect(answer.status).toBe(200);
      } else {
        // What the Nest guard and controller do: authenticate, then deliver (which claims).
        const auth = await client.webhooks.authenticate({
          query: {},
          body: { payment_id: p.paymentId },
          pathToken: p.token,
        });
        expect(auth.ok).toBe(true);
        if (auth.ok) expect((await client.webhooks.deliver(auth)).status).toBe(200);
      }
      return counted.count() - before;
    };
    await once('router'); // warms up (script loading, table creation)
    const result = { router: await once('router'), split: await once('split') };
    expect(handled).toBe(3);
    return result;
  } finally {
    await router.close();
    await client.close();
    await counted.close();
  }
}

// Before the combined store operations (findBindingAndClaim, finishOutcome), every backend made
// 6: findBinding, claim, markDone, removePending, getOutcome, saveOutcome. Now 2, through
// handle() (the Express router) and through authenticate() then deliver() (the
// Nest guard and controller).
const COMBINED = { router: 2, split: 2 };
// A custom store on BasicPaymentsStore: its combined operations make the separate calls.
const FALLBACK = { router: 6, split: 6 };

/** Counts calls of the store's methods made from outside it. */
function countingProxy(store: PaymentsStore): { store: PaymentsStore; count: () => number } {
  let calls = 0;
  const methods = new Set<string>([...STORE_METHODS, 'findBindingAndClaim', 'finishOutcome']);
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || !methods.has(String(property))) return value;
      return (...args: unknown[]) => {
        calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, count: () => calls };
}

describe('store round trips per webhook confirmation', () => {
  it('memory: store calls', async () => {
    const counted = countingProxy(new MemoryPaymentsStore());
    await expect(perConfirmation({ ...counted, close: async () => {} })).resolves.toEqual(COMBINED);
  });

  it('a custom store on BasicPaymentsStore: the separate calls, same outcome', async () => {
    const store = new DelegatingStore(new MemoryPaymentsStore());
    // Its combined operations are the base class's, made of the calls counted here.
    expect(store.finishOutcome).toBe(BasicPaymentsStore.prototype.finishOutcome);
    expect(store.findBindingAndClaim).toBe(BasicPaymentsStore.prototype.findBindingAndClaim);
    await expect(perConfirmation({ store, count: () => store.calls.length, close: async () => {} })).resolves.toEqual(
      FALLBACK,
    );
  });

  itWithService(redisUp, `no Redis at ${REDIS_URL}`)('Redis: commands', async () => {
    const redis = new Redis(REDIS_URL);
    let commands = 0;
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (command: Parameters<Redis['sendCommand']>[0]) => {
      commands++;
      return send(command);
    };
    const store = new RedisPaymentsStore(redis, { keyPrefix: `rt:${randomUUID()}:` });
    await expect(
      perConfirmation({ store, count: () => commands, close: async () => void (await redis.quit()) }),
    ).resolves.toEqual(COMBINED);
  });

  it('PGlite: statements', async () => {
    const db = new PGlite();
    // PGlite starts its WebAssembly engine in the background, blocking the event loop for seconds
    // on a loaded machine: counted from when it is ready, not from a first call that would time out.
    await db.waitReady;
    let statements = 0;
    const counting: PostgresQueryable = { query: (text, params) => (statements++, db.query(text, params)) };
    const store = new PostgresPaymentsStore(counting);
    await expect(perConfirmation({ store, count: () => statements, close: () => db.close() })).resolves.toEqual(
      COMBINED,
    );
  });

  itWithService(postgresUp, `no PostgreSQL at ${POSTGRES_URL}`)('PostgreSQL: statements', async () => {
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
    let statements = 0;
    const counting: PostgresQueryable = {
      query: (text, params) => (statements++, pool.query(text, params as unknown[])),
    };
    const schema = `rt_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const store = new PostgresPaymentsStore(counting, { schema });
    const counted = perConfirmation({
      store,
      count: () => statements,
      close: async () => {
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await pool.end();
      },
    });
    await expect(counted).resolves.toEqual(COMBINED);
  });
});
