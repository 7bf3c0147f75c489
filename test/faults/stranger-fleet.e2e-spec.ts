import { afterAll, beforeAll, describe, expect, jest } from '@jest/globals';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { POSTGRES_URL, REDIS_URL, itWithService, postgresAvailable, redisAvailable } from '../support/services.js';
import { Fleet, type FleetStore } from './support/fleet.js';

// The verify calls strangers' invented ids cost are the fleet's budget, held in the store: real
// processes (four instances at once, then a fifth started after them, as after a restart) flooding
// their return pages with 2,000 ids in all cost at most 10 verify calls, on Redis and on PostgreSQL.

jest.setTimeout(120_000);
const fleet = new Fleet('strangers');
const [redisUp, postgresUp] = await Promise.all([redisAvailable(), postgresAvailable()]);

beforeAll(() => fleet.bundle(), 60_000);
afterAll(() => fleet.cleanup({ redis: redisUp, postgres: postgresUp }));

/** One instance, as a process of its own: asks `count` invented ids, then exits. */
function instance(env: Record<string, string>, prefix: string, count: number): Promise<string> {
  return fleet.start('stranger.mjs', { ...env, PREFIX: prefix, COUNT: String(count) }).done.then((output) => {
    if (!output.includes('ASKED')) throw new Error(`instance killed: ${output}`);
    return output;
  });
}

async function flood(store: FleetStore): Promise<void> {
  const sandbox = await PaymentsSandbox.start();
  try {
    const options = { ...fleet.storeEnv(store), SANDBOX_OPTIONS: JSON.stringify(sandbox.options()) };
    const outputs = await Promise.all([0, 1, 2, 3].map((i) => instance(options, `pay_${store}_fleet_${i}`, 400)));
    outputs.push(await instance(options, `pay_${store}_restarted`, 400));
    expect(outputs.map((o) => o.trim())).toEqual(Array.from({ length: 5 }, () => 'ASKED 400'));
    const verifies = sandbox.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/')).length;
    process.stdout.write(`\n${store}: 2,000 invented ids across 5 processes cost ${verifies} verify calls\n`);
    expect(verifies).toBeLessThanOrEqual(10);
  } finally {
    await sandbox.close();
  }
}

describe('strangers cannot spend the verify budget of a fleet: 4 processes and a restarted fifth, 2,000 invented ids', () => {
  itWithService(redisUp, `no Redis at ${REDIS_URL}`)('Redis: at most 10 verify calls', () => flood('redis'));
  itWithService(postgresUp, `no PostgreSQL at ${POSTGRES_URL}`)('PostgreSQL: at most 10 verify calls', () =>
    flood('postgres'),
  );
});
