// A round-robin balancer on loopback in front of two instances of an app, as a deployment without
// sticky sessions has one: the webhooks' public URL and the browser's address are its own. run.sh
// copies this file into each Nest app's src/ (test/compat/apps/nest11-desk uses it); the repo's
// desk tests (test/desk/desk-hosts.ts) import it from here.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the balancer passed on: to which instance (its index), and what that instance answered. */
export interface Passed {
  method: string;
  path: string;
  instance: number;
  status: number;
}

/** Options of {@link startBalancer}. */
export interface BalancerOptions {
  /**
   * Which requests come in pairs, as a double click's two posts of one form on a slow link: the
   * first is passed on at once, and its answer held until the second (same method and path) has
   * arrived, so that the browser still shows the form when it is clicked again, whatever the
   * machine's speed; the second goes to the next instance as soon as it arrives. Default: none.
   */
  pair?: (method: string, path: string) => boolean;
  /** How long, in ms, a first answer waits for its pair's request before it is let through. Default 10000. */
  holdMs?: number;
}

/** The balancer: its URL, what it passed on so far, and how to close it. */
export interface Balancer {
  url: string;
  passed: Passed[];
  /** Whether it holds the answer to a first request for `method` and `path`, waiting for its pair. */
  holding(method: string, path: string): boolean;
  close(): Promise<void>;
}

/** A request read whole. */
interface Request {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  body: Buffer;
}

/**
 * Starts a balancer on 127.0.0.1 (port 0) in front of `targets` (base URLs). Requests for one
 * method and path go to the targets in turn, so that two posts of one form reach two instances
 * whatever else the browser asks for in between. A request is read whole first, and passed on
 * whole even when its client has gone (a browser aborts the first post of a double click for the
 * second); see `options.pair`.
 */
export async function startBalancer(targets: readonly string[], options: BalancerOptions = {}): Promise<Balancer> {
  const turns = new Map<string, number>();
  /** Pairs by method and path: the first's answer waiting for the second request, or let through. */
  const pairs = new Map<string, { release: () => void; held: boolean }>();
  const passed: Passed[] = [];

  const forward = ({ req, res, body }: Request, key: string, answered: (deliver: () => void) => void) => {
    const instance = (turns.get(key) ?? 0) % targets.length;
    turns.set(key, instance + 1);
    const upstream = http.request(`${targets[instance]}${req.url}`, { method: req.method, headers: req.headers });
    upstream.on('response', (answer) => {
      passed.push({ method: req.method ?? '', path: req.url ?? '', instance, status: answer.statusCode ?? 0 });
      answer.pause();
      answered(() => {
        if (res.destroyed) {
          answer.resume();
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
    });
    upstream.on('error', () => {
      if (!res.headersSent && !res.destroyed) res.writeHead(502).end();
    });
    upstream.end(body);
  };

  const server = http.createServer((req, res) => {
    res.on('error', () => undefined);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined);
    req.on('end', () => {
      const key = `${req.method} ${req.url}`;
      const request = { req, res, body: Buffer.concat(chunks) };
      if (!options.pair?.(req.method ?? '', req.url ?? '')) return forward(request, key, (deliver) => deliver());
      const first = pairs.get(key);
      if (first !== undefined) {
        pairs.delete(key);
        forward(request, key, (deliver) => deliver());
        first.release();
        return;
      }
      let deliver: (() => void) | undefined;
      const entry = {
        held: false,
        release: () => {
          clearTimeout(timer);
          pairs.delete(key);
          entry.held = false;
          deliver?.();
          deliver = undefined;
        },
      };
      const timer = setTimeout(entry.release, options.holdMs ?? 10_000);
      pairs.set(key, entry);
      forward(request, key, (send) => {
        if (!pairs.has(key)) return send();
        deliver = send;
        entry.held = true;
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    passed,
    holding: (method, path) => pairs.get(`${method} ${path}`)?.held === true,
    close: () =>
      new Promise<void>((resolve) => {
        for (const entry of [...pairs.values()]) entry.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
