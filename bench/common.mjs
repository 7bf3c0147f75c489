// Shared helpers of the benchmarks: statistics, child processes, machine facts.
import { fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));

/** Median of numbers (NaN for none). */
export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** The p-quantile (0..1) of an ascending array. */
export function quantile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/**
 * Forks a bench script, resolves with the first message it sends whose `type` is `ready`, and
 * gives a handle to talk to it. The child is killed (by its pid only) if it does not answer in time.
 * With BENCH_CPU_PROF_DIR set, every child writes a V8 CPU profile there (read them with
 * `node bench/cpu-share.mjs <dir>/*.cpuprofile`).
 */
export function forkChild(script, args = [], { execArgv = [], readyTimeoutMs = 60_000 } = {}) {
  const profile = process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
    : [];
  const child = fork(new URL(script, import.meta.url), args, {
    execArgv: [...execArgv, ...profile],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiters = [];
  const inbox = [];
  child.on('message', (message) => {
    const i = waiters.findIndex((w) => w.type === message.type);
    if (i >= 0) waiters.splice(i, 1)[0].resolve(message);
    else inbox.push(message);
  });
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const next = (type, timeoutMs = readyTimeoutMs) => {
    const i = inbox.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${script}: no '${type}' message within ${timeoutMs} ms`)),
        timeoutMs,
      );
      waiters.push({ type, resolve: (m) => (clearTimeout(timer), resolve(m)) });
      exited.then((code) => reject(new Error(`${script} exited (${code}) before sending '${type}'`)));
    });
  };
  return {
    child,
    next,
    send: (message) => child.send(message),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.send({ type: 'stop' });
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** Node version, CPU model, cores, OS. */
export function machineFacts() {
  const cpus = os.cpus();
  return {
    node: process.version,
    cpu: cpus[0]?.model?.trim() ?? 'unknown',
    cores: cpus.length,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  };
}

/** Formats a number with a fixed number of decimals (or '—'). */
export function fmt(value, decimals = 0) {
  return Number.isFinite(value) ? value.toFixed(decimals) : '—';
}
