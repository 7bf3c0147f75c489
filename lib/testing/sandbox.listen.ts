/**
 * The sandbox's HTTP server and where it listens: the port and host checked (and the address
 * refused or warned about) before anything is built, then the listen itself.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenDecision, type ListenDecision } from './sandbox.exposure.js';
import { sendJson } from './sandbox.http.js';
import { SANDBOX_PRIVATE_KEY } from './sandbox.options.js';
import { urlHost } from './sandbox.request.js';
import type { PaymentsSandboxOptions } from './sandbox.types.js';

/** Where a sandbox listens, once checked. */
export interface ListenPlan {
  /** The port (0: a random free one). */
  readonly port: number;
  /** The listen address. */
  readonly host: string;
  /** Loopback, or beyond it with a warning to give. */
  readonly exposure: Exclude<ListenDecision, { kind: 'refused' }>;
}

/**
 * Checks where the options ask the sandbox to listen (default `127.0.0.1`, a random free port).
 * @throws TypeError for a bad port, or a `host` beyond loopback with the default private key
 */
export function listenPlan(options: PaymentsSandboxOptions): ListenPlan {
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new TypeError('PaymentsSandbox: port must be an integer from 0 to 65535');
  const host = options.host ?? '127.0.0.1';
  const exposure = listenDecision(host, (options.privateKey ?? SANDBOX_PRIVATE_KEY) === SANDBOX_PRIVATE_KEY);
  if (exposure.kind === 'refused') throw new TypeError(exposure.error);
  return { port, host, exposure };
}

/** The sandbox's HTTP server, each request answered by `handle`. */
export function sandboxServer(handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): http.Server {
  return http.createServer((req, res) => {
    handle(req, res).catch(() => {
      // A bug in a handler must not take the test process down; answer 500 and go on.
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, { result: { status: 500, message: 'Internal Server Error' } });
    });
  });
}

/**
 * Listens as planned, and gives the warning of an address beyond loopback.
 * @returns the base URL, e.g. `http://127.0.0.1:43211`
 * @throws the listen error (e.g. `EADDRINUSE`) when the port is taken
 */
export async function listenAsPlanned(
  server: http.Server,
  plan: ListenPlan,
  onWarning?: (message: string) => void,
): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(plan.port, plan.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const baseUrl = `http://${urlHost(plan.host)}:${address.port}`;
  if (plan.exposure.kind === 'exposed')
    (onWarning ?? ((m: string) => process.stderr.write(`${m}\n`)))(plan.exposure.warning);
  return baseUrl;
}
