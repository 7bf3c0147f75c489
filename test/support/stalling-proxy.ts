import net, { type Server, type Socket } from 'node:net';

// A TCP proxy of a test's own between a Redis replica and its master: a replication link that the
// test can stall (what the master sends is held back, so the replica neither has it nor
// acknowledges it) and cut (what was held back is dropped, as when the master dies with the data
// still in flight: stopping the replica process would not do, its kernel keeps the bytes).

/** A proxy from `127.0.0.1:port` to `127.0.0.1:target`. */
export class StallingProxy {
  readonly #server: Server;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket; held: Buffer[]; replication: boolean }>();
  readonly #onlyReplication: boolean;
  #stalled = false;

  private constructor(server: Server, onlyReplication: boolean) {
    this.#server = server;
    this.#onlyReplication = onlyReplication;
  }

  /**
   * Listens on `port`, forwarding every connection to `target`. `onlyReplication`: a stall holds
   * back only what the master sends on replication links (connections whose client asked for
   * `PSYNC`), for a master whose clients come through the proxy too (a cluster node announcing it).
   */
  static async start(port: number, target: number, onlyReplication = false): Promise<StallingProxy> {
    const server = net.createServer();
    const proxy = new StallingProxy(server, onlyReplication);
    server.on('connection', (client) => proxy.#pipe(client, target));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  #pipe(client: Socket, target: number): void {
    const upstream = net.connect(target, '127.0.0.1');
    const pair = { client, upstream, held: [] as Buffer[], replication: false };
    this.#pairs.add(pair);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#pairs.delete(pair);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes('PSYNC')) pair.replication = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.#stalled && (pair.replication || !this.#onlyReplication)) pair.held.push(chunk);
      else client.write(chunk);
    });
  }

  /** From now on, what the master sends is held back. */
  stall(): void {
    this.#stalled = true;
  }

  /** Sends what was held back, and forwards again. */
  flow(): void {
    this.#stalled = false;
    for (const pair of this.#pairs) for (const chunk of pair.held.splice(0)) pair.client.write(chunk);
  }

  /** Drops what was held back and closes every connection. */
  cut(): void {
    for (const pair of [...this.#pairs]) {
      pair.held.length = 0;
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.#pairs.clear();
  }

  /** Cuts every connection and stops listening. */
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
