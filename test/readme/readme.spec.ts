import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error a plain .mjs script without types: its one export is tested here
import { readmeSnippets } from '../../scripts/readme-snippets.mjs';

const ROOT = join(import.meta.dirname, '../..');

describe('README snippets', () => {
  const snippets = readmeSnippets(readFileSync(join(ROOT, 'README.md'), 'utf8')) as Array<[string, string]>;

  it('were extracted from this README (so the type check and the recipe test cover what it says now)', () => {
    const dir = join(ROOT, 'test/readme/snippets');
    expect(readdirSync(dir).sort()).toEqual(snippets.map(([name]) => name).sort());
    for (const [name, text] of snippets) expect(readFileSync(join(dir, name), 'utf8')).toBe(text);
  });

  it('are whole modules: each imports what it uses from the package by its public names', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(10);
    for (const [, text] of snippets)
      expect(text).toMatch(/^import .* from '(nestjs-payments(\/\w+)?|@nestjs\/\w+|express|@electric-sql\/pglite|@jest\/globals)';$/m);
    expect(snippets.map(([name]) => name)).toContain('readme-recipe.e2e-spec.ts');
  });
});
