import { describe, expect, it } from '@jest/globals';
import { hasHashTag, storeKeys } from '../../lib/redis/redis.connection.js';

// The store's key names: the single layout keeps the names of earlier versions; the cluster layout
// tags each key so that no script crosses slots. The slot of a key is the CRC16 of its hash tag
// (the first non-empty `{...}`), so a tag per payment spreads payments over the masters.

const all = (prefix: string, cluster: boolean) => {
  const k = storeKeys(prefix, cluster);
  return [
    k.layout,
    k.binding('tok'),
    k.event('outcome:pay_1'),
    k.rate('r1'),
    k.pendingDue,
    k.pendingEntries,
    k.outcomePrefix,
    k.outcomesIndex,
    k.outcomesExpiry,
    k.outcomesBy,
  ];
};

describe('storeKeys', () => {
  it.each([
    [
      'a single Redis keeps the earlier names',
      'np:',
      false,
      [
        'single',
        'np:binding:tok',
        'np:event:outcome:pay_1',
        'np:rate:r1',
        'np:pending:due',
        'np:pending:entries',
        'np:outcome:',
        'np:outcomes:index',
        'np:outcomes:expiry',
        'np:outcomes:by:',
      ],
    ],
    [
      'a cluster tags each payment, token and rate key, and puts the queue and records in one slot',
      'np:',
      true,
      [
        'cluster',
        'np:binding:{tok}',
        'np:event:{outcome:pay_1}',
        'np:rate:{r1}',
        'np:{shared}:pending:due',
        'np:{shared}:pending:entries',
        'np:{shared}:outcome:',
        'np:{shared}:outcomes:index',
        'np:{shared}:outcomes:expiry',
        'np:{shared}:outcomes:by:',
      ],
    ],
    [
      'a cluster with a tagged prefix keeps the earlier names (everything in the prefix slot)',
      '{np}:',
      true,
      [
        'single',
        '{np}:binding:tok',
        '{np}:event:outcome:pay_1',
        '{np}:rate:r1',
        '{np}:pending:due',
        '{np}:pending:entries',
        '{np}:outcome:',
        '{np}:outcomes:index',
        '{np}:outcomes:expiry',
        '{np}:outcomes:by:',
      ],
    ],
    [
      'an empty prefix on a cluster',
      '',
      true,
      [
        'cluster',
        'binding:{tok}',
        'event:{outcome:pay_1}',
        'rate:{r1}',
        '{shared}:pending:due',
        '{shared}:pending:entries',
        '{shared}:outcome:',
        '{shared}:outcomes:index',
        '{shared}:outcomes:expiry',
        '{shared}:outcomes:by:',
      ],
    ],
  ])('%s', (_name, prefix, cluster, expected) => {
    expect(all(prefix, cluster)).toEqual(expected);
  });

  it.each([
    ['nestjs-payments:', false],
    ['{np}:', true],
    ['a{b}c', true],
    ['{}:', false],
    ['}{', false],
    ['{x', false],
    ['{{x}', true],
  ])('hasHashTag(%j) is %j', (prefix, tagged) => {
    expect(hasHashTag(prefix)).toBe(tagged);
  });
});
