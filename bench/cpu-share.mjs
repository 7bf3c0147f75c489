// Where a bench child's CPU went, from the V8 CPU profiles BENCH_CPU_PROF_DIR makes them write:
//   BENCH_CPU_PROF_DIR=/tmp/prof node bench/run.mjs --only=memory && node bench/cpu-share.mjs /tmp/prof/*.cpuprofile
// Per profile: busy time (idle left out: the apps wait while the others are measured) and the
// shares of the OpenTelemetry SDK, the plugin's telemetry hooks, async hooks (AsyncLocalStorage,
// which any context switch turns on) and the garbage collector. Shares of CPU are steadier than
// throughput ratios on a shared machine.
import { readFileSync } from 'node:fs';

const GROUPS = {
  'OpenTelemetry SDK': (url) => url.includes('@opentelemetry'),
  'plugin telemetry': (url) => url.includes('/core/telemetry/'),
  'async hooks': (url) => /async_hooks|async_local_storage/.test(url),
};

for (const file of process.argv.slice(2)) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const self = new Map();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let busy = 0;
  const shares = Object.fromEntries([...Object.keys(GROUPS), 'garbage collector'].map((k) => [k, 0]));
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    const { functionName, url } = node.callFrame;
    if (functionName === '(idle)') continue;
    busy += us;
    if (functionName === '(garbage collector)') shares['garbage collector'] += us;
    for (const [name, test] of Object.entries(GROUPS)) if (test(url)) shares[name] += us;
  }
  const parts = Object.entries(shares).map(([k, us]) => `${k} ${((100 * us) / busy).toFixed(1)} %`);
  console.log(`${file}: busy ${(busy / 1000).toFixed(0)} ms; ${parts.join(', ')}`);
}
