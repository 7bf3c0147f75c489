/**
 * Runs the sample shop as a child process (`node .../sample-app/src/main.js`), for the crash
 * tests: real signals, a real restart on the same data.
 *
 * `buildShop()` compiles lib/ and sample-app/src/ with tsc once into test/sample-app/.work/build-<digest>
 * (git-ignored; reused while the sources are unchanged), and makes `nestjs-payments` (and its subpaths) resolve to the compiled lib/ by
 * a package.json plus a symlink in that folder's node_modules: no loader, no tsx, and the other
 * packages resolve from the repository's node_modules as usual.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const WORK = join(ROOT, 'test/sample-app/.work');

let built: Promise<string> | undefined;

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** A digest of what the build is made of (lib/, sample-app/src/, tsconfig.json): names, sizes, times. */
async function inputsDigest(): Promise<string> {
  const hash = createHash('sha256');
  for (const folder of ['lib', 'sample-app/src']) {
    const files = (await readdir(join(ROOT, folder), { recursive: true })).sort();
    for (const file of files) {
      const info = await stat(join(ROOT, folder, file));
      if (info.isFile()) hash.update(`${folder}/${file} ${info.size} ${info.mtimeMs}\n`);
    }
  }
  hash.update(await readFile(join(ROOT, 'tsconfig.json')));
  return hash.digest('hex').slice(0, 16);
}

/**
 * Compiles the shop once for its sources: each test file runs in a module registry of its own
 * (and Jest's two workers in processes of their own), so the build is kept in a folder named by
 * its inputs' digest and reused by the next file; it is built in a folder of this process's and
 * renamed into place, so that a file never runs a half-written build or one another removes.
 * Resolves to the path of its main.js.
 */
export function buildShop(): Promise<string> {
  built ??= (async () => {
    const build = join(WORK, `build-${await inputsDigest()}`);
    const main = join(build, 'sample-app/src/main.js');
    if (existsSync(main)) return main;
    const draft = `${build}.${process.pid}`;
    await rm(draft, { recursive: true, force: true });
    await mkdir(draft, { recursive: true });
    const tsconfig = join(WORK, `tsconfig.crash.${process.pid}.json`);
    await writeFile(
      tsconfig,
      JSON.stringify({
        extends: relative(WORK, join(ROOT, 'tsconfig.json')),
        compilerOptions: {
          rootDir: relative(WORK, ROOT),
          outDir: relative(WORK, draft),
          declaration: false,
          sourceMap: false,
          noEmitOnError: false,
          types: ['node'],
        },
        include: [relative(WORK, join(ROOT, 'lib')), relative(WORK, join(ROOT, 'sample-app/src'))],
      }),
    );
    const { output } = await run(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', tsconfig],
      ROOT,
    );
    await rm(tsconfig, { force: true });
    // Type errors elsewhere (work in progress in lib/) do not stop the emit; a missing main.js does.
    if (!existsSync(join(draft, 'sample-app/src/main.js')))
      throw new Error(`tsc did not build the shop:\n${output.slice(0, 4000)}`);
    await writeFile(join(draft, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    await writeFile(
      join(draft, 'lib/package.json'),
      JSON.stringify({
        name: 'nestjs-payments',
        type: 'module',
        exports: { '.': './index.js', './*': './*/index.js' },
      }),
    );
    await mkdir(join(draft, 'node_modules'), { recursive: true });
    await symlink('../lib', join(draft, 'node_modules/nestjs-payments'), 'dir');
    // The migrations, where database.js looks for them (../../drizzle from src/db).
    await symlink(join(ROOT, 'sample-app/drizzle'), join(draft, 'sample-app/drizzle'), 'dir');
    try {
      await rename(draft, build);
    } catch (error) {
      // Another worker put the same build in place first: use it.
      await rm(draft, { recursive: true, force: true });
      if (!existsSync(main)) throw error;
    }
    // Builds of other sources (lib/ changed since) an hour old are of no use any more (a younger one
    // may still be running the shop of a file in the other worker).
    for (const entry of await readdir(WORK)) {
      const other = join(WORK, entry);
      if (/^build(-[0-9a-f]{16}(\.\d+)?)?$/.test(entry) && other !== build)
        if ((await stat(other)).mtimeMs < Date.now() - 3_600_000) await rm(other, { recursive: true, force: true });
    }
    return main;
  })();
  return built;
}

/** A running shop process, with its output kept line by line. */
export class ShopProcess {
  readonly lines: string[] = [];
  private readonly waiters: Array<{ pattern: RegExp; resolve: (match: RegExpExecArray) => void }> = [];
  private buffer = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly child: ChildProcess,
    readonly name: string,
  ) {
    const onData = (chunk: Buffer) => {
      this.buffer += chunk.toString();
      let nl;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        this.lines.push(line);
        if (process.env.SHOP_CRASH_DEBUG) process.stderr.write(`[${name}] ${line}\n`);
        for (const waiter of [...this.waiters]) {
          const match = waiter.pattern.exec(line);
          if (match) {
            this.waiters.splice(this.waiters.indexOf(waiter), 1);
            waiter.resolve(match);
          }
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /**
   * Starts `node main.js` with exactly `env` (plus PATH and NO_COLOR: nothing of the test's own
   * environment leaks in) and waits until it listens.
   */
  static async start(
    main: string,
    env: Record<string, string>,
    name = 'shop',
    timeoutMs = 60_000,
  ): Promise<ShopProcess> {
    const child = spawn(process.execPath, [main], {
      cwd: dirname(main),
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const shop = new ShopProcess(child, name);
    const exitedEarly = shop.exited.then(({ code, signal }) => {
      throw new Error(`${name} exited (${code ?? signal}) before listening:\n${shop.lines.slice(-30).join('\n')}`);
    });
    await Promise.race([shop.waitFor(/Shop listening on port (\d+)/, timeoutMs), exitedEarly]);
    exitedEarly.catch(() => undefined);
    return shop;
  }

  /** Resolves with the first line (already printed or to come) matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    for (const line of this.lines) {
      const match = pattern.exec(line);
      if (match) return Promise.resolve(match);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `${this.name}: no line matching ${pattern} within ${timeoutMs} ms:\n${this.lines.slice(-30).join('\n')}`,
          ),
        );
      }, timeoutMs);
      const waiter = {
        pattern,
        resolve: (match: RegExpExecArray) => {
          clearTimeout(timer);
          resolve(match);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Sends `signal` and waits for the process to end. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}
