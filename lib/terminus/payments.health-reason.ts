/**
 * The reason a health check gives for a failure: an error code only (`ECONNREFUSED`, `TIMEOUT`,
 * `NOAUTH`, ...), never a message (health endpoints are often public, and driver messages name
 * hosts and users) nor a class name (which says nothing to an operator). The one rule for every
 * check of the indicator.
 *
 * In order: the error's own `code` (Node's socket codes, the plugin's codes, PostgreSQL's SQLSTATE);
 * that of its `cause` or, for an AggregateError (a host with several addresses), of its first
 * error; a Redis error reply's leading word (`NOAUTH`, `WRONGPASS`, `LOADING`, `READONLY`);
 * `TIMEOUT` for a time-out; `CONNECTION_FAILED` for a client that gave up on a connection it
 * could not make (ioredis's retries per request); else `UNKNOWN_ERROR`.
 */
export function healthReasonOf(error: unknown, depth = 0): string {
  if (error === null || typeof error !== 'object') return 'UNKNOWN_ERROR';
  const e = error as { code?: unknown; cause?: unknown; errors?: unknown; name?: unknown; message?: unknown };
  if (typeof e.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(e.code)) return e.code;
  if (depth < 3) {
    const inner: unknown = e.cause ?? (Array.isArray(e.errors) ? (e.errors as unknown[])[0] : undefined);
    if (inner !== undefined) {
      const code = healthReasonOf(inner, depth + 1);
      if (code !== 'UNKNOWN_ERROR') return code;
    }
  }
  const message = typeof e.message === 'string' ? e.message : '';
  const name = typeof e.name === 'string' ? e.name : '';
  const reply = name === 'ReplyError' ? /^([A-Z][A-Z_]{2,31})\b/.exec(message) : null;
  if (reply) return reply[1];
  if (/timed out|timeout/i.test(message) || name === 'TimeoutError') return 'TIMEOUT';
  if (
    name === 'MaxRetriesPerRequestError' ||
    /connection is closed|connection terminated|connection refused/i.test(message)
  )
    return 'CONNECTION_FAILED';
  return 'UNKNOWN_ERROR';
}
