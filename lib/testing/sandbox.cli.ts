#!/usr/bin/env node
/**
 * Executable entry of `nestjs-payments` (package.json `bin`): `nestjs-payments sandbox [options]`.
 * All logic is in `sandbox.command.ts`; this file only runs it, so importing that module never
 * starts a server.
 */
import { runSandboxCommand } from './sandbox.command.js';

void runSandboxCommand(process.argv.slice(2)).then((code) => {
  // exitCode rather than exit(): lets pending writes to stdout flush before the process ends.
  process.exitCode = code;
});
