import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canConnect } from '../../support/services.js';
import { freePort } from '../../support/ports.js';

export { freePort };

// Redis and PostgreSQL servers of a test's own, on free ports, that the test may stop and start:
// the machine's shared servers (6379, 5432) serve other tests and are never touched.

const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server';
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

async function waitFor(ok: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`${what}: not ready within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether `redis-server` can be run here. */
export function redisServerAvailable(): boolean {
  try {
    execFileSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A redis-server of the test's own. Its data is kept in an append-only file written on every
 * command (`appendfsync always`) in a temporary directory, so that a restart, even after a
 * SIGKILL, finds what a production Redis with persistence would find.
 */
export class OwnRedis {
  #child?: ChildProcess;
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts a new server on a free port. */
  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort(), mkdtempSync(path.join(tmpdir(), 'payments-redis-')));
    await redis.up();
    return redis;
  }

  /** Starts the server (again), on the same port and data directory; resolves once it accepts connections. */
  async up(): Promise<void> {
    const child = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--dir',
        this.dir,
      ],
      { stdio: 'ignore' },
    );
    this.#child = child;
    await waitFor(() => canConnect('127.0.0.1', this.port, 200), `redis-server on ${this.port}`);
  }

  /** Kills the server (SIGKILL: a crash, not a shutdown); resolves once it is gone. */
  async down(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** Stops the server and removes its data. */
  async remove(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether PostgreSQL's server binaries (initdb, pg_ctl) and the `postgres` OS user are there. */
export function postgresServerAvailable(): boolean {
  if (!existsSync(path.join(PG_BIN, 'initdb')) || !existsSync(path.join(PG_BIN, 'pg_ctl'))) return false;
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Runs a PostgreSQL binary as the `postgres` OS user (the server refuses to run as root). */
function asPostgres(binary: string, args: string[]): void {
  const command = path.join(PG_BIN, binary);
  if (process.getuid?.() === 0) execFileSync('runuser', ['-u', 'postgres', '--', command, ...args], { stdio: 'pipe' });
  else execFileSync(command, args, { stdio: 'pipe' });
}

/** A PostgreSQL cluster of the test's own (initdb in a temporary directory, trust authentication). */
export class OwnPostgres {
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private get data(): string {
    return path.join(this.dir, 'data');
  }

  /** Creates and starts a new cluster on `port`, or on a free port. */
  static async start(port?: number): Promise<OwnPostgres> {
    const dir = mkdtempSync(path.join(tmpdir(), 'payments-pg-'));
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
      chownSync(dir, uid, gid);
    }
    const pg = new OwnPostgres(port ?? (await freePort()), dir);
    asPostgres('initdb', ['-D', pg.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await pg.up();
    return pg;
  }

  /** Starts the server (again) on the same port and data; resolves once it accepts connections. */
  async up(): Promise<void> {
    asPostgres('pg_ctl', [
      '-D',
      this.data,
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      path.join(this.dir, 'server.log'),
      '-w',
      'start',
    ]);
    await waitFor(() => canConnect('127.0.0.1', this.port, 200), `postgres on ${this.port}`);
  }

  /** Stops the server at once (`-m immediate`: no clean shutdown, like a crash); committed data survives. */
  async down(): Promise<void> {
    asPostgres('pg_ctl', ['-D', this.data, '-m', 'immediate', '-w', 'stop']);
  }

  /** Stops the server (if running) and removes the cluster. */
  async remove(): Promise<void> {
    try {
      await this.down();
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
