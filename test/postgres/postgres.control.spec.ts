import { describe, expect, it } from '@jest/globals';
import {
  nestedStatement,
  transactionControl,
  type NestedStatement,
  type TransactionControl,
} from '../../lib/postgres/postgres.control.js';
import { isPreparedStatementClash } from '../../lib/postgres/postgres.prepared.js';
import { databaseError, isUnreachable } from '../../lib/postgres/postgres.connection.js';

// The rules that keep a handler inside its outcome's transaction, the one that tells a pooler's
// prepared-statement clash from any other error, and the one that tells an unreachable database
// from one that answered: pure functions, table-tested.

describe('transactionControl: what a statement does to the transaction', () => {
  it.each<[string, TransactionControl]>([
    ['BEGIN', 'begin'],
    ['begin;', 'begin'],
    ['  Begin Work', 'begin'],
    ['BEGIN ISOLATION LEVEL SERIALIZABLE', 'begin'],
    ['START TRANSACTION READ ONLY', 'begin'],
    ['-- a comment\nBEGIN', 'begin'],
    ['/* a /* nested */ comment */ begin', 'begin'],
    ['COMMIT', 'commit'],
    ['commit work', 'commit'],
    ['END', 'commit'],
    ['END TRANSACTION;', 'commit'],
    ['COMMIT AND NO CHAIN', 'commit'],
    ['ROLLBACK', 'rollback'],
    ['ABORT', 'rollback'],
    ['rollback transaction', 'rollback'],
    ['ROLLBACK AND NO CHAIN', 'rollback'],
    ['COMMIT AND CHAIN', 'ends'],
    ['ROLLBACK AND CHAIN', 'ends'],
    ['ABORT AND CHAIN', 'ends'],
    ["PREPARE TRANSACTION 'x'", 'ends'],
    ["COMMIT PREPARED 'x'", 'ends'],
    ["ROLLBACK PREPARED 'x'", 'ends'],
    ['ROLLBACK TO SAVEPOINT sp1', 'other'],
    ['rollback to sp1', 'other'],
    ['ROLLBACK WORK TO SAVEPOINT sp1', 'other'],
    ['SAVEPOINT sp1', 'other'],
    ['RELEASE SAVEPOINT sp1', 'other'],
    ['PREPARE q AS SELECT 1', 'other'],
    ['START something', 'other'],
    ['UPDATE orders SET status = $1', 'other'],
    ["SELECT 'COMMIT'", 'other'],
    ['-- COMMIT\nSELECT 1', 'other'],
    ['DO $$BEGIN PERFORM 1; END$$', 'other'],
    ['', 'other'],
    [';;', 'other'],
    ['  ', 'other'],
  ])('%j is %s', (text, expected) => {
    expect(transactionControl(text)).toBe(expected);
  });
});

describe('nestedStatement: a nested transaction becomes a savepoint, ending the outer one is refused', () => {
  it.each<[TransactionControl, number, NestedStatement['kind'], string | undefined, number | undefined]>([
    ['other', 0, 'send', undefined, undefined],
    ['other', 2, 'send', undefined, undefined],
    ['begin', 0, 'savepoint', 'SAVEPOINT nestjs_payments_nested_1', 1],
    ['begin', 1, 'savepoint', 'SAVEPOINT nestjs_payments_nested_2', 2],
    ['commit', 1, 'savepoint', 'RELEASE SAVEPOINT nestjs_payments_nested_1', 0],
    ['commit', 2, 'savepoint', 'RELEASE SAVEPOINT nestjs_payments_nested_2', 1],
    ['rollback', 1, 'savepoint', 'ROLLBACK TO SAVEPOINT nestjs_payments_nested_1', 0],
    ['commit', 0, 'refuse', undefined, undefined],
    ['rollback', 0, 'refuse', undefined, undefined],
    ['ends', 0, 'refuse', undefined, undefined],
    ['ends', 3, 'refuse', undefined, undefined],
  ])('%s at depth %i: %s', (control, depth, kind, text, newDepth) => {
    const decision = nestedStatement(control, depth);
    expect(decision.kind).toBe(kind);
    if (decision.kind === 'savepoint') expect([decision.text, decision.depth]).toEqual([text, newDepth]);
    if (decision.kind === 'refuse') expect(decision.reason).toMatch(/end|commit/);
  });
});

describe('isPreparedStatementClash: a pooler refusing one of the store’s named statements', () => {
  it.each<[string, unknown, boolean]>([
    [
      'already exists on the server connection',
      { code: '42P05', message: 'prepared statement "nestjs_payments_0a1b" already exists' },
      true,
    ],
    [
      'unknown on the server connection',
      { code: '26000', message: 'prepared statement "nestjs_payments_0a1b" does not exist' },
      true,
    ],
    ['a statement of someone else', { code: '42P05', message: 'prepared statement "other" already exists' }, false],
    ['a missing table', { code: '42P01', message: 'relation "payments_events" does not exist' }, false],
    ['a connection error', new Error('connect ECONNREFUSED 127.0.0.1:5432'), false],
    ['nothing', undefined, false],
  ])('%s: %s', (_what, error, expected) => {
    expect(isPreparedStatementClash(error)).toBe(expected);
  });
});

describe('isUnreachable and databaseError: unreachable, or reachable and refusing', () => {
  it.each<[string, unknown, boolean]>([
    [
      'connection refused',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      true,
    ],
    ['connection ended', new Error('Connection terminated unexpectedly'), true],
    ['server shutting down', { code: '57P01', message: 'terminating connection due to administrator command' }, true],
    ['server starting', { code: '57P03', message: 'the database system is starting up' }, true],
    ['too many connections', { code: '53300', message: 'sorry, too many clients already' }, true],
    [
      'protocol violation (a pooler refusing a startup parameter)',
      { code: '08P01', message: 'unsupported startup parameter: x' },
      true,
    ],
    ['missing table', { code: '42P01', message: 'relation "payments_events" does not exist' }, false],
    ['no permission', { code: '42501', message: 'permission denied for table payments_events' }, false],
    [
      'prepared statement clash',
      { code: '42P05', message: 'prepared statement "nestjs_payments_1" already exists' },
      false,
    ],
    ['read-only replica', { code: '25006', message: 'cannot execute INSERT in a read-only transaction' }, false],
  ])('%s: unreachable %s', (_what, error, unreachable) => {
    expect(isUnreachable(error)).toBe(unreachable);
    const reported = databaseError('claim', error);
    expect(reported.message).toMatch(
      unreachable
        ? /^PostgresPaymentsStore: claim: could not reach the database: /
        : /^PostgresPaymentsStore: claim: the database is reachable but refused the statement \(SQLSTATE \w+;/,
    );
    expect(reported.message).not.toMatch(unreachable ? /reachable but/ : /could not reach|unreachable/);
    expect(reported.cause).toBe(error);
  });
});
