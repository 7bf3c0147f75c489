import { describe, expect, it } from '@jest/globals';
import { SHORT_MS, sleep, whileFresh } from '../../lib/store/contract.support.js';

// The store contract's "a short-lived thing is still there right after its write" checks only
// prove something within SHORT_MS of the write: a slow run is tried again, a quick failure is a
// real one (a store that lost the thing at once).
describe('the store contract: checks of what lives SHORT_MS', () => {
  it('fails at once when the check failed within SHORT_MS', async () => {
    let runs = 0;
    // A clock that stands still: the run failed 0 ms after it started, however busy the machine.
    await expect(
      whileFresh(
        async () => {
          runs += 1;
          throw new Error('gone already');
        },
        () => 0,
      ),
    ).rejects.toThrow('gone already');
    expect(runs).toBe(1);
  });

  it('runs again, with fresh keys, a check that failed after SHORT_MS, and returns the run that held', async () => {
    const keys: string[] = [];
    const key = await whileFresh(async () => {
      const k = `k${keys.length}`;
      keys.push(k);
      if (keys.length < 3) {
        await sleep(SHORT_MS + 20); // the machine was slow: the thing expired before the check
        throw new Error(`${k} expired before the check`);
      }
      return k;
    });
    expect({ key, keys }).toEqual({ key: 'k2', keys: ['k0', 'k1', 'k2'] });
  });

  it('gives up after five slow runs with the last failure', async () => {
    let runs = 0;
    await expect(
      whileFresh(async () => {
        runs += 1;
        await sleep(SHORT_MS + 20);
        throw new Error(`slow ${runs}`);
      }),
    ).rejects.toThrow('slow 5');
    expect(runs).toBe(5);
  });
});
