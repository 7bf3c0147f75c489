import { describe, expect, it } from '@jest/globals';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

// The lint rules that keep the core in layers (eslint.config.js), run on snippets under made-up
// paths inside lib/core/: the project's own config, with type information off (the files do not
// exist, and the layering rules only resolve paths).
const root = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({
  cwd: root,
  overrideConfig: [{ files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked }],
});

/** Bottom first, as in docs/architecture.md ("Core's layers"). */
const LAYERS = ['time', 'common', 'store', 'api', 'telemetry', 'settlement', 'webhook', 'client'];

/** Each finding's rule and the import it is about, for a snippet linted as `lib/core/<folder>/<file>`. */
async function findings(folder: string, code: string): Promise<Array<{ rule: string | null; line: number }>> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, 'lib/core', folder, 'layers.fixture.ts') });
  return result.messages.map((m) => ({ rule: m.ruleId, line: m.line }));
}

/** A snippet that imports every other folder's barrel, one folder a line. */
function importsOfAll(except: string): { code: string; lineOf: Map<string, number> } {
  const others = LAYERS.filter((l) => l !== except);
  const lineOf = new Map(others.map((l, i) => [l, i + 1]));
  return { code: others.map((l) => `export * as ${l}Layer from '../${l}/index.js';`).join('\n') + '\n', lineOf };
}

describe("core's layers (lint)", () => {
  it.each(LAYERS)(
    '%s/ may import the barrels below it and none above',
    async (folder) => {
      const { code, lineOf } = importsOfAll(folder);
      const found = await findings(folder, code);
      const above = LAYERS.slice(LAYERS.indexOf(folder) + 1);
      expect(found.filter((f) => f.rule !== 'import-x/no-restricted-paths')).toEqual([]);
      expect(found.map((f) => f.line).sort((a, b) => a - b)).toEqual(above.map((l) => lineOf.get(l)));
    },
    60_000,
  );

  it('an upward import fails lint: the store reaching for the client', async () => {
    const found = await findings(
      'store',
      "import { PaymentsClient } from '../client/index.js';\nexport const client = PaymentsClient;\n",
    );
    expect(found).toEqual([{ rule: 'import-x/no-restricted-paths', line: 1 }]);
  });

  it("another folder's file is reached through its barrel, a sibling directly", async () => {
    const found = await findings(
      'settlement',
      [
        "import { SharedClock } from '../time/time.clock.js';",
        "import { SYSTEM_CLOCK } from '../time/index.js';",
        "import { SETTLEMENT_WAITS } from './settlement.waits.js';",
        'export const all = [SharedClock, SYSTEM_CLOCK, SETTLEMENT_WAITS];',
        '',
      ].join('\n'),
    );
    expect(found).toEqual([{ rule: 'no-restricted-imports', line: 1 }]);
  });
});

/** lib/'s folders on disk, as eslint.config.js reads them. */
const LIB_FOLDERS = readdirSync(path.join(root, 'lib'), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name);

/** A module of the folder to import: its barrel, or (the CLI has none) its first file. */
function entryOf(folder: string): string {
  const files = readdirSync(path.join(root, 'lib', folder)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  return (files.includes('index.ts') ? 'index.ts' : files.sort()[0]).replace(/\.ts$/, '.js');
}

/** What a folder outside the core may import besides the core (docs/architecture.md, Layers). */
const BUILDS_ON: Record<string, string[]> = {
  cli: ['nest', 'postgres', 'redis', 'testing'],
  terminus: ['nest'],
  desk: ['nest'],
};

/** Each finding's rule, line and severity (1 warning, 2 error), for a snippet linted as `lib/<folder>/<file>`. */
async function libFindings(
  folder: string,
  code: string,
): Promise<Array<{ rule: string | null; line: number; severity: number }>> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, 'lib', folder, 'layers.fixture.ts') });
  return result.messages.map((m) => ({ rule: m.ruleId, line: m.line, severity: m.severity }));
}

describe("lib's folders (lint, zones generated from the folders on disk)", () => {
  it.each(LIB_FOLDERS)(
    '%s/ may import the core and what it builds on, and no other folder',
    async (folder) => {
      const others = LIB_FOLDERS.filter((f) => f !== folder);
      const code = others.map((f) => `export * as ${f}Folder from '../${f}/${entryOf(f)}';`).join('\n') + '\n';
      const allowed = folder === 'core' ? [] : ['core', ...(BUILDS_ON[folder] ?? [])];
      const found = await libFindings(folder, code);
      const zones = found.filter((f) => f.rule === 'import-x/no-restricted-paths');
      // Inside the core, another rule also refuses these imports (core is framework-free).
      if (folder !== 'core') expect(found.filter((f) => !zones.includes(f))).toEqual([]);
      expect(zones.map((f) => f.line).sort((a, b) => a - b)).toEqual(
        others.flatMap((f, i) => (allowed.includes(f) ? [] : [i + 1])),
      );
    },
    60_000,
  );

  // An error in every folder, none left at a warning: a warning passes `npm run lint`.
  it.each(LIB_FOLDERS.filter((folder) => folder !== 'core'))(
    'outside the core (%s/), a core file is reached through a barrel only, or lint fails',
    async (folder) => {
      const found = await libFindings(
        folder,
        [
          "import { PaymentsClient } from '../core/client/payments.client.js';",
          "import { PAYMENTS_DEFAULTS } from '../core/client/index.js';",
          "import { toMillimes } from '../core/index.js';",
          'export const all = [PaymentsClient, PAYMENTS_DEFAULTS, toMillimes];',
          '',
        ].join('\n'),
      );
      expect(found).toEqual([{ rule: 'no-restricted-imports', line: 1, severity: 2 }]);
    },
    60_000,
  );
});
