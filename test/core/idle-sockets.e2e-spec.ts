import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsClient } from '../../lib/core/client/index.js';
import { PATHS } from '../support/fake-service.js';
import { quietLogger } from '../support/outcome-kit.js';
import { behave, RawHttpServer } from '../faults/support/raw-server.js';

// A kept-alive connection the service is about to close is not used again. A server closes an
// idle connection after the timeout it announces (`Keep-Alive: timeout=5`, Node's default); when
// its FIN waits behind a busy event loop, the next call is written to the dead socket and fails
// with ECONNRESET (a POST is never sent again: a desk's refund failed so in CI). The client drops an
// idle connection a second before the announced timeout and opens a fresh one.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('idle kept-alive connections', () => {
  let server: RawHttpServer;
  let client: PaymentsClient;

  beforeAll(async () => {
    server = await RawHttpServer.start();
    client = new PaymentsClient({
      publicKey: 'pk_idle',
      privateKey: 'sk_idle_0123456789abcdef',
      baseUrl: server.url,
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
      maxRetries: 0,
      logger: quietLogger(),
    });
    server.on(
      PATHS.generate,
      behave.reply(
        200,
        { result: { success: true, payment_id: 'pay_ok', link: 'https://checkout.example/m/pay_ok' }, code: 0 },
        { 'keep-alive': 'timeout=2' },
      ),
    );
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
  });

  it('are reused within the announced timeout less a second, and replaced after it', async () => {
    await client.generatePayment({ amount: '1000' });
    await client.generatePayment({ amount: '1000' });
    expect(server.connectionsOpened).toBe(1);
    // Past timeout=2 less a second, before the server's own close.
    await sleep(1_500);
    await client.generatePayment({ amount: '1000' });
    expect(server.connectionsOpened).toBe(2);
  });
});
