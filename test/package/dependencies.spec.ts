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
  for (const re of [
    /\bfrom\s+['"]([^'"]+)['"]/g,
    /\bimport\s+['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g,
  ]) {
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

/** Which packages each layer may import (docs/architecture.md, Layers); relative imports are checked separately. */
const LAYER_PACKAGES: Record<string, (name: string) => boolean> = {
  // @opentelemetry/api: an optional peer, loaded lazily by telemetry.loader.ts only.
  core: (n) => ['axios', 'class-validator', 'lru-cache', '@opentelemetry/api'].includes(n),
  nest: (n) => n.startsWith('@nestjs/'),
  express: (n) => n === 'express',
  redis: (n) => n === 'ioredis',
  postgres: (n) => n === 'pg',
  testing: () => false,
  store: () => false,
  terminus: (n) => n.startsWith('@nestjs/'),
  // The desk: Nest only in desk.nest.ts, loaded by PaymentsDeskModule.forRoot (Express apps install no Nest).
  desk: (n) => n.startsWith('@nestjs/'),
  // Vendure's packages (express for the webhook controller's types only).
  // (typeorm: the inbox's entity, declared with the TypeORM that @vendure/core brings, as Vendure's plugins do.)
  vendure: (n) => n.startsWith('@nestjs/') || ['@vendure/core', 'graphql', 'express', 'typeorm'].includes(n),
  medusa: (n) => n === '@medusajs/framework',
  // The executable: ioredis and pg only through lib/redis and lib/postgres, loaded lazily.
  cli: () => false,
};
/** Which sibling layers each layer may import: data flows nest/express -> core, never back. */
const LAYER_LAYERS: Record<string, string[]> = {
  core: [],
  nest: ['core'],
  express: ['core'],
  redis: ['core'],
  postgres: ['core'],
  testing: ['core'],
  store: ['core'],
  terminus: ['core', 'nest'],
  desk: ['core', 'nest'],
  vendure: ['core'],
  medusa: ['core'],
  cli: ['core', 'nest', 'testing', 'redis', 'postgres'],
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

  it('keeps the layers of docs/architecture.md: core knows no framework, data flows one way', () => {
    const violations: string[] = [];
    for (const { file, specs } of imports) {
      const [, layer] = file.split(path.sep);
      if (!(layer in LAYER_PACKAGES)) continue;
      for (const spec of specs) {
        if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
        if (spec.startsWith('.')) {
          const target = path
            .relative(path.join(root, 'lib'), path.resolve(path.dirname(path.join(root, file)), spec))
            .split(path.sep)[0];
          if (target !== layer && !LAYER_LAYERS[layer].includes(target)) violations.push(`${file} -> ${spec}`);
        } else if (!LAYER_PACKAGES[layer](packageName(spec)) && spec !== 'reflect-metadata') {
          violations.push(`${file} -> ${spec}`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('lib/cli reaches the core through its barrel only, and the Nest layer only for the variables (no @nestjs at run time)', () => {
    const reached = imports
      .filter(({ file }) => file.startsWith(`lib${path.sep}cli${path.sep}`))
      .flatMap(({ specs }) => specs.filter((s) => s.startsWith('../core/') || s.startsWith('../nest/')));
    expect(reached.length).toBeGreaterThan(0);
    // The redactor too, through the barrel: `verify` prints the service's answer, cut of every
    // secret of the variables (the client's own redaction only knows the secrets of its options).
    expect([...new Set(reached)].sort()).toEqual([
      '../core/index.js',
      '../nest/payments.config.js',
      '../nest/payments.module-options.js',
    ]);
  });

  it('uses .js extensions on relative imports (required by Node ESM)', () => {
    const bad = imports.flatMap(({ file, specs }) =>
      specs.filter((s) => s.startsWith('.') && !s.endsWith('.js')).map((s) => `${file}: ${s}`),
    );
    expect(bad).toEqual([]);
  });
});

/** package.json as published: entry points, types, peers. */
const manifest = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {
  main?: string;
  types?: string;
  bin?: Record<string, string>;
  exports: Record<string, string | { import?: Record<string, string>; require?: Record<string, string> }>;
  typesVersions?: Record<string, Record<string, string[]>>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
/** Whether `version` satisfies `range`, a `||` of caret ranges (`^0.3.0 || ^1.0.0`: the form of every peer range here). */
function caretAdmits(range: string, version: string): boolean {
  const [major, minor, patch] = version.split('.').map(Number);
  return range.split('||').some((alternative) => {
    const caret = /^\^(\d+)\.(\d+)(?:\.(\d+))?$/.exec(alternative.trim());
    if (!caret) throw new Error(`peer range ${range}: not a caret range`);
    const [lowMajor, lowMinor, lowPatch] = caret.slice(1).map((n) => Number(n ?? 0));
    if (major !== lowMajor || (lowMajor === 0 && minor !== lowMinor)) return false;
    return minor > lowMinor || (minor === lowMinor && patch >= lowPatch);
  });
}
const typedoc = JSON.parse(await readFile(path.join(root, 'typedoc.json'), 'utf8')) as { entryPoints: string[] };
/** lib/ folders that are internal layers, not package subpaths (docs/architecture.md, Layers). */
const INTERNAL_LAYERS = ['core', 'nest'];

describe('package.json exports (one CommonJS build, ES-module re-exports: docs/module-formats.md)', () => {
  const subpaths = Object.keys(manifest.exports).filter((s) => s !== './package.json');
  /** `.` -> `index`, `./express` -> `express/index`. */
  const stem = (subpath: string) => (subpath === '.' ? 'index' : `${subpath.slice(2)}/index`);

  it('gives every entry point an import and a require condition, each with its types first', () => {
    const expected = Object.fromEntries(
      subpaths.map((s) => [
        s,
        {
          import: { types: `./dist/${stem(s)}.d.mts`, default: `./dist/${stem(s)}.mjs` },
          require: { types: `./dist/${stem(s)}.d.ts`, default: `./dist/${stem(s)}.cjs` },
        },
      ]),
    );
    expect(Object.fromEntries(subpaths.map((s) => [s, manifest.exports[s]]))).toEqual(expected);
    for (const s of subpaths) {
      const target = manifest.exports[s] as { import: Record<string, string>; require: Record<string, string> };
      expect([Object.keys(target.import)[0], Object.keys(target.require)[0]]).toEqual(['types', 'types']);
    }
    expect(manifest.exports['./package.json']).toBe('./package.json');
    expect({ main: manifest.main, types: manifest.types }).toEqual({
      main: './dist/index.cjs',
      types: './dist/index.d.ts',
    });
  });

  it('maps every subpath in typesVersions to its CommonJS types, for TypeScript moduleResolution node10 (which ignores exports)', () => {
    const expected = Object.fromEntries(
      subpaths.filter((s) => s !== '.').map((s) => [s.slice(2), [`./dist/${stem(s)}.d.ts`]]),
    );
    expect(manifest.typesVersions).toEqual({ '*': expected });
  });

  it('has one entry point per public folder of lib/, and the API reference documents each', async () => {
    const folders = (await readdir(path.join(root, 'lib'), { withFileTypes: true }))
      .filter((e) => e.isDirectory() && !INTERNAL_LAYERS.includes(e.name))
      .map((e) => e.name);
    const withIndex: string[] = [];
    for (const folder of folders) {
      if ((await readdir(path.join(root, 'lib', folder))).includes('index.ts')) withIndex.push(`./${folder}`);
    }
    expect([...subpaths].sort()).toEqual(['.', ...withIndex].sort());
    expect([...typedoc.entryPoints].sort()).toEqual(subpaths.map((s) => `lib/${stem(s)}.ts`).sort());
  });

  it('runs the CLI (sandbox, doctor, verify, outcomes) from the build', async () => {
    expect(manifest.bin).toEqual({ 'nestjs-payments': './dist/cli/cli.main.js' });
    expect((await readFile(path.join(root, 'lib/cli/cli.main.ts'), 'utf8')).startsWith('#!/usr/bin/env node\n')).toBe(
      true,
    );
    expect(
      (await readFile(path.join(root, 'lib/testing/sandbox.cli.ts'), 'utf8')).startsWith('#!/usr/bin/env node\n'),
    ).toBe(true);
  });

  it('admits, in each peer range, the version this repository installs and tests (else a host on it gets ERESOLVE)', async () => {
    const lock = JSON.parse(await readFile(path.join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    const refused = Object.entries(manifest.peerDependencies ?? {}).flatMap(([name, range]) => {
      const tested = lock.packages[`node_modules/${name}`]?.version;
      return tested === undefined || caretAdmits(range, tested) ? [] : [`${name}@${tested} (peer range ${range})`];
    });
    expect(refused).toEqual([]);
  });

  it('needs class-validator everywhere; every other peer is optional (an Express app installs no Nest)', () => {
    const required = Object.keys(manifest.peerDependencies ?? {}).filter(
      (name) => !manifest.peerDependenciesMeta?.[name]?.optional,
    );
    expect(required).toEqual(['class-validator']);
  });
});
