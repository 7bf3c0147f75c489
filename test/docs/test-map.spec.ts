// test/README.md is where a maintainer finds the test of a lib file: a spec named after it
// (`lib/core/api/http.transport.ts` ↔ `http.transport.spec.ts`), or the folder its table lists the
// file under. This holds every lib file to one of the two, and the table to files that exist.
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** lib's files, as the table names them: `core/api/http.transport`. */
const LIB = filesUnder(join(ROOT, 'lib'))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => relative(join(ROOT, 'lib'), file).slice(0, -'.ts'.length));

const SPEC = /\.(e2e-)?spec\.ts$/;
const SPEC_NAMES = new Set(
  filesUnder(join(ROOT, 'test'))
    .filter((file) => SPEC.test(file) && !file.includes('node_modules'))
    .map((file) => basename(file).replace(SPEC, '')),
);

/** The table's last column: `redis/*`, `core/api/{a,b}` and `index.ts` (every barrel) expanded. */
const LISTED: string[] = readFileSync(join(ROOT, 'test/README.md'), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('| `'))
  .flatMap((line) => [...(line.split('|').at(-2) ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]))
  .flatMap((pattern) => {
    const braces = /^(.*)\{(.*)\}$/.exec(pattern);
    return braces ? braces[2].split(',').map((name) => braces[1] + name) : [pattern];
  });

function listedFor(file: string): boolean {
  return LISTED.some((pattern) => {
    if (pattern === 'index.ts') return basename(file) === 'index';
    if (pattern.endsWith('/*')) return file.startsWith(pattern.slice(0, -1));
    return pattern === file;
  });
}

describe('test/README.md: the test of every lib file can be found', () => {
  it('reads lib and the table (the checks below have something to check)', () => {
    expect(LIB.length).toBeGreaterThan(100);
    expect(LISTED.length).toBeGreaterThan(20);
  });

  it('every lib file has a spec named after it, or is listed under the folder that covers it', () => {
    const unfound = LIB.filter((file) => !SPEC_NAMES.has(basename(file)) && !listedFor(file));
    expect(unfound).toEqual([]);
  });

  it("fake time only through the engine's `clock` option: no test mocks the process's clocks or timers", () => {
    const self = join(ROOT, 'test/docs/test-map.spec.ts');
    const mocking = filesUnder(join(ROOT, 'test'))
      .filter((file) => file.endsWith('.ts') && file !== self && !file.includes('node_modules'))
      .filter((file) =>
        /spyOn\((Date|performance)\b|useFakeTimers|(Date|performance)\.now = /.test(readFileSync(file, 'utf8')),
      )
      .map((file) => relative(ROOT, file));
    expect(mocking).toEqual([]);
  });

  it('every file the table lists exists in lib (a moved or renamed file is listed again)', () => {
    const libFiles = new Set(LIB);
    const stale = LISTED.filter(
      (pattern) =>
        pattern !== 'index.ts' &&
        !pattern.startsWith('sample-app/') &&
        (pattern.endsWith('/*') ? !LIB.some((file) => file.startsWith(pattern.slice(0, -1))) : !libFiles.has(pattern)),
    );
    expect(stale).toEqual([]);
  });
});
