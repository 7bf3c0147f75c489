import { createHash } from 'node:crypto';
import type { PostgresQueryable, PostgresQueryResult } from './postgres.options.js';
import type { StatementSender } from './postgres.prepared.js';

/** A backend message as PGlite's `execProtocol()` hands it back (only the fields read here). */
interface WireMessage {
  name: string;
  fields?: Array<{ name: string; dataTypeID: number } | string | null>;
}

/**
 * The part of a PGlite instance (`@electric-sql/pglite`) the named statements use: its wire
 * protocol, and the two locks its own `query()` takes (its transactions', then its queries').
 */
interface PgliteWire {
  execProtocol(message: Uint8Array): Promise<{ messages: WireMessage[] }>;
  _runExclusiveTransaction<T>(work: () => Promise<T>): Promise<T>;
  _runExclusiveQuery<T>(work: () => Promise<T>): Promise<T>;
  /** Resolves once the instance is up (what `query()` waits for first). */
  _checkReady?(): Promise<void>;
}

/**
 * Whether a connection is a PGlite instance in this process whose wire protocol the store can
 * speak (duck-typed: the host's copy of PGlite may be another than any this package could import).
 * A PGlite in a worker (`PGliteWorker`) is not: it has no locks of its own to take.
 */
export function isPgliteWire(db: PostgresQueryable): boolean {
  const candidate = db as Partial<Record<keyof PgliteWire, unknown>>;
  return (
    typeof candidate.execProtocol === 'function' &&
    typeof candidate._runExclusiveTransaction === 'function' &&
    typeof candidate._runExclusiveQuery === 'function'
  );
}

const encoder = new TextEncoder();
const PREFIX = 'nestjs_payments_';
// Describe (portal), Execute (all rows), Sync: the tail of every call.
const TAIL = concat([message(0x44, [cstring('P')]), message(0x45, [cstring(''), int32(0)]), message(0x53, [])]);

/**
 * Sends the store's statements to PGlite as named prepared statements, parsed and planned once
 * for the instance's one session instead of on every call: PGlite's `query()` parses, describes,
 * binds, describes and executes each statement in six calls into the database (and plans it each
 * time), which cost the store's webhook statements three times what they cost prepared (figures
 * in docs/performance.md). Each call is one `execProtocol()` (Bind, Describe, Execute, Sync), the
 * first of a statement with its Parse, under the same locks PGlite's `query()` takes.
 *
 * Falls back to `db.query(text, params)` for a connection that is not {@link isPgliteWire}, for
 * parameters other than strings, numbers, booleans and nulls, and while a store transaction holds
 * the instance (its `query()` is then replaced by one that refuses a handler's statements:
 * postgres.pglite.ts), so that what happens then is what `query()` does.
 *
 * Rows come back as `query()` gives them for the store's statements: text columns as strings,
 * booleans as booleans, integers and floats as numbers, NULL as null.
 */
export function pgliteStatementSender(): StatementSender {
  const parsed = new Set<string>();
  const names = new Map<string, string>();
  return async (db, text, params) => {
    if (!isPgliteWire(db) || Object.prototype.hasOwnProperty.call(db, 'query') || !params.every(isWireValue))
      return db.query(text, params);
    const wire = db as unknown as PgliteWire;
    let name = names.get(text);
    if (name === undefined) {
      name = `${PREFIX}${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    const bind = bindMessage(name, params);
    const run = (withParse: boolean) =>
      wire._runExclusiveTransaction(() =>
        wire._runExclusiveQuery(() =>
          wire.execProtocol(
            withParse
              ? concat([message(0x50, [cstring(name), cstring(text), int16(0)]), bind, TAIL])
              : concat([bind, TAIL]),
          ),
        ),
      );
    await wire._checkReady?.();
    const first = !parsed.has(name);
    let messages: WireMessage[];
    try {
      ({ messages } = await run(first));
    } catch (error) {
      // The name is taken: by this sender, whose Parse went through before the statement failed,
      // or by another store on the same instance and tables (the name is the text's hash: the same statement).
      if (!first || (error as { code?: unknown } | undefined)?.code !== '42P05') throw error;
      parsed.add(name);
      ({ messages } = await run(false));
    }
    parsed.add(name);
    return { rows: rowsOf(messages) };
  };
}

type WireValue = string | number | boolean | null | undefined;

function isWireValue(value: unknown): value is WireValue {
  return (
    value === null ||
    value === undefined ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

// Bind: unnamed portal, the statement, text format for every parameter and every column.
function bindMessage(statement: string, values: WireValue[]): Uint8Array {
  const parts: Uint8Array[] = [cstring(''), cstring(statement), int16(0), int16(values.length)];
  for (const value of values) {
    if (value === null || value === undefined) {
      parts.push(int32(-1));
      continue;
    }
    const bytes = encoder.encode(String(value));
    parts.push(int32(bytes.length), bytes);
  }
  parts.push(int16(0));
  return message(0x42, parts);
}

// The column types the store's statements read back other than as text (PGlite's own parsers).
const BOOL = 16;
const NUMBERS = new Set([20, 21, 23, 26, 700, 701]);

function rowsOf(messages: WireMessage[]): PostgresQueryResult['rows'] {
  let columns: Array<{ name: string; dataTypeID: number }> = [];
  const rows: Array<Record<string, unknown>> = [];
  for (const m of messages) {
    if (m.name === 'rowDescription') columns = (m.fields ?? []) as typeof columns;
    else if (m.name === 'dataRow') {
      const row: Record<string, unknown> = {};
      (m.fields ?? []).forEach((field, i) => {
        const column = columns[i];
        if (column === undefined) return;
        const value = field as string | null;
        row[column.name] =
          value === null
            ? null
            : column.dataTypeID === BOOL
              ? value === 't'
              : NUMBERS.has(column.dataTypeID)
                ? Number(value)
                : value;
      });
      rows.push(row);
    }
  }
  return rows;
}

function message(type: number, parts: Uint8Array[]): Uint8Array {
  const body = concat(parts);
  const out = new Uint8Array(5 + body.length);
  out[0] = type;
  new DataView(out.buffer).setInt32(1, 4 + body.length);
  out.set(body, 5);
  return out;
}

function cstring(text: string): Uint8Array {
  const bytes = encoder.encode(text);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

function int16(n: number): Uint8Array {
  const out = new Uint8Array(2);
  new DataView(out.buffer).setInt16(0, n);
  return out;
}

function int32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, n);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
