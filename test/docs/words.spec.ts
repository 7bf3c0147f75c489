import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// The code and the guides speak docs/architecture.md's words. A word retired from them is listed
// here with what replaced it; any use in lib/ or in the docs (comments, names, prose) fails.

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Retired words, as a whole word in any case and form, and the words that replaced them. */
const RETIRED: ReadonlyArray<[RegExp, string]> = [
  [
    /\bsweep(s|ing)?\b|\bswept\b/i,
    'reconciliation (the background check of the queue) or cleanup (expired rows and entries)',
  ],
];

/** The files of `dir` ending in `extension`, but the API reference TypeDoc generates (docs/api). */
function files(dir: string, extension: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith(extension) && !file.startsWith(`api${path.sep}`))
    .map((file) => path.join(dir, file));
}

describe('the words of docs/architecture.md', () => {
  const sources = [...files('lib', '.ts'), ...files('docs', '.md'), 'README.md', path.join('test', 'README.md')];

  it('reads the sources', () => {
    expect(sources.length).toBeGreaterThan(100);
    expect(sources).toContain(path.join('lib', 'core', 'settlement', 'reconciliation.scheduler.ts'));
  });

  it.each(RETIRED.map(([word, instead]) => [word.source, word, instead] as const))(
    'no retired word %s in lib/ and the docs',
    (_source, word, instead) => {
      const found: string[] = [];
      for (const file of sources)
        readFileSync(path.join(ROOT, file), 'utf8')
          .split('\n')
          .forEach((line, i) => {
            if (word.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
          });
      expect({ instead, found }).toEqual({ instead, found: [] });
    },
  );
});
