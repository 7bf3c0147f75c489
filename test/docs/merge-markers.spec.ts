// A merge whose conflict was committed unresolved ships both sides and the markers between them
// (CHANGELOG.md once did): every text file the repository tracks is read for a marker line.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');
const TEXT = /\.(?:[cm]?[jt]sx?|md|json|ya?ml|sh|html|css|sql|prisma|txt)$|(?:^|\/)(?:run|\.gitignore)$/;
// The three marker lines git writes, from the start of a line (seven characters each).
const MARKER = /^(?:<{7} |={7}$|>{7} )/m;

/** The repository's tracked text files (a clean clone's files, whatever the working tree adds). */
function trackedTextFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((file) => TEXT.test(file));
}

describe('no unresolved merge', () => {
  it('reads every tracked text file', () => {
    expect(trackedTextFiles()).toEqual(expect.arrayContaining(['CHANGELOG.md', 'README.md', 'lib/index.ts']));
  });

  it('has no conflict marker line in a tracked text file', () => {
    const marked = trackedTextFiles().filter((file) => MARKER.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(marked).toEqual([]);
  });

  it.each(['<<<<<<< HEAD\n', 'text\n=======\nmore', '>>>>>>> h/recipes\n'])('sees the marker in %j', (text) => {
    expect(MARKER.test(text)).toBe(true);
  });
});
