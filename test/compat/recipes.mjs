// The testing guide's recipes, as the compatibility apps run them (test/compat/run.sh).
//
// A recipe is a fenced ```ts or ```js block of docs/testing.md directly preceded by the line
// `<!-- verified-by: test/compat -->`, whose first line names it and the file it is saved as:
//   // recipe: <name> file: <path in the project>
//
//   node recipes.mjs <guide.md> list                      prints the names of every recipe
//   node recipes.mjs <guide.md> write <project> <name>... writes those recipes into the project,
//                                                         exactly as printed (never over a file)
// Exits non-zero, saying why, on a marked block without a recipe line, a recipe line without the
// marker, a name given twice, an unknown name or a file that is already there.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const MARKER = '<!-- verified-by: test/compat -->';
const RECIPE = /^\/\/ recipe: ([\w-]+) file: (\S+)$/;

function fail(message) {
  console.error(`recipes: ${message}`);
  process.exit(1);
}

/** Every recipe of the guide: { name, file, text, line }. */
export function recipes(markdown, source = 'the guide') {
  const lines = markdown.split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|js)\s*$/.test(lines[i])) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) fail(`${source}:${i + 1}: a code block that never ends`);
    const marked = lines[i - 1] === MARKER;
    const named = RECIPE.exec(lines[i + 1] ?? '');
    if (marked && !named)
      fail(`${source}:${i + 2}: a block marked "${MARKER}" must start with "// recipe: <name> file: <path>"`);
    if (named && !marked) fail(`${source}:${i + 1}: the recipe "${named[1]}" must be directly preceded by "${MARKER}"`);
    if (named) {
      if (found.some((r) => r.name === named[1])) fail(`${source}:${i + 2}: a second recipe named "${named[1]}"`);
      found.push({ name: named[1], file: named[2], text: `${lines.slice(i + 1, end).join('\n')}\n`, line: i + 2 });
    }
    i = end;
  }
  return found;
}

const [guide, command, project, ...names] = process.argv.slice(2);
if (!guide || !['list', 'write'].includes(command ?? ''))
  fail('usage: node recipes.mjs <guide.md> list | write <project> <name>...');
const all = recipes(readFileSync(guide, 'utf8'), path.basename(guide));
if (command === 'list') {
  console.log(all.map((r) => r.name).join(' '));
} else {
  if (!project || names.length === 0) fail('write needs a project directory and at least one recipe name');
  for (const name of names) {
    const recipe = all.find((r) => r.name === name);
    if (!recipe) fail(`no recipe "${name}" in ${guide} (it has: ${all.map((r) => r.name).join(', ') || 'none'})`);
    const target = path.join(project, recipe.file);
    if (existsSync(target)) fail(`${recipe.file} is already in the project; the recipe "${name}" would replace it`);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, recipe.text);
    console.log(`recipes: ${name} (${path.basename(guide)}:${recipe.line}) -> ${recipe.file}`);
  }
}
