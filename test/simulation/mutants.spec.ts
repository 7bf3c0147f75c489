import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';

/**
 * The deliberate bugs of scripts/simulation-mutants.mjs must still apply: each anchor is in its
 * file exactly once, so that a refactor cannot silently turn the mutation run into a no-op.
 */
const mutants = JSON.parse(readFileSync('test/simulation/mutants.json', 'utf8')) as Array<{
  name: string;
  file: string;
  find: string;
  replace: string;
}>;

describe('the simulation mutants', () => {
  it('at least thirty, each with its anchor exactly once in its file', () => {
    expect(mutants.length).toBeGreaterThanOrEqual(30);
    for (const m of mutants)
      expect({ name: m.name, occurrences: readFileSync(m.file, 'utf8').split(m.find).length - 1 }).toEqual({
        name: m.name,
        occurrences: 1,
      });
  });
});
