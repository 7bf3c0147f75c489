import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { bundleFixture } from '../../support/bundle.js';
import { POSTGRES_URL, REDIS_URL } from '../../support/services.js';

// The fleet tests (strangers, abandoned checkouts, settled payments) run app instances as real
// processes on one Redis or one PostgreSQL store: the package bundled once per file, each instance
// a fixture under test/faults/fixtures reading its part from the environment.

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** The store a fleet shares, as the fixtures read it from the environment. */
export type FleetStore = 'redis' | 'postgres';

/** One instance process: its output so far, and its end (a SIGKILL counts as an end, not a failure). */
export interface FleetInstance {
  readonly child: ChildProcess;
  output(): string;
  readonly done: Promise<string>;
}

/** A fleet test file's bundle, its own key prefix and schema, and its instances. */
export class Fleet {
  /** The run's name: the Redis key prefix and the PostgreSQL schema of its stores. */
  readonly run: string;
  readonly #outDir: string;
  readonly #bundle: string;

  /** @param name the test's name, in the run's name and the bundle's folder */
  constructor(private readonly name: string) {
    this.run = `${name}_${process.pid}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
    this.#outDir = path.join(ROOT, 'node_modules/.cache', `nestjs-payments-${name}`, String(process.pid));
    this.#bundle = path.join(this.#outDir, 'payments.mjs');
  }

  /** Bundles what the fixtures import of the package (test/faults/fixtures/entry.ts). */
  bundle(): void {
    mkdirSync(this.#outDir, { recursive: true });
    bundleFixture(path.join(import.meta.dirname, '../fixtures/entry.ts'), this.#bundle);
  }

  /** The environment naming the shared store: `STORE`, `STORE_URL`, and its prefix or schema. */
  storeEnv(store: FleetStore): Record<string, string> {
    return store === 'redis'
      ? { STORE: store, STORE_URL: REDIS_URL, KEY_PREFIX: `${this.run}:` }
      : { STORE: store, STORE_URL: POSTGRES_URL, PG_SCHEMA: this.run };
  }

  /** Starts the fixture `test/faults/fixtures/<fixture>` with `env` (and the bundle's path). */
  start(fixture: string, env: Record<string, string>): FleetInstance {
    const child = spawn(process.execPath, [path.join(import.meta.dirname, '../fixtures', fixture)], {
      env: { ...process.env, ...env, BUNDLE: this.#bundle },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    const done = new Promise<string>((resolve, reject) =>
      child.once('exit', (code, signal) =>
        code === 0 || signal === 'SIGKILL'
          ? resolve(output)
          : reject(new Error(`${this.name} instance exited ${code ?? signal}: ${output}`)),
      ),
    );
    return { child, output: () => output, done };
  }

  /** Drops the run's keys and schema (on the services that were up) and the bundle. */
  async cleanup(up: { redis: boolean; postgres: boolean }): Promise<void> {
    if (up.redis) {
      const admin = new Redis(REDIS_URL);
      const keys = await admin.keys(`${this.run}:*`);
      if (keys.length > 0) await admin.del(...keys);
      await admin.quit();
    }
    if (up.postgres) {
      const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      await admin.query(`DROP SCHEMA IF EXISTS "${this.run}" CASCADE`).finally(() => admin.end());
    }
    rmSync(this.#outDir, { recursive: true, force: true });
  }
}
