/**
 * What a statement sent by a handler does to the outcome's transaction, read from its first
 * keywords: `begin` opens a transaction (BEGIN, START TRANSACTION), `commit` and `rollback` end
 * one (COMMIT, END, ROLLBACK, ABORT, each without AND CHAIN), `ends` would end it in a way no
 * savepoint can stand for (PREPARE TRANSACTION, COMMIT or ROLLBACK AND CHAIN, the two-phase
 * COMMIT/ROLLBACK PREPARED), `other` is anything else (ROLLBACK TO SAVEPOINT included).
 */
export type TransactionControl = 'begin' | 'commit' | 'rollback' | 'ends' | 'other';

/** Reads {@link TransactionControl} from a statement's text: leading blanks and comments skipped, case ignored. */
export function transactionControl(text: string): TransactionControl {
  const words = leadingWords(text, 5);
  const [first, second] = words;
  const chained = words.includes('chain') && !words.includes('no');
  switch (first) {
    case 'begin':
      return 'begin';
    case 'start':
      return second === 'transaction' ? 'begin' : 'other';
    case 'commit':
    case 'end':
      return second === 'prepared' || chained ? 'ends' : 'commit';
    case 'abort':
      return chained ? 'ends' : 'rollback';
    case 'rollback':
      if (second === 'to' || (words[2] === 'to' && (second === 'work' || second === 'transaction'))) return 'other';
      return second === 'prepared' || chained ? 'ends' : 'rollback';
    case 'prepare':
      return second === 'transaction' ? 'ends' : 'other';
    default:
      return 'other';
  }
}

/** What to do with a handler's statement, given how many nested transactions it opened. */
export type NestedStatement =
  /** Send it as it is. */
  | { kind: 'send' }
  /** Send `text` instead (a savepoint standing for the nested transaction); the depth becomes `depth`. */
  | { kind: 'savepoint'; text: string; depth: number }
  /** Refuse it: it would end the outcome's transaction. */
  | { kind: 'refuse'; reason: string };

/** The prefix of the savepoints standing for a handler's nested transactions. */
export const NESTED_SAVEPOINT = 'nestjs_payments_nested_';

/**
 * The rule that keeps a handler inside the outcome's transaction: a nested BEGIN becomes a
 * savepoint, its COMMIT releases it and its ROLLBACK rolls back to it (so an ORM's own
 * `.transaction()` on the transaction's client works as a nested one), and a statement that
 * would end the outcome's transaction itself is refused.
 * @param control what the statement does ({@link transactionControl})
 * @param depth how many nested transactions the handlers opened and have not ended yet
 */
export function nestedStatement(control: TransactionControl, depth: number): NestedStatement {
  switch (control) {
    case 'other':
      return { kind: 'send' };
    case 'begin':
      return { kind: 'savepoint', text: `SAVEPOINT ${NESTED_SAVEPOINT}${depth + 1}`, depth: depth + 1 };
    case 'commit':
      if (depth > 0)
        return { kind: 'savepoint', text: `RELEASE SAVEPOINT ${NESTED_SAVEPOINT}${depth}`, depth: depth - 1 };
      return { kind: 'refuse', reason: 'a COMMIT would commit the outcome’s transaction before its handlers are done' };
    case 'rollback':
      if (depth > 0)
        return { kind: 'savepoint', text: `ROLLBACK TO SAVEPOINT ${NESTED_SAVEPOINT}${depth}`, depth: depth - 1 };
      return {
        kind: 'refuse',
        reason: 'a ROLLBACK would end the outcome’s transaction, and the rest would run outside it',
      };
    case 'ends':
      return { kind: 'refuse', reason: 'this statement would end the outcome’s transaction' };
    default:
      return assertNever(control);
  }
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected transaction control: ${String(value)}`);
}

// The first `count` words of a statement, lower case, past blanks, `--` and `/* */` comments.
function leadingWords(text: string, count: number): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < text.length && words.length < count) {
    const c = text[i];
    if (/\s/.test(c) || c === ';') {
      if (c === ';' && words.length > 0) break;
      i += 1;
    } else if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
    } else if (text.startsWith('/*', i)) {
      i = skipBlockComment(text, i);
    } else {
      const match = /^[A-Za-z_]+/.exec(text.slice(i, i + 64));
      if (!match) break;
      words.push(match[0].toLowerCase());
      i += match[0].length;
    }
  }
  return words;
}

// PostgreSQL's block comments nest.
function skipBlockComment(text: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < text.length) {
    if (text.startsWith('/*', i)) {
      depth += 1;
      i += 2;
    } else if (text.startsWith('*/', i)) {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else {
      i += 1;
    }
  }
  return i;
}
