import net from 'node:net';
import { access } from 'node:fs/promises';
import { describe, it } from '@jest/globals';

/** Redis URL used by the tests (REDIS_URL, default the local server). */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Path of Debian's chromium, driven by playwright-core in the browser tests. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** True when a TCP connection to host:port succeeds within timeoutMs. */
export function canConnect(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Whether the Redis at REDIS_URL accepts connections. */
export async function redisAvailable(): Promise<boolean> {
  const url = new URL(REDIS_URL);
  return canConnect(url.hostname, Number(url.port || 6379));
}

/** Whether Debian's chromium is installed. */
export async function chromiumAvailable(): Promise<boolean> {
  return access(CHROMIUM_PATH).then(
    () => true,
    () => false,
  );
}

/**
 * `describe` when the service is there; otherwise a skip with a one-line reason, except under CI
 * (CI set): there an absent service must fail the run, so the suite runs and fails loudly.
 */
export function describeWithService(available: boolean, reason: string): (name: string, fn: () => void) => void {
  if (available || process.env.CI) return describe;
  process.stderr.write(`skipped: ${reason}\n`);
  return describe.skip;
}

/** The `it` of one test that needs a service: {@link describeWithService}'s rule, for a single test. */
export function itWithService(available: boolean, reason: string): (name: string, fn: () => Promise<void>) => void {
  if (available || process.env.CI) return it;
  process.stderr.write(`skipped: ${reason}\n`);
  return it.skip;
}

/** PostgreSQL connection string used by the tests (POSTGRES_URL, default the local server's `test` database). */
export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Whether the PostgreSQL at POSTGRES_URL accepts connections. */
export async function postgresAvailable(): Promise<boolean> {
  const url = new URL(POSTGRES_URL);
  return canConnect(url.hostname || '127.0.0.1', Number(url.port || 5432));
}

/** MariaDB (or MySQL) connection string used by the tests (MARIADB_URL, default the local server's `test` database as root). */
export const MARIADB_URL = process.env.MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** Whether the MariaDB at MARIADB_URL accepts connections. */
export async function mariadbAvailable(): Promise<boolean> {
  const url = new URL(MARIADB_URL);
  return canConnect(url.hostname || '127.0.0.1', Number(url.port || 3306));
}
