import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import {
  PostgresPaymentsStore,
  type PostgresPaymentsStoreOptions,
  type PostgresQueryable,
} from '../../lib/postgres/index.js';

const LONG_MS = 60_000;

/**
 * A claim that times out on the store's side but commits later (it waited for a pool connection,
 * or the network was slow), then released by the caller as the outcome processor does (#13.4):
 * the release must free it rather than run first on another connection and let it block
 * redeliveries for its whole lease. Claim statements are held back by a gate the test opens.
 * @param db the database the store runs on (a PGlite, a pg Pool)
 * @param options the store's names
 */
export async function expectLateClaimReleased(
  db: PostgresQueryable,
  options: PostgresPaymentsStoreOptions,
): Promise<void> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const log: string[] = [];
  const isClaim = (text: string) => /^INSERT INTO \S+ AS e \(event_key/.test(text);
  const gated: PostgresQueryable = {
    async query(text, params) {
      if (isClaim(text)) await gate;
      const result = await db.query(text, params);
      log.push(`${isClaim(text) ? 'claim' : text.split(' ')[0]} ${String(params?.[0])} ${String(params?.[1])}`);
      return result;
    },
  };
  await new PostgresPaymentsStore(db, options).ping(); // creates the tables, with no short timeout
  const store = new PostgresPaymentsStore(gated, { ...options, createTables: false, operationTimeoutMs: 100 });
  const [released, control] = [`outcome:${randomUUID()}`, `outcome:${randomUUID()}`];

  await expect(store.claim(released, 'attempt-1', LONG_MS)).rejects.toThrow(/claim timed out/);
  await expect(store.claim(control, 'attempt-2', LONG_MS)).rejects.toThrow(/claim timed out/);
  // What the processor does after a timed-out claim; the release may time out as well.
  await store.release(released, 'attempt-1').catch(() => undefined);
  open();
  // Until both late claims and a release of the first have reached the database (or 2 s).
  const landed = () =>
    log.includes(`claim ${control} attempt-2`) &&
    log.includes(`DELETE ${released} attempt-1`) &&
    log.includes(`claim ${released} attempt-1`);
  for (let i = 0; i < 100 && !landed(); i++) await new Promise((r) => setTimeout(r, 20));

  // The late claims did land: the one not released blocks other owners for its lease...
  await expect(store.claim(control, 'redelivery', LONG_MS)).resolves.toBe('busy');
  // ...and the released one lets the redelivery in, because its release went out after it.
  expect(log.indexOf(`DELETE ${released} attempt-1`)).toBeGreaterThan(log.indexOf(`claim ${released} attempt-1`));
  await expect(store.claim(released, 'redelivery', LONG_MS)).resolves.toBe('claimed');
}
