// What a confirmation costs the PostgreSQL server, statement by statement, beside what a
// hand-written handler's transaction costs: the store's two statements (findBindingAndClaim,
// finishOutcome) sent unnamed and as named prepared statements, against BEGIN / UPDATE of an
// order row / COMMIT, on one pg Pool of 10 at 16 in flight. Reports operations a second, this
// process' CPU and the whole machine's CPU per operation (the server's backends included: on 2
// shared cores that is what bounds a webhook's throughput).
//
//   npm run build && node bench/postgres-statements.mjs [postgresUrl]
//
// Tables are created with a prefix of this process' id and dropped at the end.
import { readFileSync } from 'node:fs';
import pg from 'pg';

const POSTGRES_URL = process.argv[2] ?? process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const { PostgresPaymentsStore } = await import('../dist/postgres/index.js');
const { storeStatements } = await import('../dist/postgres/postgres.statements.js');
const { storeTables } = await import('../dist/postgres/postgres.schema.js');
const { finishOutcomeParams } = await import('../dist/postgres/postgres.transaction.js');

const PREFIX = `bench_stmt_${process.pid}_`;
const OPS = 3000;
const IN_FLIGHT = 16;
const ORDERS = 100_000;
const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 10 });
const unnamed = new PostgresPaymentsStore(pool, { tablePrefix: PREFIX, preparedStatements: false });
const sql = storeStatements(storeTables({ prefix: PREFIX, schema: undefined }));
// Not `${PREFIX}orders`: that is the store's own order ledger (same prefix).
const orders = `"${PREFIX}shop_orders"`;

// Busy jiffies of the whole machine (/proc/stat: user, nice, system, irq, softirq).
const machineBusy = () => {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
  return fields[0] + fields[1] + fields[2] + fields[5] + fields[6];
};
let seq = 0;
async function measure(label, prepare, operation) {
  const ids = Array.from({ length: OPS }, () => `p${seq++}`);
  await prepare?.(ids);
  const busy0 = machineBusy();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < OPS) await operation(ids[next++]);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const machineUs = ((machineBusy() - busy0) * 1e6) / 100 / OPS; // 100 jiffies a second
  console.log(
    `| ${label} | ${(OPS / seconds).toFixed(0)} | ${((cpu.user + cpu.system) / OPS).toFixed(0)} | ${machineUs.toFixed(0)} |`,
  );
}

const record = (paymentId) => ({
  paymentId,
  outcome: 'confirmed',
  handlers: 'succeeded',
  updatedAt: new Date().toISOString(),
  status: 'SUCCESS',
  amount: '12500',
});
const finish = (paymentId) => ({
  eventKey: `outcome:${paymentId}`,
  owner: 'o1',
  claim: 'done',
  doneTtlMs: 86_400_000,
  record: record(paymentId),
  attemptsAdded: 1,
  recordTtlMs: 86_400_000,
});
const bind = async (ids) => {
  for (let k = 0; k < ids.length; k += 200) {
    await Promise.all(
      ids
        .slice(k, k + 200)
        .map((id) =>
          unnamed.saveBinding(
            `t_${id}`,
            { paymentId: id, amount: '12500', createdAt: new Date().toISOString() },
            3_600_000,
          ),
        ),
    );
  }
};
let order = 0;
async function orderTransaction() {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`UPDATE ${orders} SET status = 'paid', paid_at = now() WHERE id = $1`, [
      `ord_${order++ % ORDERS}`,
    ]);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

try {
  await unnamed.ping();
  await pool.query(`CREATE TABLE ${orders} (id text PRIMARY KEY, status text NOT NULL, paid_at timestamptz)`);
  await pool.query(
    `INSERT INTO ${orders} (id, status) SELECT 'ord_' || n, 'unpaid' FROM generate_series(0, ${ORDERS - 1}) AS n`,
  );
  console.log(
    `| ${OPS} operations, ${IN_FLIGHT} in flight, pg Pool of 10 | op/s | CPU µs/op, this process | CPU µs/op, whole machine |`,
  );
  console.log('|---|---:|---:|---:|');
  for (let round = 0; round < 2; round++) {
    await measure('hand-written: BEGIN, UPDATE one order row, COMMIT', undefined, orderTransaction);
    await measure('store, unnamed: findBindingAndClaim + finishOutcome', bind, async (id) => {
      await pool.query(sql.findBindingAndClaim, [`t_${id}`, `outcome:${id}`, 'o1', id, 30_000]);
      await pool.query(sql.finishOutcome, finishOutcomeParams(finish(id)));
    });
    await measure('store, prepared: findBindingAndClaim + finishOutcome', bind, async (id) => {
      await pool.query({
        name: `${PREFIX}claim`,
        text: sql.findBindingAndClaim,
        values: [`t_${id}`, `outcome:${id}`, 'o1', id, 30_000],
      });
      await pool.query({ name: `${PREFIX}finish`, text: sql.finishOutcome, values: finishOutcomeParams(finish(id)) });
    });
  }
} finally {
  const { rows } = await pool.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE $1`, [`${PREFIX}%`]);
  for (const { tablename } of rows) await pool.query(`DROP TABLE IF EXISTS "${tablename}" CASCADE`);
  await pool.end();
}
