#!/usr/bin/env node
/**
 * Executable entry of `nestjs-payments` (package.json `bin`): `nestjs-payments <command>`. All
 * logic is in `cli.commands.ts`; this file only runs it, so importing that module runs nothing.
 */
import { runCli } from './cli.commands.js';

void runCli(process.argv.slice(2)).then(
  (code) => {
    // exitCode rather than exit(): lets pending writes to stdout flush before the process ends.
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`nestjs-payments: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
