import http from 'node:http';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runCli } from '../../lib/cli/cli.commands.js';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { PaymentsError } from '../../lib/core/api/payments.errors.js';

// A service (or a proxy) that echoes secrets in part, as measured: the Authorization header cut
// short (25 of the key's 29 characters), hex-encoded, spaced out, and a 30-character prefix of the
// webhook secret. None of it reaches an error's message, serviceMessage, excerpt or JSON, a verify
// answer's details, or the CLI's `verify` output.

const PUBLIC_KEY = 'pk_live_partial';
const PRIVATE_KEY = 'sk_live_9fQ2xLp7ZrT4mW8vNc3Hb'; // 29 characters
const WEBHOOK_SECRET = 'whsec_Xy7Pq2Lm9Rt4Vb8Nc3Hd6Kf1Jg5Ws0Za';
const hex = (s: string) => Buffer.from(s).toString('hex');

/** The echoes the service puts into its answers. */
function echoesOf(authorization: string): Record<string, string> {
  const key = authorization.slice(authorization.indexOf(':') + 1);
  return {
    cut: `Bearer ${PUBLIC_KEY}:${key.slice(0, 25)}`,
    hex: hex(authorization),
    spaced: [...key.slice(3, 20)].join(' '),
    secretPrefix: WEBHOOK_SECRET.slice(0, 30),
    middle: key.slice(10, 18).toUpperCase(),
  };
}

/** Whether a text still holds 8 consecutive characters of a secret, as is (any case), in hex or spaced. */
function leaks(text: string): string | undefined {
  const lower = text.toLowerCase();
  for (const secret of [PRIVATE_KEY, WEBHOOK_SECRET]) {
    for (let i = 0; i + 8 <= secret.length; i++) {
      const w = secret.slice(i, i + 8);
      for (const form of [w, hex(w), [...w].join(' ')]) if (lower.includes(form.toLowerCase())) return form;
    }
  }
  return undefined;
}

let echo: http.Server;
let baseUrl: string;

beforeAll(async () => {
  echo = http.createServer((req, res) => {
    const e = echoesOf(req.headers.authorization ?? '');
    const path = new URL(req.url ?? '/', 'http://echo').pathname;
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path.startsWith('/api/v2/verify_payment/pay_ok')) {
      return json(200, {
        success: true,
        result: { type: 'card', amount: 900, status: 'SUCCESS', details: { echoed: e } },
      });
    }
    if (path.startsWith('/api/v2/verify_payment/'))
      return json(401, { status: 'error', message: `bad credentials ${e.cut} (${e.hex})`, code: 'AUTH' });
    if (path === '/api/v2/generate_payment')
      return json(500, { result: { status: 500, message: `rejected ${e.spaced} ${e.secretPrefix} ${e.middle}` } });
    if (path === '/api/v2/refund_payment') {
      res.writeHead(502, { 'content-type': 'text/html' });
      return res.end(`<html>proxy error for ${e.cut} / ${e.hex} / ${e.secretPrefix}</html>`);
    }
    return json(404, { result: { status: 404, message: `no ${path} for ${e.cut}` } });
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
});

afterAll(async () => {
  echo.closeAllConnections();
  await new Promise((r) => echo.close(r));
});

describe('secrets echoed in part are cut out', () => {
  it('of errors (message, serviceMessage, excerpt, JSON) and of a verify answer', async () => {
    const client = new PaymentsClient({
      publicKey: PUBLIC_KEY,
      privateKey: PRIVATE_KEY,
      baseUrl,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      webhook: { publicUrl: 'https://shop.example/hook', secret: WEBHOOK_SECRET },
      maxRetries: 0,
      reconciliation: { enabled: false },
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    try {
      const errors: PaymentsError[] = [];
      for (const call of [
        () => client.generatePayment({ amount: '900' }),
        () => client.verifyPayment('pay_denied'),
        () => client.refundPayment('pay_1'),
      ]) {
        errors.push(
          await call().then(
            () => {
              throw new Error('expected a failure');
            },
            (e: unknown) => e as PaymentsError,
          ),
        );
      }
      for (const error of errors) {
        expect(error).toBeInstanceOf(PaymentsError);
        const seen = [
          error.message,
          JSON.stringify(error),
          String((error as { serviceMessage?: string }).serviceMessage),
          String((error as { bodyExcerpt?: string }).bodyExcerpt),
        ].join('\n');
        expect(leaks(seen)).toBeUndefined();
        // The echo happened, and was cut.
        expect(seen).toContain('[redacted]');
      }
      const verified = await client.verifyPayment('pay_ok');
      expect(leaks(JSON.stringify(verified))).toBeUndefined();
      expect(JSON.stringify(verified.details)).toContain('[redacted]');
    } finally {
      await client.close();
    }
  });

  it("of the CLI's verify output", async () => {
    for (const id of ['pay_ok', 'pay_denied']) {
      const io = {
        out: '',
        err: '',
        env: {
          PAYMENTS_BASE_URL: baseUrl,
          PAYMENTS_PUBLIC_KEY: PUBLIC_KEY,
          PAYMENTS_PRIVATE_KEY: PRIVATE_KEY,
          PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET,
        },
        signals: new EventEmitter(),
        clock: { now: () => Date.now() },
        stdout: { write: (t: string) => (io.out += t) },
        stderr: { write: (t: string) => (io.err += t) },
      };
      const code = await runCli(['verify', id], io);
      expect(code).toBe(id === 'pay_ok' ? 0 : 1);
      expect(leaks(io.out + io.err)).toBeUndefined();
      expect(io.out + io.err).toContain('[redacted]');
    }
  });
});
