/**
 * Jest in ESM mode (the Nest 12 packages are ESM-only). Run through `npm test`, which sets
 * --experimental-vm-modules. Type checking is done once by `tsc --noEmit` before jest runs,
 * so ts-jest only transpiles (isolatedModules in tsconfig.json).
 * The file name is the rule `npm run test:quick` selects by: `*.spec.ts` runs in-process (no server,
 * socket or child process), `*.e2e-spec.ts` starts servers, browsers or processes.
 * @type {import('jest').Config}
 */
export default {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/test/compat/'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // The sample app imports the package by name, as a merchant would; tests run it from source.
    '^nestjs-payments$': '<rootDir>/lib/index.ts',
    '^nestjs-payments/(.*)$': '<rootDir>/lib/$1/index.ts',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json', diagnostics: false }],
  },
  testTimeout: 30000,
  // The long files first, also in a fresh clone (see the file).
  testSequencer: '<rootDir>/scripts/jest-sequencer.cjs',
  // Sockets and timers must be closed by the tests themselves; a hanging handle is a bug.
  forceExit: false,
};
