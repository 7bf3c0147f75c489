import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canConnect } from './services.js';

// Redis servers of a test's own, on ports of its own, in a temp dir: a Redis Cluster (masters and
// replicas) or a master, a replica and a Sentinel. Started and stopped by the test, by their
// process handles, so that killing a master never touches the machine's Redis.

/** Whether `redis-server` and `redis-cli` are installed (Debian's redis-server and redis-tools). */
export function redisServerInstalled(): boolean {
  return ['redis-server', 'redis-cli'].every((bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0);
}

/** Resolves once `probe` is true, checking every 100 ms; rejects after `timeoutMs`. */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function cli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}

/**
 * A set of redis-server processes started by a test. The tests' fixed ports are below 32768, out
 * of Linux's range for the local ports of outgoing connections (32768-60999): a port in that range
 * can be held by any connection of the moment, and the server's bind then fails.
 */
export class RedisServers {
  private readonly processes = new Map<number, ChildProcess>();
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'nestjs-payments-redis-'));

  /** Starts `redis-server` on 127.0.0.1:port with extra arguments; resolves once it accepts connections. */
  async start(port: number, ...args: string[]): Promise<void> {
    const dir = path.join(this.dir, String(port));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    await this.#spawn(port, [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      ...args,
    ]);
  }

  async #spawn(port: number, args: string[]): Promise<void> {
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    this.processes.set(port, child);
    await waitFor(`redis-server on ${port}`, () => {
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited: ${output}`);
      return canConnect('127.0.0.1', port, 200);
    });
  }

  /** Starts a Sentinel on `port` watching the master `name` at `masterPort` (quorum 1, quick failover). */
  async startSentinel(port: number, name: string, masterPort: number): Promise<void> {
    const conf = path.join(this.dir, `sentinel-${port}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${this.dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${masterPort} 1`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    await this.#spawn(port, [conf, '--sentinel']);
  }

  /**
   * Makes a cluster of `masters` masters and the rest of `ports` as their replicas. Each node's
   * cluster bus listens on its port + `busOffset` (Redis's default, + 10000, would leave the range).
   */
  async startCluster(ports: number[], masters: number, busOffset = 100): Promise<void> {
    for (const port of ports) {
      await this.start(
        port,
        ...[
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(port + busOffset),
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '1500',
        ],
      );
    }
    const replicas = ports.length / masters - 1;
    const out = cli(
      ports[0],
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    );
    if (!out.includes('[OK] All 16384 slots covered')) throw new Error(`redis-cli --cluster create failed: ${out}`);
    await waitFor('the cluster to be ok', () =>
      ports.every((p) => cli(p, 'cluster', 'info').includes('cluster_state:ok')),
    );
    // Every replica attached to its master, so a failover has someone to promote.
    await waitFor('the replicas to sync', () =>
      ports.every((p) => {
        const info = cli(p, 'info', 'replication');
        return info.includes('role:master') ? true : info.includes('master_link_status:up');
      }),
    );
  }

  /** The ports of the cluster's masters, as node `port` sees it. */
  clusterMasters(port: number): number[] {
    return cli(port, 'cluster', 'nodes')
      .split('\n')
      .filter((line) => / master /.test(` ${line.split(' ')[2]?.replace(/,/g, ' ')} `) && !line.includes('fail'))
      .map((line) => Number(/:(\d+)@/.exec(line)?.[1]))
      .filter((p) => p > 0);
  }

  /** The port of the master serving the slot of `key`, as node `port` sees it. */
  masterOf(port: number, key: string): number {
    const slot = Number(cli(port, 'cluster', 'keyslot', key).trim());
    for (const line of cli(port, 'cluster', 'nodes').split('\n')) {
      const fields = line.split(' ');
      if (!fields[2]?.includes('master') || fields[2].includes('fail')) continue;
      for (const range of fields.slice(8)) {
        const [from, to = from] = range.split('-').map(Number);
        if (slot >= from && slot <= to) return Number(/:(\d+)@/.exec(line)?.[1]);
      }
    }
    throw new Error(`no master serves the slot of ${key}`);
  }

  /** `redis-cli -p port ...args`, output as text. */
  cli(port: number, ...args: string[]): string {
    return cli(port, ...args);
  }

  /** SIGKILLs the server on `port` (a crash: no shutdown, no save). */
  kill(port: number): void {
    this.processes.get(port)?.kill('SIGKILL');
  }

  /** Stops every server this object started (SIGKILL: they hold nothing worth keeping) and removes the temp dir. */
  async stop(): Promise<void> {
    const exits = [...this.processes.values()].map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve())),
    );
    for (const child of this.processes.values()) child.kill('SIGKILL');
    await Promise.all(exits);
    this.processes.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
