import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { bundleFixture } from './bundle.js';
import { startFixtureProcess, type FixtureProcess } from './fixture-process.js';

// App instances as separate Node processes sharing one store, as a deployment runs them: each is
// fixtures/instance.app.ts (plain Express, the payments client, its webhook router), bundled once
// per test file by esbuild from lib/ (no `npm run build`; dist/ is left alone). The bundle is
// written under node_modules/.cache so that its bare imports (express, ioredis, pg...) resolve.

const ROOT = path.resolve(import.meta.dirname, '../..');

/** An outcome event as an instance's handler received it (its name, the pid of the process, the event's fields). */
export interface InstanceEvent {
  name: string;
  pid: number;
  paymentId: string;
  amount?: string;
  status?: string;
  developerTrackingId?: string;
  problems?: string[];
  settledBy?: { paymentId: string };
  [field: string]: unknown;
}

/** What an admin call answered: the method's result, or the error it threw (its class name and message). */
export type AdminAnswer<T> =
  { ok: T; error?: undefined } | { ok?: undefined; error: { name: string; message: string } };

/** One app instance, a child process. */
export interface AppInstance {
  process: FixtureProcess;
  /** Its webhook route: `<url>/hook`. */
  hookUrl: string;
  /** Every outcome event its handlers received so far, in order. */
  events: InstanceEvent[];
  /** Calls `method` of its client (generatePayment, reconcilePayment, runReconciliation, getOutcome) or its store's findPending. */
  call<T = unknown>(method: string, ...args: unknown[]): Promise<AdminAnswer<T>>;
  /** SIGTERM (the client closed), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/** Where an instance's store is, and how it runs. */
export interface InstanceSettings {
  /** The service: the client's keys, baseUrl and links (a sandbox's `options()`, or a fake's). */
  service: { publicKey: string; privateKey: string; baseUrl: string; successLink: string; failLink: string };
  secret: string;
  /** The port it listens on (a test's own). */
  port: number;
  /** The store: `{ STORE, STORE_URL | CLUSTER_PORTS, PREFIX, TRANSACTIONAL? }` (see fixtures/instance.app.ts). */
  store: Record<string, string>;
  /** duplicates: { refund } (default false). */
  refund?: boolean;
  /** The client's maxRetries (default the plugin's). */
  maxRetries?: number;
}

/** The bundle of a test file's instances; `remove()` deletes it. */
export function bundleInstances(tag: string): { file: string; remove(): void } {
  const dir = path.join(ROOT, 'node_modules/.cache/nestjs-payments-instances', `${tag}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'instance.mjs');
  bundleFixture(path.join(import.meta.dirname, 'fixtures/instance.app.ts'), file);
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts an instance from `bundle` and resolves once it listens. The child is pushed onto
 * `children` first, so that the suite can kill it by its handle whatever happens next.
 */
export async function startInstance(
  bundle: string,
  settings: InstanceSettings,
  children: ChildProcess[],
): Promise<AppInstance> {
  const env: Record<string, string> = {
    ...settings.store,
    SERVICE: JSON.stringify(settings.service),
    SECRET: settings.secret,
    PORT: String(settings.port),
    REFUND: settings.refund ? '1' : '0',
  };
  if (settings.maxRetries !== undefined) env.MAX_RETRIES = String(settings.maxRetries);
  const fixture = await startFixtureProcess(bundle, env, children);
  const events: InstanceEvent[] = [];
  let partial = '';
  fixture.child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines)
      if (line.startsWith('EVENT ')) events.push(JSON.parse(line.slice('EVENT '.length)) as InstanceEvent);
  });
  return {
    process: fixture,
    hookUrl: `${fixture.url}/hook`,
    events,
    call: async <T>(method: string, ...args: unknown[]) => {
      const res = await fetch(`${fixture.url}/admin/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(args),
      });
      if (res.status !== 200) throw new Error(`admin ${method}: HTTP ${res.status}`);
      return (await res.json()) as AdminAnswer<T>;
    },
    stop: async () => {
      const { child } = fixture;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await fixture.exited;
      clearTimeout(timer);
    },
  };
}

/** The answer's result; throws with the instance's error (and its stderr's end) otherwise. */
export function ok<T>(answer: AdminAnswer<T>, instance?: AppInstance): T {
  if (answer.error)
    throw new Error(
      `${answer.error.name}: ${answer.error.message}${instance ? `\n${instance.process.stderr().slice(-2000)}` : ''}`,
    );
  return answer.ok;
}
