// Extracts the README's TypeScript snippets into test/readme/snippets/, so that `npm test`
// type-checks every one of them (tsconfig includes test/) and jest runs the ones named as tests
// (a first line `// file: <name>.e2e-spec.ts`). The folder is generated: never edit it by hand.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'test/readme/snippets');

/** The README's ```ts blocks as [file name, text] pairs. */
export function readmeSnippets(readme) {
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  return blocks.map((text, i) => {
    const named = /^\/\/ file: ([\w.-]+\.ts)\n/.exec(text);
    return [named ? named[1] : `snippet-${String(i + 1).padStart(2, '0')}.ts`, text];
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const snippets = readmeSnippets(readFileSync(join(root, 'README.md'), 'utf8'));
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const [name, text] of snippets) writeFileSync(join(target, name), text);
  console.log(`readme: ${snippets.length} TypeScript snippets extracted to test/readme/snippets/`);
}
