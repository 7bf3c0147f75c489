import http from 'node:http';
import { inspect } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { PaymentsSandbox, SANDBOX_PRIVATE_KEY, SANDBOX_PUBLIC_KEY } from '../../lib/testing/index.js';
import { getApi, rawRequest } from './sandbox.helpers.js';

describe('PaymentsSandbox lifecycle', () => {
  it('starts on a random loopback port with the default keys', async () => {
    const sandbox = await PaymentsSandbox.start();
    try {
      expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
      expect(sandbox.publicKey).toBe('sandbox_public_key');
      expect(sandbox.privateKey).toBe('sandbox_private_key');
      expect([SANDBOX_PUBLIC_KEY, SANDBOX_PRIVATE_KEY]).toEqual(['sandbox_public_key', 'sandbox_private_key']);
      expect((await getApi(sandbox, '/api/v2/bindings/list?client_id=a')).status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('options() points the plugin at the sandbox, extended or overridden by extra', async () => {
    const sandbox = await PaymentsSandbox.start({ publicKey: 'pk', privateKey: 'sk' });
    try {
      expect(sandbox.options()).toEqual({
        publicKey: 'pk',
        privateKey: 'sk',
        baseUrl: sandbox.url,
        successLink: `${sandbox.url}/sandbox/success`,
        failLink: `${sandbox.url}/sandbox/fail`,
      });
      const extended = sandbox.options({
        successLink: 'https://shop.example/ok',
        timeoutMs: 500,
        webhook: { publicUrl: 'http://x/wh', secret: 's'.repeat(32) },
      });
      expect(extended).toEqual({
        publicKey: 'pk',
        privateKey: 'sk',
        baseUrl: sandbox.url,
        successLink: 'https://shop.example/ok',
        failLink: `${sandbox.url}/sandbox/fail`,
        timeoutMs: 500,
        webhook: { publicUrl: 'http://x/wh', secret: 's'.repeat(32) },
      });
      const typed: number = extended.timeoutMs;
      expect(typed).toBe(500);
    } finally {
      await sandbox.close();
    }
  });

  it('keeps the private key out of JSON.stringify and util.inspect', async () => {
    const sandbox = await PaymentsSandbox.start({ privateKey: 'very-private-value' });
    try {
      expect(JSON.stringify(sandbox)).toBe(JSON.stringify({ url: sandbox.url, publicKey: 'sandbox_public_key' }));
      expect(inspect(sandbox, { showHidden: false, depth: 5 })).not.toContain('very-private-value');
      expect(Object.keys(sandbox)).not.toContain('privateKey');
      expect(Object.keys(sandbox)).not.toContain('authorization');
    } finally {
      await sandbox.close();
    }
  });

  it('close() is idempotent, refuses new connections and drops keep-alive sockets', async () => {
    const sandbox = await PaymentsSandbox.start();
    const agent = new http.Agent({ keepAlive: true });
    try {
      await new Promise<void>((resolve, reject) => {
        http
          .get(`${sandbox.url}/sandbox/success`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve());
          })
          .on('error', reject);
      });
      const started = Date.now();
      const first = sandbox.close();
      expect(sandbox.close()).toBe(first);
      await first;
      await sandbox.close();
      expect(Date.now() - started).toBeLessThan(1000);
      await expect(rawRequest(`${sandbox.url}/sandbox/success`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      agent.destroy();
    }
  });

  it('rejects a taken port with the listen error', async () => {
    const sandbox = await PaymentsSandbox.start();
    try {
      const port = Number(new URL(sandbox.url).port);
      await expect(PaymentsSandbox.start({ port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await sandbox.close();
    }
  });

  it('names loopback in url when listening on a wildcard address', async () => {
    // Beyond loopback only with a key of its own (the default one is refused), and with a warning.
    const sandbox = await PaymentsSandbox.start({
      host: '0.0.0.0',
      privateKey: 'sk_lifecycle_own',
      onWarning: () => undefined,
    });
    try {
      expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await rawRequest(`${sandbox.url}/`)).status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('refuses an invalid port', async () => {
    await expect(PaymentsSandbox.start({ port: 70000 })).rejects.toThrow(TypeError);
    await expect(PaymentsSandbox.start({ port: 1.5 })).rejects.toThrow('port must be an integer from 0 to 65535');
  });

  it('keeps separate state per sandbox', async () => {
    const [a, b] = await Promise.all([PaymentsSandbox.start(), PaymentsSandbox.start()]);
    try {
      a.addBinding({ clientId: 'c', cardLastFour: '4242', cardBrand: 'VISA' });
      expect(JSON.parse((await getApi(b, '/api/v2/bindings/list?client_id=c')).text).result.bindings).toEqual([]);
      expect(JSON.parse((await getApi(a, '/api/v2/bindings/list?client_id=c')).text).result.bindings).toHaveLength(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
