import { describe, expect, it } from '@jest/globals';
import { resolveStoreOptions } from '../../lib/redis/redis.options.js';
import { replicationWarning } from '../../lib/redis/redis.replicas.js';

// What the store says at start-up of the master's replicas, against its `replicas` option, and
// the option's defaults and checks.

const info = (role: string, connected: number) =>
  `# Replication\r\nrole:${role}\r\nconnected_slaves:${connected}\r\nmaster_failover_state:no-failover\r\n`;

describe('replicationWarning', () => {
  const table: Array<[string, string, { wait: number; chosen: boolean }, RegExp | undefined]> = [
    ['a master alone, the default', info('master', 0), { wait: 0, chosen: false }, undefined],
    ['a master alone, wait: 0 chosen', info('master', 0), { wait: 0, chosen: true }, undefined],
    ['a master with a replica, the default', info('master', 1), { wait: 0, chosen: false }, /does not wait for them/],
    ['a master with a replica, wait: 0 chosen', info('master', 1), { wait: 0, chosen: true }, undefined],
    ['a master with a replica, wait: 1', info('master', 1), { wait: 1, chosen: true }, undefined],
    ['a master with two replicas, wait: 2', info('master', 2), { wait: 2, chosen: true }, undefined],
    [
      'a master with one replica, wait: 2',
      info('master', 1),
      { wait: 2, chosen: true },
      /fewer than replicas\.wait \(2\)/,
    ],
    [
      'a master alone, wait: 1',
      info('master', 0),
      { wait: 1, chosen: true },
      /every order settlement and done marker fails/,
    ],
    ['a replica answering', info('slave', 0), { wait: 1, chosen: true }, undefined],
    ['no INFO to read', '', { wait: 1, chosen: true }, undefined],
  ];
  it.each(table)('%s', (_label, text, replicas, expected) => {
    const warning = replicationWarning({ node: '127.0.0.1:6379', info: text }, replicas);
    if (expected === undefined) expect(warning).toBeUndefined();
    else expect(warning).toMatch(expected);
  });
});

describe('the replicas option', () => {
  it('defaults to waiting for none, for half of the operation timeout; counts who chose it', () => {
    expect(resolveStoreOptions({}).replicas).toEqual({ wait: 0, timeoutMs: 1000, chosen: false });
    expect(resolveStoreOptions({ operationTimeoutMs: 500, replicas: { wait: 1 } }).replicas).toEqual({
      wait: 1,
      timeoutMs: 250,
      chosen: true,
    });
    expect(resolveStoreOptions({ replicas: { wait: 0, timeoutMs: 20.7 } }).replicas).toEqual({
      wait: 0,
      timeoutMs: 20,
      chosen: true,
    });
  });

  it('refuses a wait that is not a whole number of replicas, and a timeout not below the operation timeout', () => {
    for (const wait of [-1, 1.5, Number.NaN, '1' as unknown as number])
      expect(() => resolveStoreOptions({ replicas: { wait } })).toThrow(RangeError);
    for (const timeoutMs of [0, -5, 2000, 5000, Number.POSITIVE_INFINITY])
      expect(() => resolveStoreOptions({ replicas: { wait: 1, timeoutMs } })).toThrow(RangeError);
  });
});
