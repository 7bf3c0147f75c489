import net from 'node:net';
import { performance } from 'node:perf_hooks';

/** One request as the raw server parsed it off the socket. */
export interface RawRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  /** performance.now() when the whole request had arrived. */
  at: number;
  /** Sequence number of the TCP connection it came on (1-based). */
  connection: number;
}

/** What the server does with a request: write anything (or nothing) to the socket. */
export type RawBehaviour = (request: RawRequest, socket: net.Socket) => void;

const REASONS: Record<number, string> = {
  200: 'OK',
  301: 'Moved Permanently',
  400: 'Bad Request',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

function head(status: number, headers: Record<string, string | number>): string {
  const lines = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Status'}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function asText(body: unknown): { text: string; type: string } {
  if (typeof body === 'string')
    return { text: body, type: body.trimStart().startsWith('<') ? 'text/html; charset=utf-8' : 'application/json' };
  return { text: JSON.stringify(body), type: 'application/json' };
}

/** Behaviours a misbehaving service (or a proxy in front of it) shows. */
export const behave = {
  /** A complete answer on a kept-alive connection. */
  reply(status: number, body: unknown, headers: Record<string, string> = {}): RawBehaviour {
    return (_req, socket) => {
      const { text, type } = asText(body);
      socket.write(
        head(status, {
          'content-type': type,
          'content-length': Buffer.byteLength(text),
          connection: 'keep-alive',
          ...headers,
        }) + text,
      );
    };
  },
  /** Reads the request and never answers. */
  hang(): RawBehaviour {
    return () => undefined;
  },
  /** Sends the status line and headers, then nothing more. */
  headersThenHang(): RawBehaviour {
    return (_req, socket) =>
      void socket.write(head(200, { 'content-type': 'application/json', 'content-length': 500 }));
  },
  /** Sends the body one byte at a time, `intervalMs` apart: every byte is quick, the whole is slow. */
  drip(body: string, intervalMs: number): RawBehaviour {
    return (_req, socket) => {
      socket.write(head(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }));
      let i = 0;
      const timer = setInterval(() => {
        if (socket.destroyed || i >= body.length) return clearInterval(timer);
        socket.write(body[i++]);
      }, intervalMs);
      socket.once('close', () => clearInterval(timer));
    };
  },
  /** Closes the connection (FIN) without answering. */
  destroy(): RawBehaviour {
    return (_req, socket) => void socket.destroy();
  },
  /** Resets the connection (TCP RST) without answering. */
  reset(): RawBehaviour {
    return (_req, socket) => void socket.resetAndDestroy();
  },
  /** Headers announcing the whole body, half of it, then the connection dies. */
  halfThenDestroy(body: string, chunked = false): RawBehaviour {
    return (_req, socket) => {
      const half = body.slice(0, Math.floor(body.length / 2));
      if (chunked) {
        socket.write(
          head(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }) +
            `${Buffer.byteLength(half).toString(16)}\r\n${half}\r\n`,
        );
      } else {
        socket.write(
          head(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }) + half,
        );
      }
      setTimeout(() => socket.destroy(), 20);
    };
  },
  /** A complete answer of `bytes` bytes (a JSON string, so it is even valid JSON). */
  huge(status: number, bytes: number, chunked = false): RawBehaviour {
    return (_req, socket) => {
      const text = `"${'x'.repeat(bytes - 2)}"`;
      socket.on('error', () => undefined); // the client hangs up half-way: EPIPE / ECONNRESET here are expected
      if (chunked) {
        socket.write(head(status, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
        for (let i = 0; i < text.length; i += 64 * 1024) {
          const part = text.slice(i, i + 64 * 1024);
          if (!socket.writable) return;
          socket.write(`${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`);
        }
        if (socket.writable) socket.write('0\r\n\r\n');
      } else {
        socket.write(
          head(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }) + text,
        );
      }
    };
  },
  /** Uses each behaviour in turn for successive requests, then the last one for every later request. */
  sequence(...steps: RawBehaviour[]): RawBehaviour {
    let i = 0;
    return (req, socket) => steps[Math.min(i++, steps.length - 1)](req, socket);
  },
};

/**
 * An HTTP/1.1 server written on `node:net`, so that it can misbehave in ways `node:http` will not:
 * half bodies, resets, drips, lies about lengths. Listens on 127.0.0.1:0 only, records every
 * request with its arrival time, and counts connections.
 */
export class RawHttpServer {
  readonly requests: RawRequest[] = [];
  connectionsOpened = 0;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly behaviours = new Map<string, RawBehaviour>();

  private constructor() {
    this.server = net.createServer((socket) => this.accept(socket));
  }

  /** Starts a server on a free loopback port. */
  static async start(): Promise<RawHttpServer> {
    const server = new RawHttpServer();
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve));
    return server;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Sets what the server does for requests to `path` (default: 404 with a JSON body). */
  on(path: string, behaviour: RawBehaviour): this {
    this.behaviours.set(path, behaviour);
    return this;
  }

  /** Requests received for one path. */
  to(path: string): RawRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Open connections, as the server counts them. */
  connections(): Promise<number> {
    return new Promise((resolve, reject) =>
      this.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
  }

  /** Resolves with the open connection count once it is 0, or after `timeoutMs` with what is left. */
  async settledConnections(timeoutMs = 2000): Promise<number> {
    const end = performance.now() + timeoutMs;
    let count = await this.connections();
    while (count > 0 && performance.now() < end) {
      await new Promise((r) => setTimeout(r, 10));
      count = await this.connections();
    }
    return count;
  }

  /** Forgets behaviours and recorded requests. */
  reset(): void {
    this.behaviours.clear();
    this.requests.length = 0;
    this.connectionsOpened = 0;
  }

  /** Destroys every connection and stops listening. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: net.Socket): void {
    const connection = ++this.connectionsOpened;
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [requestLine, ...headerLines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of headerLines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8');
        buffer = buffer.subarray(end + 4 + length);
        const [method, target] = requestLine.split(' ');
        const url = new URL(target, 'http://raw.invalid');
        const request: RawRequest = {
          method,
          path: url.pathname,
          query: url.searchParams,
          headers,
          body,
          at: performance.now(),
          connection,
        };
        this.requests.push(request);
        const behaviour =
          this.behaviours.get(url.pathname) ?? behave.reply(404, { result: { status: 404, message: 'Not Found' } });
        behaviour(request, socket);
      }
    });
  }
}
