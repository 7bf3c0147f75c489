import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  docSnippets,
  documentationFiles,
  documentationSnippets,
  VERIFIED_BY_COMPAT,
  // @ts-expect-error a plain .mjs script without types: its exports are tested here
} from '../../scripts/readme-snippets.mjs';

const ROOT = join(import.meta.dirname, '../..');

describe('README and guide snippets', () => {
  const snippets = documentationSnippets(ROOT) as Array<[string, string, string]>;

  it('were extracted from this README and these guides (so the type check and the recipe test cover what they say now)', () => {
    const dir = join(ROOT, 'test/readme/snippets');
    expect(readdirSync(dir).sort()).toEqual(snippets.map(([name]) => name).sort());
    for (const [name, text] of snippets) expect(readFileSync(join(dir, name), 'utf8')).toBe(text);
  });

  it('are whole modules: each imports what it uses from the package by its public names', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(10);
    for (const [, text] of snippets)
      expect(text).toMatch(
        /^import .* from '(nestjs-payments(\/\w+)?|@nestjs\/\w+|express|@electric-sql\/pglite|@jest\/globals)';$/m,
      );
    expect(snippets.map(([name]) => name)).toContain('readme-recipe.e2e-spec.ts');
  });

  it('come from the README and every guide in docs/ that has TypeScript blocks', () => {
    expect(documentationFiles(ROOT)).toEqual([
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => `docs/${f}`),
    ]);
    const sources = new Set(snippets.map(([, , file]) => file));
    for (const file of documentationFiles(ROOT) as string[]) {
      const blocks = (readFileSync(join(ROOT, file), 'utf8').match(/^```(?:ts|typescript)$/gm) ?? []).length;
      // TypeScript blocks the compatibility matrix runs (a marked ```js block is not one of them).
      const marked = readFileSync(join(ROOT, file), 'utf8').split(`${VERIFIED_BY_COMPAT}\n\`\`\`ts\n`).length - 1;
      // The guide's Jest recipe is run by this repository's suite too (readme-recipe.e2e-spec.ts).
      const alsoHere = snippets.filter(([name, , f]) => f === file && name === 'readme-recipe.e2e-spec.ts').length;
      expect([file, snippets.filter(([, , f]) => f === file).length]).toEqual([file, blocks - marked + alsoHere]);
      if (blocks > marked) expect(sources).toContain(file);
    }
  });

  it('leave out a block the compatibility matrix runs (marked on the line before, or before one blank line), and only that one', () => {
    const markdown = [
      '# Guide',
      '```ts',
      "import { PaymentsModule } from 'nestjs-payments';",
      '```',
      VERIFIED_BY_COMPAT,
      '```ts',
      '// file: compat-only.spec.ts',
      "import { describe } from 'vitest';",
      '```',
      VERIFIED_BY_COMPAT,
      '',
      '```typescript',
      "import { test } from 'node:test';",
      '```',
      'After a paragraph the marker no longer applies:',
      '',
      '```ts',
      '// file: kept.ts',
      "export const kept = 'yes';",
      '```',
      '',
    ].join('\n');
    expect((docSnippets('guide', markdown) as Array<[string, string]>).map(([name]) => name)).toEqual([
      'guide-01.ts',
      'kept.ts',
    ]);
  });
});
