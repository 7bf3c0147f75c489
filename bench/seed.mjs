// Seeding shared by the benchmarks that fill a store (growth.mjs, desk.mjs): payments written through
// the store's own methods (many in flight on one connection, which ioredis pipelines), rows of a
// template payment the store wrote copied in SQL for PostgreSQL, and the cleanup of what a run wrote
// (its Redis keys by prefix, its tables, its database).

/** An ISO 8601 time as the engine writes them (the times of a template are found by it). */
export const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;

/** Writes payments [from, to) with `write(store, n, now)`, `inFlight` at a time. */
export async function fillByMethods(store, from, to, inFlight, write, now) {
  let next = from;
  const worker = async () => {
    while (next < to) await write(store, next++, now);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/**
 * SQL that turns a template payment's text into payment `n`'s (`n` a column of the statement): the
 * template's number replaced by `n`, then each of the template's times (`isoTimes`, read back from
 * its rows) shifted by the SQL interval `shift`, written back as the engine writes times.
 * @returns (expr) => the SQL expression of `expr` with the substitutions
 */
export function templateSubstitution(template, isoTimes, shift) {
  const at = (iso) => `to_char(('${iso}'::timestamptz + ${shift}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  return (expr) =>
    isoTimes.reduce((e, iso) => `replace(${e}, '${iso}', ${at(iso)})`, `replace(${expr}, '${template}', n::text)`);
}

/** Deletes a run's Redis keys (`pattern`, e.g. `grw:*`): never the whole database, which may be shared. */
export async function deleteRedisKeys(redisUrl, pattern) {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000);
    if (keys.length) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
  await redis.quit();
}

/** Drops a run's PostgreSQL tables (`like`, a LIKE pattern such as `grw\\_%`). */
export async function dropTables(postgresUrl, like) {
  const pg = await import('pg');
  const client = new (pg.default ?? pg).Client({ connectionString: postgresUrl });
  await client.connect();
  const { rows } = await client.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE '${like}'`);
  for (const { tablename } of rows) await client.query(`DROP TABLE IF EXISTS "${tablename}" CASCADE`);
  await client.end();
}

/**
 * Creates a benchmark's own PostgreSQL database (the one `postgresUrl` names) when missing (true:
 * created, the run drops it at the end), or drops it, through the server's `postgres` database.
 * `setting` names the variable the URL came from, for the error.
 */
export async function benchDatabase(postgresUrl, action, setting) {
  const pg = await import('pg');
  const url = new URL(postgresUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!/^[a-z_][a-z0-9_]*$/.test(name) || ['postgres', 'test', 'template0', 'template1'].includes(name))
    throw new Error(`${setting}: the benchmark needs a database of its own, not '${name}'`);
  url.pathname = '/postgres';
  const admin = new (pg.default ?? pg).Client({ connectionString: url.href });
  await admin.connect();
  try {
    if (action === 'drop') {
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      return false;
    }
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    await admin.query(`CREATE DATABASE ${name}`);
    return true;
  } finally {
    await admin.end();
  }
}
