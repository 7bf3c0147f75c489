import { describe, expect, it } from '@jest/globals';
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
        "import { SharedClock } from '../time/shared.clock.js';",
        "import { SYSTEM_CLOCK } from '../time/index.js';",
        "import { SETTLEMENT_WAITS } from './settlement.waits.js';",
        'export const all = [SharedClock, SYSTEM_CLOCK, SETTLEMENT_WAITS];',
        '',
      ].join('\n'),
    );
    expect(found).toEqual([{ rule: 'no-restricted-imports', line: 1 }]);
  });
});
