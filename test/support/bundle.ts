import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Bundles a crash test's child-process entry (TypeScript importing lib/ from source) into one ES
 * module with esbuild, packages left external: a real `node` process runs it, with no loader.
 */
export function bundleFixture(entry: string, outfile: string): void {
  execFileSync(
    path.join(ROOT, 'node_modules/.bin/esbuild'),
    [
      entry,
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--packages=external',
      `--outfile=${outfile}`,
      '--log-level=error',
    ],
    { cwd: ROOT, stdio: 'pipe' },
  );
}
