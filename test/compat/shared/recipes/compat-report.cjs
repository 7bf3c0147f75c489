// Prints a recipe app's line for test/compat/run.sh (which copies this file into the project as
// compat-report.cjs) once its `check` script has run the recipes: what ran them, and with which
// versions, as installed in this project.
const path = require('node:path');
const pkg = require(path.join(process.cwd(), 'package.json'));
function version(name) {
  try {
    return require(require.resolve(`${name}/package.json`, { paths: [process.cwd()] })).version;
  } catch {
    return undefined;
  }
}
const tools = ['@nestjs/core', 'typescript', 'jest', 'ts-jest', 'vitest']
  .map((name) => [name.replace('@nestjs/', ''), version(name)])
  .filter(([, v]) => v)
  .map(([name, v]) => `${name} ${v}`);
const recipes = pkg.compat.recipes.join(', ');
console.log(
  `${path.basename(process.cwd())}: ok (docs/testing.md recipes: ${recipes}; pay on the sandbox, handler once, refund) [node ${process.version}, ${tools.join(', ')}, ${pkg.type === 'module' ? 'esm' : 'commonjs'}]`,
);
