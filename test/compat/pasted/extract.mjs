// What a new user pastes, per kind of project: the blocks of README.md, then of docs/testing.md,
// marked for that kind (test/compat/pasted/pasted.sh runs them in a freshly generated project).
//
// A pasted block is a fenced block preceded by the line `<!-- paste: <kind> [<kind>...] -->` (other
// `<!-- ... -->` lines may stand between it and the fence, such as the compatibility marker):
//   - a ```ts or ```js block whose first line is `// file: <path>` or `// recipe: <name> file: <path>`
//     is written at that path of the project (replacing a generated file, as the docs say to);
//   - a ```bash or ```sh block is commands, one a line, run in the project (README: installing;
//     the testing guide: running the test).
//
//   node extract.mjs <repo> <kind> <project> <tarball>
// writes the files, and in <project>/.pasted/ the scripts install.sh and test.sh and the names
// of the testing guide's recipes it wrote (recipes). In the install lines, the package's own name is replaced by the packed tarball (the
// one change: the package is not on the registry yet). Exits non-zero, saying why, when a kind
// has no install line, no file or no test command, or a block is marked without a file line.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const KINDS = ['nest11', 'nest12', 'express'];
const PASTE = /^<!-- paste: ([\w ]+) -->$/;
const FILE = /^\/\/ (?:recipe: [\w-]+ )?file: (\S+)$/;

function fail(message) {
  console.error(`pasted: ${message}`);
  process.exit(1);
}

/** The blocks of one Markdown text marked for `kind`: { lang, file?, text, line }. */
export function pastedBlocks(markdown, kind, source = 'the document') {
  const lines = markdown.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w+)\s*$/.exec(lines[i]);
    if (!fence) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) fail(`${source}:${i + 1}: a code block that never ends`);
    let k = i - 1;
    while (k >= 0 && /^<!-- .* -->$/.test(lines[k]) && !PASTE.test(lines[k])) k--;
    const marker = k >= 0 ? PASTE.exec(lines[k]) : null;
    if (marker) {
      const kinds = marker[1].trim().split(/\s+/);
      const unknown = kinds.filter((x) => !KINDS.includes(x));
      if (unknown.length > 0)
        fail(`${source}:${k + 1}: unknown kind ${unknown.join(', ')} (kinds: ${KINDS.join(', ')})`);
      if (kinds.includes(kind)) {
        const body = lines.slice(i + 1, end);
        const lang = fence[1];
        if (lang === 'ts' || lang === 'js') {
          const file = FILE.exec(body[0] ?? '')?.[1];
          if (!file) fail(`${source}:${i + 2}: a pasted ${lang} block must start with "// file: <path>"`);
          const recipe = /^\/\/ recipe: ([\w-]+) /.exec(body[0])?.[1];
          blocks.push({ lang, file, recipe, text: `${body.join('\n')}\n`, line: i + 2 });
        } else if (lang === 'bash' || lang === 'sh') {
          blocks.push({ lang, text: `${body.join('\n')}\n`, line: i + 2 });
        } else {
          fail(`${source}:${i + 1}: a pasted block must be ts, js, bash or sh, not ${lang}`);
        }
      }
    }
    i = end;
  }
  return blocks;
}

/** The commands of a bash block, one a line (blank and `#` lines left out). */
export function commands(text) {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** An install line with the package's name replaced by the tarball; every other word as printed. */
export function withTarball(command, tarball) {
  if (!/^npm (install|i|add)\b/.test(command)) return command;
  return command
    .split(' ')
    .map((word) => (word === 'nestjs-payments' ? tarball : word))
    .join(' ');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [repo, kind, project, tarball] = process.argv.slice(2);
  if (!repo || !KINDS.includes(kind ?? '') || !project || !tarball)
    fail(`usage: node extract.mjs <repo> <${KINDS.join('|')}> <project> <tarball>`);
  const phases = { install: [], test: [] };
  let files = 0;
  const recipes = [];
  for (const [doc, phase] of [
    ['README.md', 'install'],
    ['docs/testing.md', 'test'],
  ]) {
    for (const block of pastedBlocks(readFileSync(path.join(repo, doc), 'utf8'), kind, doc)) {
      if (block.file) {
        const target = path.join(project, block.file);
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, block.text);
        files++;
        if (block.recipe) recipes.push(block.recipe);
        console.error(`pasted: ${doc}:${block.line} -> ${block.file}`);
      } else {
        for (const command of commands(block.text))
          phases[phase].push(phase === 'install' ? withTarball(command, tarball) : command);
      }
    }
  }
  if (!phases.install.some((c) => c.includes(tarball)))
    fail(`README.md has no install line of nestjs-payments for ${kind}`);
  if (files === 0) fail(`no file to paste for ${kind}`);
  if (phases.test.length === 0) fail(`docs/testing.md has no command to run the test for ${kind}`);
  mkdirSync(path.join(project, '.pasted'), { recursive: true });
  writeFileSync(path.join(project, '.pasted', 'recipes'), `${recipes.join(' ')}\n`);
  for (const [phase, lines] of Object.entries(phases))
    writeFileSync(path.join(project, '.pasted', `${phase}.sh`), `set -ex\n${lines.join('\n')}\n`);
}
