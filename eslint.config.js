// ESLint flat config (`npm run lint`): typescript-eslint's type-aware recommended rules for the
// TypeScript of lib/, test/ and sample-app/src/ (through tsconfig.json), the JavaScript
// recommended rules for the .js/.mjs/.cjs files, and eslint-config-prettier last, so formatting
// is left to Prettier (`npm run format`).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { readdirSync } from 'node:fs';
import { defineConfig } from 'eslint/config';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** The Node.js globals the JavaScript files use (the `globals` package is not a dependency). */
const node = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'fetch',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'structuredClone',
    'performance',
    'AbortController',
  ].map((name) => [name, 'readonly']),
);

/** lib/'s folders and the core's, read from disk: a folder added later is in every zone below. */
const foldersOf = (dir) =>
  readdirSync(new URL(dir, import.meta.url), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
const LIB_FOLDERS = foldersOf('./lib/');
const CORE_FOLDERS = foldersOf('./lib/core/');

/**
 * The core's folders, bottom layer first (docs/architecture.md, "Core's layers"): a folder imports
 * only the folders before it, so no import runs back up. A core folder missing here fails lint:
 * where it sits is a decision.
 */
const CORE_LAYERS = ['time', 'common', 'store', 'api', 'telemetry', 'settlement', 'webhook', 'client'];
const unplaced = CORE_FOLDERS.filter((folder) => !CORE_LAYERS.includes(folder));
if (unplaced.length) {
  throw new Error(`eslint.config.js: place lib/core/${unplaced.join(', lib/core/')} in CORE_LAYERS (its layer)`);
}

/**
 * What each folder of lib/ outside the core may import besides the core (docs/architecture.md,
 * "Layers"). Every other folder, and any folder added later, builds on the core alone.
 */
const BUILDS_ON = { cli: ['nest', 'postgres', 'redis', 'testing'], terminus: ['nest'], desk: ['nest'] };

/** One zone per folder of lib/: the core imports no other folder; another folder, the core and what BUILDS_ON gives it. */
const folderZones = LIB_FOLDERS.map((folder) => {
  const allowed = folder === 'core' ? [] : ['core', ...(BUILDS_ON[folder] ?? [])];
  const from = LIB_FOLDERS.filter((other) => other !== folder && !allowed.includes(other));
  return {
    target: `./lib/${folder}`,
    from: from.map((other) => `./lib/${other}`),
    message:
      folder === 'core'
        ? 'core is framework-free: it imports no other folder of lib/'
        : `lib/${folder}/ builds on ${allowed.join(', ')} only (docs/architecture.md, Layers)`,
  };
});

/** One zone per core folder: the folders above it are out of its reach. */
const coreLayerZones = CORE_LAYERS.slice(0, -1).map((layer, i) => ({
  target: `./lib/core/${layer}`,
  from: CORE_LAYERS.slice(i + 1).map((above) => `./lib/core/${above}`),
  message: `core's layers: ${layer}/ sits below ${CORE_LAYERS.slice(i + 1).join(', ')}; move what it needs down (docs/architecture.md)`,
}));

/** The rule that keeps every folder outside the core to the core's barrels. */
const throughCoreBarrels = [
  'error',
  {
    patterns: [
      {
        // `../core/<folder>/<file>.js`: a core folder's insides.
        regex: '^(\\.\\./)+core/[^/]+/(?!index\\.js$)',
        message:
          "outside the core, the core is imported through its barrels: '../core/index.js' or '../core/<folder>/index.js' (docs/architecture.md)",
      },
    ],
  },
];

export default defineConfig(
  {
    ignores: [
      'dist/**',
      'coverage/**',
      'docs/api/**',
      'sample-app/dist/**',
      'bench/.work/**',
      'test/compat/.work/**',
      // The compatibility apps are installed and linted nowhere but in their own projects.
      'test/compat/apps/**',
      // Type-checked only by the compatibility matrix, against the packed package.
      'test/compat/types/**',
      // Generated from README.md and docs/*.md by scripts/readme-snippets.mjs.
      'test/readme/snippets/**',
      // Build output and data of the sample shop and its crash tests.
      'test/sample-app/.work/**',
      'sample-app/.data/**',
    ],
  },
  js.configs.recommended,
  {
    rules: {
      // Input checks look for control characters (CR/LF, NUL) on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    files: ['**/*.ts', '**/*.mts', '**/*.cts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        // Files outside tsconfig.json (top-level config files) get a default project.
        projectService: { allowDefaultProject: ['*.ts', 'sample-app/*.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Stores and handlers implement Promise-returning interfaces; an in-memory implementation has
      // nothing to await, and `async` is what keeps its throws as rejections.
      '@typescript-eslint/require-await': 'off',
      // Configuration and template values are coerced with String() on purpose, after their checks.
      '@typescript-eslint/no-base-to-string': 'off',
      // `_name` marks a value left out on purpose (a rest sibling, an unused parameter of an interface).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // sample-app/tsconfig.json resolves `nestjs-payments` through the built dist/ (as a merchant's
    // build would); lint reads the sources through the root tsconfig.json, which maps the package
    // name to lib/, so linting needs no build first.
    files: ['sample-app/src/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: false, project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    // The layers of docs/architecture.md, enforced: data flows nest/express -> core -> the service, and
    // nothing imports in a circle. A breach fails `npm run lint`, so it is caught in review, not
    // remembered.
    files: ['lib/**/*.ts', 'sample-app/src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Parse TypeScript dependencies too: without it no-cycle cannot follow an import into a .ts file.
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [...folderZones, ...coreLayerZones],
        },
      ],
    },
  },
  {
    files: ['lib/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@nestjs/*', 'express', 'ioredis', 'pg', '@electric-sql/*', 'rxjs', 'reflect-metadata'],
              message: 'core is framework-free (docs/architecture.md, Layers)',
            },
            {
              // `../<folder>/<file>.js` from inside a core folder: another folder's insides.
              regex: '^\\.\\./(?!\\.\\.)[^/]+/(?!index\\.js$)',
              message:
                "another folder of the core is imported through its barrel, '../<folder>/index.js' (docs/architecture.md)",
            },
          ],
        },
      ],
    },
  },
  ...LIB_FOLDERS.filter((folder) => folder !== 'core').map((folder) => ({
    files: [`lib/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': throughCoreBarrels },
  })),
  {
    // Tests read parsed JSON bodies and pass jest matchers methods by reference all the time: the
    // no-unsafe family and unbound-method would only add casts there. They stay on for lib/.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: node },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        exports: 'writable',
        __dirname: 'readonly',
        __filename: 'readonly',
      },
    },
  },
  prettier,
);
