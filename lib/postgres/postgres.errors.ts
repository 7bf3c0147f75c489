/**
 * Whether a database error means the database could not be reached or is going away (so that the
 * operation may work again later by itself), as opposed to a database that answered and refused
 * the statement (missing tables, permissions, a pooler's setting: it will not work until someone
 * changes something). No SQLSTATE at all is the driver's own failure to connect or to hear back;
 * class 08 is a connection exception; 57P01-57P03 a server shutting down or starting; 53300 too
 * many connections.
 */
export function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/**
 * A database error as the store reports it, saying which of the two it is (see
 * {@link isUnreachable}): "could not reach the database" or "the database refused", with the
 * driver's message, its SQLSTATE kept as `code` and the driver's error as `cause`.
 * @param operation the store operation
 * @param error what the driver threw
 */
export function databaseError(operation: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  const what = isUnreachable(error)
    ? 'could not reach the database'
    : `the database is reachable but refused the statement (SQLSTATE ${String(code)}; check its tables, permissions and pooler settings)`;
  const wrapped = new Error(`PostgresPaymentsStore: ${operation}: ${what}: ${message}`, { cause: error });
  if (typeof code === 'string') Object.assign(wrapped, { code });
  return wrapped;
}
