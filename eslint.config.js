// ESLint flat config (`npm run lint`): typescript-eslint's type-aware recommended rules for the
// TypeScript of lib/, test/ and sample-app/src/ (through tsconfig.json), the JavaScript
// recommended rules for the .js/.mjs/.cjs files, and eslint-config-prettier last, so formatting
// is left to Prettier (`npm run format`).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
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
      // Generated from README.md by scripts/readme-snippets.mjs.
      'test/readme/snippets/**',
    ],
  },
  js.configs.recommended,
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
      globals: { require: 'readonly', module: 'writable', exports: 'writable', __dirname: 'readonly', __filename: 'readonly' },
    },
  },
  prettier,
);
