import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { canConnect } from './services.js';
import { OwnPostgres, postgresServerAvailable } from '../faults/support/own-servers.js';

export type { OwnPostgres };

// PostgreSQL servers and PgBouncers of the tests' own, for what the shared server must not
// undergo: a restart mid-run, a pooler in transaction mode in front. Each lives in a temp dir, on
// a free port of the range given, runs as the `postgres` user (neither runs as root), and is
// stopped and deleted by the test that started it.

const PGBOUNCER = process.env.PGBOUNCER ?? '/usr/sbin/pgbouncer';

/**
 * Port ranges of these servers (TEST_PG_PORTS / TEST_PGBOUNCER_PORTS as `from-to`), below 32768:
 * Linux gives the ports above it to outgoing connections, and a restarted server must get its
 * port back.
 */
export const PORTS = {
  postgres: range(process.env.TEST_PG_PORTS ?? '25400-25499'),
  pgbouncer: range(process.env.TEST_PGBOUNCER_PORTS ?? '25500-25599'),
};

/** Why the servers cannot be started here, or undefined when they can. */
export function ownServersMissing(): string | undefined {
  if (!postgresServerAvailable()) return 'no PostgreSQL server binaries (PG_BIN) or no postgres user';
  if (!existsSync(PGBOUNCER)) return `no PgBouncer at ${PGBOUNCER} (apt package pgbouncer)`;
  if (process.getuid?.() !== 0) return 'starting PostgreSQL and PgBouncer as the postgres user needs root';
  return undefined;
}

/**
 * A PostgreSQL server of the test's own (the fault tests' {@link OwnPostgres}) on a free port of
 * {@link PORTS}.postgres; `down()` stops it at once, as a crash would, `up()` starts it again.
 */
export async function startPostgres(): Promise<OwnPostgres> {
  return OwnPostgres.start(await freePort(PORTS.postgres));
}

/** A PgBouncer of the test's own. */
export interface OwnPgBouncer {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  url(database?: string): string;
  stop(): Promise<void>;
}

/**
 * PgBouncer in transaction mode in front of `target` (host:port), with its default options but
 * the few startup parameters `pg` sends ignored (otherwise it refuses the connection).
 */
export async function startPgBouncer(target: { host: string; port: number }): Promise<OwnPgBouncer> {
  const dir = ownedTempDir('nestjs-payments-pgbouncer-');
  const port = await freePort(PORTS.pgbouncer);
  writeFileSync(path.join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.host} port=${target.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 8',
      'max_client_conn = 200',
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${path.join(dir, 'log')}`,
      '',
    ].join('\n'),
  );
  chownSync(path.join(dir, 'pgbouncer.ini'), ...postgresIds());
  chownSync(path.join(dir, 'users.txt'), ...postgresIds());
  const [uid, gid] = postgresIds();
  const child: ChildProcess = spawn(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore', uid, gid });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(
    () => canConnect('127.0.0.1', port),
    () => `PgBouncer did not start: ${readLog(path.join(dir, 'log'))}`,
  );
  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop: async () => {
      // SIGTERM: at once, whoever is still connected (SIGINT would wait for every client).
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function ownedTempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  chownSync(dir, ...postgresIds());
  return dir;
}

function postgresIds(): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no postgres user');
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}

/** A port of the range nobody listens on, from a random start (parallel test files do not collide). */
async function freePort({ from, to }: { from: number; to: number }): Promise<number> {
  const size = to - from + 1;
  const offset = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = from + ((offset + i) % size);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${from}-${to}`);
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function waitFor(
  ready: () => Promise<boolean>,
  why: () => string = () => 'the server did not start',
): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(why());
}

function readLog(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').slice(-2000) : '(no log)';
}

function range(text: string): { from: number; to: number } {
  const [from, to] = text.split('-').map(Number);
  return { from, to };
}
