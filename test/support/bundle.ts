import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Bundles a crash test's child-process entry (TypeScript importing lib/ from source) into one ES
 * module with esbuild, packages left external: a real `node` process runs it, with no loader.
 * With `split` (default false), what the entry imports dynamically goes into chunks of its own
 * beside `outfile` (named after the entry, `.mjs`), loaded (with its packages) only when imported.
 */
export function bundleFixture(entry: string, outfile: string, split = false): void {
  const out = split
    ? ['--splitting', `--outdir=${path.dirname(outfile)}`, '--out-extension:.js=.mjs']
    : [`--outfile=${outfile}`];
  execFileSync(
    path.join(ROOT, 'node_modules/.bin/esbuild'),
    [entry, '--bundle', '--platform=node', '--format=esm', '--packages=external', ...out, '--log-level=error'],
    { cwd: ROOT, stdio: 'pipe' },
  );
}
