import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { freePort } from '../support/ports.js';

/** A CLI transpiled to plain ESM JavaScript, run as a real child process. */
export interface BuiltCli {
  /** Path of the executable entry, `cli/cli.main.js`. */
  readonly main: string;
  /** Removes the build. */
  remove(): Promise<void>;
}

/**
 * Transpiles every file of lib/ to ESM JavaScript in a temp dir whose node_modules is the repo's
 * (axios, ioredis, pg resolve as in an install): the executable then runs as `node cli.main.js`,
 * as npm's bin shim runs it, without a build of the whole package.
 */
export async function buildCli(): Promise<BuiltCli> {
  const dir = await mkdtemp(path.join(tmpdir(), 'payments-cli-'));
  const root = path.resolve('lib');
  await writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
  await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
  const files = (await readdir(root, { recursive: true })).filter((f) => f.endsWith('.ts'));
  for (const file of files) {
    const { outputText } = ts.transpileModule(await readFile(path.join(root, file), 'utf8'), {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        useDefineForClassFields: true,
        experimentalDecorators: true,
      },
    });
    await mkdir(path.join(dir, path.dirname(file)), { recursive: true });
    await writeFile(path.join(dir, file.replace(/\.ts$/, '.js')), outputText);
  }
  return { main: path.join(dir, 'cli', 'cli.main.js'), remove: () => rm(dir, { recursive: true, force: true }) };
}

/** What a run of the CLI printed, and its exit code. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node <main> ...args` with exactly `env` (plus PATH), as a process of its own.
 * @param timeoutMs the child is killed after this long (a hung check is a failure, not a hung suite)
 */
export function runCliProcess(
  cli: BuiltCli,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli.main, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A loopback port nothing listens on (taken, then released). */
export const closedPort = freePort;

export { freePort };
