// Bundles a child-process entry whose Nest classes need their constructor parameters' types at run
// time (`emitDecoratorMetadata`, which esbuild does not emit): each TypeScript file of the repository
// is transpiled by TypeScript first, then bundled by esbuild as one ES module, packages external.
// Usage: node test/support/bundle-decorated.mjs <entry.ts> <outfile.mjs>
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

const [entry, outfile] = process.argv.slice(2);

/** TypeScript's own emit of each .ts file, decorator metadata included. */
const decoratorMetadata = {
  name: 'decorator-metadata',
  setup(bundle) {
    // Docs snippets import the package by name, as a merchant would: here it is lib/ from source.
    bundle.onResolve({ filter: /^nestjs-payments(\/[\w-]+)?$/ }, ({ path }) => ({
      path: join(ROOT, 'lib', path.slice('nestjs-payments'.length), 'index.ts'),
    }));
    bundle.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      const { outputText } = ts.transpileModule(source, {
        fileName: path,
        compilerOptions: {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          isolatedModules: true,
        },
      });
      return { contents: outputText, loader: 'js', resolveDir: dirname(path) };
    });
  },
};

await build({
  entryPoints: [entry],
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outfile,
  logLevel: 'error',
  plugins: [decoratorMetadata],
});
