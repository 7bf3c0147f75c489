import { describe, expect, it } from '@jest/globals';
import { readdir, readFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};
const declared = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

/** Every module specifier imported or re-exported by a file (static and dynamic). */
function specifiers(code: string): string[] {
  const found = new Set<string>();
  for (const re of [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s+['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g, /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g]) {
    for (const m of code.matchAll(re)) found.add(m[1]);
  }
  return [...found];
}

function packageName(spec: string): string {
  return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
}

const files = await sources(path.join(root, 'lib'));
const imports = await Promise.all(
  files.map(async (file) => ({ file: path.relative(root, file), specs: specifiers(await readFile(file, 'utf8')) })),
);

/** Which packages each layer may import (DESIGN.md); relative imports are checked separately. */
const LAYER_PACKAGES: Record<string, (name: string) => boolean> = {
  core: (n) => ['axios', 'class-validator', 'lru-cache'].includes(n),
  nest: (n) => n.startsWith('@nestjs/'),
  express: (n) => n === 'express',
  redis: (n) => n === 'ioredis',
  testing: () => false,
};
/** Which sibling layers each layer may import: data flows nest/express -> core, never back. */
const LAYER_LAYERS: Record<string, string[]> = {
  core: [],
  nest: ['core'],
  express: ['core'],
  redis: ['core'],
  testing: ['core'],
};

describe('lib/ imports', () => {
  it('finds the sources', () => {
    expect(files.length).toBeGreaterThan(10);
  });

  it('imports only node built-ins and packages declared in package.json', () => {
    const undeclared = imports.flatMap(({ file, specs }) =>
      specs
        .filter((s) => !s.startsWith('.') && !s.startsWith('node:') && !builtinModules.includes(s))
        .filter((s) => !declared.has(packageName(s)))
        .map((s) => `${file}: ${s}`),
    );
    expect(undeclared).toEqual([]);
  });

  it('keeps the layers of DESIGN.md: core knows no framework, data flows one way', () => {
    const violations: string[] = [];
    for (const { file, specs } of imports) {
      const [, layer] = file.split(path.sep);
      if (!(layer in LAYER_PACKAGES)) continue;
      for (const spec of specs) {
        if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
        if (spec.startsWith('.')) {
          const target = path.relative(path.join(root, 'lib'), path.resolve(path.dirname(path.join(root, file)), spec)).split(path.sep)[0];
          if (target !== layer && !LAYER_LAYERS[layer].includes(target)) violations.push(`${file} -> ${spec}`);
        } else if (!LAYER_PACKAGES[layer](packageName(spec)) && spec !== 'reflect-metadata') {
          violations.push(`${file} -> ${spec}`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('uses .js extensions on relative imports (required by Node ESM)', () => {
    const bad = imports.flatMap(({ file, specs }) => specs.filter((s) => s.startsWith('.') && !s.endsWith('.js')).map((s) => `${file}: ${s}`));
    expect(bad).toEqual([]);
  });
});
