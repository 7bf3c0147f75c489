// docs/developing.md (and the README's "Developing this package") is written for this repository:
// its snippets are commands to run in a clone of it, and the services' defaults the tests use.
// Running the commands from inside the suite they start would recurse, so this holds each one to
// what the clone has: an npm script, a file, the default the test helpers really take.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
const README_SECTION = read('README.md').split('\n## Developing this package\n')[1].split('\n## ')[0];
const PAGES: Array<[string, string]> = [
  ['docs/developing.md', read('docs/developing.md')],
  ['README.md (Developing this package)', README_SECTION],
];

/** The inline code spans of a Markdown text. */
const spans = (markdown: string): string[] => [...markdown.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]);

/** What a command needs from the repository, or undefined when the span is no command. */
function needs(command: string): { script: string } | { file: string } | undefined {
  if (command === 'npm test') return { script: 'test' };
  const script = /^npm run ([\w:-]+)(?: --.*)?$/.exec(command)?.[1];
  if (script !== undefined) return { script };
  const file = /^(?:bash|node) ([\w./-]+)/.exec(command)?.[1];
  return file === undefined ? undefined : { file };
}

describe.each(PAGES)('%s', (_page, markdown) => {
  const commands = spans(markdown).filter((span) => needs(span) !== undefined);

  it('names commands (the test below has something to check)', () => {
    expect(commands.length).toBeGreaterThanOrEqual(3);
  });

  it.each(commands)('`%s` runs in a clone: its npm script or file exists', (command) => {
    const need = needs(command)!;
    if ('script' in need) expect(Object.keys(scripts)).toContain(need.script);
    else expect([need.file, existsSync(join(ROOT, need.file))]).toEqual([need.file, true]);
  });
});

describe('docs/developing.md', () => {
  const page = read('docs/developing.md').replace(/\s+/g, ' ');
  const helpers = read('test/support/services.ts');

  it.each(['REDIS_URL', 'POSTGRES_URL'])('gives the default of %s that the tests take', (variable) => {
    const fromHelpers = new RegExp(`export const ${variable} = process\\.env\\.${variable} \\?\\? '([^']+)'`).exec(
      helpers,
    )?.[1];
    const fromPage = new RegExp(`\`${variable}\` \\(default \`([^\`]+)\`\\)`).exec(page)?.[1];
    expect(fromHelpers).toBeDefined();
    expect(fromPage).toBe(fromHelpers);
  });

  it('says where `npm run docs` writes, as typedoc.json has it', () => {
    const { out } = JSON.parse(read('typedoc.json')) as { out: string };
    expect(page).toContain(`into \`${out}\``);
  });
});
