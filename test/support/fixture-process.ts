import { spawn, type ChildProcess } from 'node:child_process';
import { settle } from '../faults/support/guards.js';

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ProcessEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A crash test's app, running in a child process of its own. */
export interface FixtureProcess {
  child: ChildProcess;
  /** Where it listens (it printed `READY <port>`). */
  url: string;
  /** Resolves when the process ends, however. */
  exited: Promise<ProcessEnd>;
  /** Resolves once the process has printed `text` on its stdout. */
  printed(text: string): Promise<void>;
  /** What it wrote on stderr so far. */
  stderr(): string;
}

/**
 * Starts `script` with `env` added to this process's environment, and resolves once it prints
 * `READY <port>` (rejects if it exits first, with its stderr). The child is pushed onto
 * `children` first, so that the suite kills it whatever happens next.
 */
export async function startFixtureProcess(
  script: string,
  env: Record<string, string>,
  children: ChildProcess[],
): Promise<FixtureProcess> {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<ProcessEnd>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let stdout = '';
  let stderr = '';
  const watchers: Array<{ test: (out: string) => boolean; resolve: () => void }> = [];
  const when = (test: (out: string) => boolean) =>
    test(stdout) ? Promise.resolve() : new Promise<void>((resolve) => watchers.push({ test, resolve }));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    for (const w of watchers.filter((w) => w.test(stdout))) {
      watchers.splice(watchers.indexOf(w), 1);
      w.resolve();
    }
  });
  // The line counts once its newline came (a chunk may end inside it).
  const READY = /READY (\d+)\n/;
  const port = await new Promise<number>((resolve, reject) => {
    void when((out) => READY.test(out)).then(() => resolve(Number(READY.exec(stdout)![1])));
    void exited.then(({ code, signal }) =>
      reject(new Error(`the app exited (${code ?? signal}) before listening: ${stderr}`)),
    );
  });
  const printed = (text: string) => when((out) => out.includes(text));
  return { child, url: `http://127.0.0.1:${port}`, exited, printed, stderr: () => stderr };
}

/** Probes every 25 ms (at most `tries` times) until `ok` holds of the value; returns the last value. */
export async function until<T>(probe: () => Promise<T>, ok: (value: T) => boolean, tries = 400): Promise<T> {
  let value = await probe();
  for (let i = 0; i < tries && !ok(value); i++) {
    await settle(25);
    value = await probe();
  }
  return value;
}
