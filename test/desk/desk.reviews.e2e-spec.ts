import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { PaymentsDeskEngine, type DeskRequest } from '../../lib/desk/desk.handler.js';
import { createPaymentsClient, type PaymentsClient } from '../../lib/express/index.js';
import { PostgresPaymentsStore } from '../../lib/postgres/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import type { OutcomeRecord, PaymentsStore } from '../../lib/store/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import {
  describeWithService,
  POSTGRES_URL,
  postgresAvailable,
  REDIS_URL,
  redisAvailable,
} from '../support/services.js';

// "Mark reviewed" under a double submit across two instances of the desk: two clients, each with
// its own connection to one shared store (Redis, PostgreSQL), post the same review at once.

const FORM_KEY = 'desk-reviews-test-form-key-0123456789abcdef';
const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);

function clientOn(store: PaymentsStore): PaymentsClient {
  return createPaymentsClient({
    publicKey: 'pk_desk_reviews',
    privateKey: 'sk_desk_reviews_private',
    baseUrl: 'http://127.0.0.1:9',
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    webhook: { publicUrl: 'https://shop.example/hook', secret: 'whsec_desk_reviews_0123456789abcdef0123' },
    reconciliation: { enabled: false },
    logger: quietLogger(),
    store,
  });
}

function request(method: string, path: string, form?: Record<string, string>): DeskRequest {
  return { method, path, query: new URLSearchParams(), form, header: () => undefined, base: '/desk' };
}

function mismatch(paymentId: string, attempts: number): OutcomeRecord {
  return {
    paymentId,
    outcome: 'mismatch',
    status: 'SUCCESS',
    source: 'webhook',
    handlers: 'none',
    attempts,
    amount: '5000',
    developerTrackingId: `order-${paymentId}`,
    updatedAt: new Date().toISOString(),
  };
}

for (const [name, up, make] of [
  ['Redis', redisUp, (prefix: string) => new RedisPaymentsStore(REDIS_URL, { keyPrefix: `desk-h:${prefix}:` })],
  [
    'PostgreSQL',
    postgresUp,
    (prefix: string) => new PostgresPaymentsStore(POSTGRES_URL, { schema: `desk_reviews_${prefix}` }),
  ],
] as const) {
  describeWithService(up, `${name} is not reachable`)(`mark reviewed across two desks on one ${name} store`, () => {
    const prefix = randomUUID().slice(0, 8);
    let stores: PaymentsStore[];
    let clients: PaymentsClient[];
    let desks: PaymentsDeskEngine[];

    beforeAll(async () => {
      stores = [make(prefix), make(prefix)];
      clients = stores.map(clientOn);
      desks = clients.map((c) => new PaymentsDeskEngine(c, { formKey: FORM_KEY }, quietLogger()));
    });

    afterAll(async () => {
      for (const client of clients ?? []) await client.close();
      if (name === 'PostgreSQL') {
        const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
        await pool.query(`DROP SCHEMA IF EXISTS "desk_reviews_${prefix}" CASCADE`);
        await pool.end();
      }
    });

    it('records one review under a double submit, moves the payment to Reviewed, and brings it back when it needs something else', async () => {
      const paymentId = `pay_${randomUUID().replaceAll('-', '')}`;
      await stores[0].saveOutcome(mismatch(paymentId, 1), 3_600_000);
      const page = (await desks[0].handle(request('GET', `/payments/${paymentId}`), 'alice')).body;
      const token = /name="_csrf" value="([^"]+)"/.exec(page)![1];
      expect(page).toContain(`/desk/payments/${paymentId}/review`);
      const answers = await Promise.all(
        desks.map((desk) => desk.handle(request('POST', `/payments/${paymentId}/review`, { _csrf: token }), 'alice')),
      );
      const done = answers.map((a) => /done=([a-z-]+)$/.exec(a.headers.location ?? '')?.[1]).sort();
      expect(done).toEqual(['reviewed', 'reviewed-earlier']);
      const overview = (await desks[1].handle(request('GET', '/'), { id: 'bob', name: 'Bob' })).body;
      const section = (id: string) => new RegExp(`<section id="${id}">(.*?)</section>`, 's').exec(overview)?.[1] ?? '';
      expect(section('mismatches')).not.toContain(paymentId);
      expect(section('reviewed')).toContain(paymentId);
      expect(section('reviewed')).toContain('alice, <time>');
      const after = (await desks[1].handle(request('GET', `/payments/${paymentId}`), 'bob')).body;
      expect(after).toMatch(/Reviewed by alice at <time>/);
      expect(after).not.toContain(`/desk/payments/${paymentId}/review"`);
      // A new attempt that still ends in a mismatch: what it needs changed, it is back in its list.
      await stores[1].saveOutcome(mismatch(paymentId, 2), 3_600_000);
      const again = (await desks[0].handle(request('GET', '/'), 'alice')).body;
      expect(/<section id="mismatches">(.*?)<\/section>/s.exec(again)?.[1]).toContain(paymentId);
      expect(/<section id="reviewed">(.*?)<\/section>/s.exec(again)?.[1]).not.toContain(paymentId);
    });
  });
}
