import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { verifyAnswer } from '../support/verify-answers.js';

// The transport reads the proxy variables once, when the client is built (http.transport.ts):
// a proxy configured at start-up carries every request, one set later takes a restart.
const PROXY_VARIABLES = [
  'http_proxy',
  'HTTP_PROXY',
  'https_proxy',
  'HTTPS_PROXY',
  'all_proxy',
  'ALL_PROXY',
  'no_proxy',
  'NO_PROXY',
];

/** A loopback server that answers every request itself and records its request line. */
async function listen(name: string): Promise<{ url: string; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify(verifyAnswer({ status: 'SUCCESS', trackingId: name }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe('proxy variables (axios honours http_proxy and friends; the transport reads them at start-up)', () => {
  const saved = new Map(PROXY_VARIABLES.map((name) => [name, process.env[name]]));
  let service: Awaited<ReturnType<typeof listen>>;
  let proxy: Awaited<ReturnType<typeof listen>>;
  const clients: PaymentsClient[] = [];
  const clientFor = (baseUrl: string): PaymentsClient => {
    const client = new PaymentsClient({
      publicKey: 'pk_proxy',
      privateKey: 'sk_proxy_0123456789_secret',
      baseUrl,
      maxRetries: 0,
      reconciliation: { enabled: false },
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
    });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    service = await listen('service');
    proxy = await listen('proxy');
  });
  afterEach(async () => {
    for (const name of PROXY_VARIABLES) {
      if (saved.get(name) === undefined) delete process.env[name];
      else process.env[name] = saved.get(name);
    }
    await Promise.all(clients.splice(0).map((client) => client.close()));
    service.seen.length = 0;
    proxy.seen.length = 0;
  });
  afterAll(async () => {
    await service.close();
    await proxy.close();
  });

  it('sends every request through the proxy set when the client was built', async () => {
    for (const name of PROXY_VARIABLES) delete process.env[name];
    process.env.http_proxy = proxy.url;
    const client = clientFor('http://service.invalid');
    const verified = await client.verifyPayment('pay_1');
    expect(verified.developerTrackingId).toBe('proxy');
    expect(proxy.seen).toEqual(['GET http://service.invalid/api/v2/verify_payment/pay_1']);
  });

  it('goes straight to the service when no proxy was set at start-up, even if one is set later', async () => {
    for (const name of PROXY_VARIABLES) delete process.env[name];
    const client = clientFor(service.url);
    process.env.http_proxy = proxy.url;
    const verified = await client.verifyPayment('pay_2');
    expect(verified.developerTrackingId).toBe('service');
    expect(service.seen).toEqual(['GET /api/v2/verify_payment/pay_2']);
    expect(proxy.seen).toEqual([]);
  });
});
