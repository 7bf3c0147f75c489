// Extracts the TypeScript snippets of README.md and of the guides in docs/ into
// test/readme/snippets/, so that `npm test` type-checks every one of them (tsconfig includes test/)
// and jest runs the ones named as tests (a first line `// file: <name>.e2e-spec.ts`) and boots the
// others (test/readme/readme-snippets.e2e-spec.ts). The folder is generated: never edit it by hand.
// A block directly preceded by the line `<!-- verified-by: test/compat -->` is run by the
// compatibility matrix (in its own project, with its own test runner) and is left out here.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'test/readme/snippets');

/** The marker of a block the compatibility matrix runs instead. */
export const VERIFIED_BY_COMPAT = '<!-- verified-by: test/compat -->';

/**
 * Compatibility recipes this repository's own Jest runs too, under the name given: the testing
 * guide's Jest recipe is a whole test file that runs here as printed, against lib/ (so a change
 * that breaks the recipe fails `npm test`, not only the compatibility matrix).
 */
const ALSO_RUN_HERE = { jest: 'readme-recipe.e2e-spec.ts' };

/**
 * The ```ts (or ```typescript) blocks of one Markdown text as [file name, text] pairs: a block
 * whose first line is `// file: <name>.ts` keeps that name, the others are `<prefix>-NN.ts` in
 * order. Blocks preceded by the compatibility marker (on the line before, or before one blank
 * line) are left out.
 */
export function docSnippets(prefix, markdown) {
  const snippets = [];
  let unnamed = 0;
  for (const match of markdown.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```$/gm)) {
    const before = markdown.slice(0, match.index).split('\n').slice(0, -1);
    const previous = before.at(-1) === '' ? before.at(-2) : before.at(-1);
    const text = match[1];
    if (previous?.trim() === VERIFIED_BY_COMPAT) {
      const recipe = /^\/\/ recipe: ([\w-]+) file: /.exec(text)?.[1];
      if (recipe !== undefined && Object.hasOwn(ALSO_RUN_HERE, recipe)) snippets.push([ALSO_RUN_HERE[recipe], text]);
      continue;
    }
    // A path (`src/shop.module.ts`: where it goes in the project) is named by its file name.
    const named = /^\/\/ file: (?:[\w.-]+\/)*([\w.-]+\.ts)\n/.exec(text);
    unnamed += named ? 0 : 1;
    snippets.push([named ? named[1] : `${prefix}-${String(unnamed).padStart(2, '0')}.ts`, text]);
  }
  return snippets;
}

/** The README's snippets, named as {@link docSnippets} does with the prefix `readme`. */
export function readmeSnippets(readme) {
  return docSnippets('readme', readme);
}

/** The documents whose snippets are extracted: README.md, then docs/*.md in name order. */
export function documentationFiles(base = root) {
  const guides = readdirSync(join(base, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort();
  return ['README.md', ...guides.map((name) => `docs/${name}`)];
}

/** Every snippet of every document, as [file name, text, document] triples; names are unique. */
export function documentationSnippets(base = root) {
  const all = [];
  for (const file of documentationFiles(base)) {
    const prefix = file === 'README.md' ? 'readme' : file.slice('docs/'.length, -'.md'.length);
    for (const [name, text] of docSnippets(prefix, readFileSync(join(base, file), 'utf8')))
      all.push([name, text, file]);
  }
  const seen = new Map();
  for (const [name, , file] of all) {
    if (seen.has(name)) throw new Error(`snippet file name ${name} is used by both ${seen.get(name)} and ${file}`);
    seen.set(name, file);
  }
  return all;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const snippets = documentationSnippets();
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const [name, text] of snippets) writeFileSync(join(target, name), text);
  const documents = new Set(snippets.map(([, , file]) => file)).size;
  console.log(
    `docs: ${snippets.length} TypeScript snippets of ${documents} documents extracted to test/readme/snippets/`,
  );
}
