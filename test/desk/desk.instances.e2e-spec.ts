import { afterAll, beforeAll, expect, it, jest } from '@jest/globals';
import { describeWithService, redisAvailable } from '../support/services.js';
import { formToken, get, post, type DeskHarness, type Seeded } from './desk-scenario.js';
import { DESK_HOSTS, sharedRedis, startDesk, type RunningDesk } from './desk-hosts.js';

// "Run again" and "refund" under a double submit across two instances of each front end (Express,
// Nest on Express, Nest on Fastify) on one Redis store, behind a balancer that sends the two posts
// to the two instances: each acts once, and each answer says what happened (the browser shows the
// second one). Two first refunds at the very same instant send none, a known bug of the refund
// record (test/settlement/refund-race.spec.ts): here the second arrives while the first is on its way.

jest.setTimeout(60_000);
const redisUp = await redisAvailable();

for (const host of DESK_HOSTS) {
  describeWithService(redisUp, 'Redis is not reachable')(`the desk's actions across two instances (${host})`, () => {
    const redis = sharedRedis('instances');
    let running: RunningDesk;
    let harness: DeskHarness;
    let seeded: Seeded;
    const pay = (id: string) => `${harness.desk}/payments/${encodeURIComponent(id)}`;
    /** The posts of `path` the balancer passed on, as `<instance> <status>`. */
    const passed = (path: string) =>
      running
        .balancer!.passed.filter((p) => p.method === 'POST' && p.path === path)
        .map((p) => `${p.instance} ${p.status}`)
        .sort();
    const done = (answers: Response[]) =>
      answers.map((r) => [r.status, r.headers.get('location')?.replace(/.*\?done=/, '')]).sort();

    beforeAll(async () => {
      running = await startDesk(host, 'i', redis.store);
      ({ harness, seeded } = running);
    });

    afterAll(async () => {
      await running?.close();
      await redis.cleanup();
    });

    it('runs the handlers of a stuck payment once under a double submit reaching both instances', async () => {
      harness.failing.delete(seeded.stuckOrder);
      const token = formToken(await (await get(pay(seeded.stuck), 'alice')).text());
      const action = `${pay(seeded.stuck)}/run-handlers`;
      const answers = await Promise.all([1, 2].map(() => post(action, 'alice', { _csrf: token })));
      expect(passed(new URL(action).pathname)).toEqual(['0 303', '1 303']);
      expect(harness.settled.get(seeded.stuck)).toBe(1);
      expect(done(answers)).toEqual(expect.arrayContaining([[303, 'handled']]));
      expect(done(answers).map(([, d]) => d)).not.toContain('check-failed');
      const page = await (await get(pay(seeded.stuck), 'alice')).text();
      expect(page.split('Checked now and handlers run from the desk by Alice: handled').length).toBe(2);
    });

    it('refunds a duplicate once when the second submit reaches the other instance while the refund is on its way', async () => {
      const { sandbox } = harness;
      const refunds = () => sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment').length;
      // The service is slow to answer the refund: the second post arrives while it is on its way.
      sandbox.fault('/api/v2/refund_payment', { delayMs: 800, times: 1 });
      const token = formToken(await (await get(pay(seeded.duplicate), 'alice')).text());
      const action = `${pay(seeded.duplicate)}/refund`;
      const first = post(action, 'alice', { _csrf: token });
      while (refunds() === 0) await new Promise((r) => setTimeout(r, 20));
      const answers = [await post(action, 'alice', { _csrf: token }), await first];
      // Whichever answer the browser shows (the second), it says the duplicate was refunded, never
      // that a refund's answer was lost; the timeline keeps the refund once.
      expect({ passed: passed(new URL(action).pathname), refunds: refunds(), done: done(answers) }).toEqual({
        passed: ['0 303', '1 303'],
        refunds: 1,
        done: [
          [303, 'refunded'],
          [303, 'refunded-earlier'],
        ],
      });
      expect(await harness.client.getOutcome(seeded.duplicate)).toMatchObject({ refundState: 'refunded' });
      const page = await (await get(pay(seeded.duplicate), 'alice')).text();
      expect(page).toMatch(/Refunded by the service: refund /);
      expect(page.match(/Refund of the duplicate asked from the desk by Alice: [a-z-]+/g)).toEqual([
        'Refund of the duplicate asked from the desk by Alice: refunded',
      ]);
    });
  });
}
