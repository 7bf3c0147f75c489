// The package's users read its code, guides and tests, and can open only what the repository ships.
// The plugin was designed against documents that are not part of it (a design note, the service's
// interface description, a list of the service's public facts): a comment or guide that sends the
// reader there points nowhere. What the code relies on is in docs/service-facts.md and the guides.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');
const THIS_FILE = relative(ROOT, import.meta.filename);
/** What users read: the library, the guides, the README, the tests, the sample app, and the tools' messages. */
const SCANNED = [
  'lib',
  'docs',
  'README.md',
  'CHANGELOG.md',
  'test',
  'sample-app',
  'bench',
  'scripts',
  'eslint.config.js',
];
/** Build output, dependencies and scratch folders: not part of the repository. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'api', 'snippets', '.work', '.data', 'coverage']);
const TEXT = /\.(?:[cm]?[jt]sx?|md|json|ya?ml|sh|html|css|sql)$/;

/** Names of the documents the repository does not ship, and ways of pointing into them. */
const PRIVATE = [
  /public-api-facts/i,
  /payment-service-interface/i,
  /\bDESIGN\.md\b/,
  /\bof DESIGN\b/,
  /(?:^|[\s('"`])\.\.\/shared\//,
  /\bshared\/spec\b/,
  /\binterface spec\b/i,
  /\binterface §/i,
  /(?<!service )\bfacts §/i,
];

function files(path: string): string[] {
  const full = join(ROOT, path);
  if (!statSync(full, { throwIfNoEntry: false })) return [];
  if (statSync(full).isFile()) return TEXT.test(path) ? [path] : [];
  return readdirSync(full)
    .filter((name) => !SKIPPED_DIRS.has(name))
    .flatMap((name) => files(join(path, name)));
}

/** Every line of the scanned files that names a private document: `file:line: text`. */
function privateReferences(): string[] {
  const found: string[] = [];
  for (const file of SCANNED.flatMap(files)) {
    if (file === THIS_FILE) continue;
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (PRIVATE.some((pattern) => pattern.test(line))) found.push(`${file}:${index + 1}: ${line.trim()}`);
      });
  }
  return found;
}

describe('references to documents the repository does not ship', () => {
  it('scans the library, the guides, the README, the tests and the sample app', () => {
    const scanned = SCANNED.flatMap(files);
    for (const expected of [
      'lib/index.ts',
      'docs/architecture.md',
      'README.md',
      'sample-app/README.md',
      'test/docs/docs.spec.ts',
    ])
      expect(scanned).toContain(expected);
  });

  it('recognises each way of pointing at them', () => {
    const lines = [
      'see public-api-facts §1',
      'the payment-service-interface.md table',
      'the layers of DESIGN.md',
      'the public API of DESIGN',
      'read ../shared/spec/x.md',
      'shared/spec/public-api-facts.md',
      'the interface spec says',
      'interface §4.1',
      'as facts §3 says',
    ];
    expect(lines.filter((line) => !PRIVATE.some((pattern) => pattern.test(line)))).toEqual([]);
    const allowed = [
      'docs/service-facts.md §1',
      'service facts §3',
      'RFC 2104 §5',
      'test/compat/shared/e2e/',
      'copies shared/*.ts',
    ];
    expect(allowed.filter((line) => PRIVATE.some((pattern) => pattern.test(line)))).toEqual([]);
  });

  it('are never made: what the code relies on is in docs/', () => {
    expect(privateReferences()).toEqual([]);
  });

  it('docs/service-facts.md gives a source for the facts it lists', () => {
    const facts = readFileSync(join(ROOT, 'docs/service-facts.md'), 'utf8');
    expect(facts).toContain('https://docs.flouci.com/api-reference/verify-transaction');
    expect(facts).toContain('https://docs.flouci.com/api-reference/advanced-payment-flow/confirm-payment');
  });
});
