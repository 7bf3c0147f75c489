// PaymentsSandbox.start({ stateFile }): a sandbox restarted on the same file knows the payments
// and bindings of the one before (another port too), and refuses a file it did not write.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PaymentsClient } from '../../lib/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';

describe('the sandbox state file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sandbox-state-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function withClient<T>(sandbox: PaymentsSandbox, run: (client: PaymentsClient) => Promise<T>): Promise<T> {
    const client = new PaymentsClient(sandbox.options({ reconciliation: { enabled: false }, maxRetries: 0 }));
    try {
      return await run(client);
    } finally {
      await client.close();
    }
  }

  it('a restarted sandbox refunds, captures and verifies the payments of the one before; links name its new URL', async () => {
    const stateFile = join(dir, 'nested', 'state.json');
    const first = await PaymentsSandbox.start({ stateFile });
    let paid: string;
    let held: string;
    let pending: string;
    try {
      [paid, held, pending] = await withClient(first, async (client) => [
        (await client.generatePayment({ amount: '1500', developerTrackingId: 'order-1' })).paymentId,
        (await client.generatePayment({ amount: '2500', preAuthorization: true })).paymentId,
        (await client.generatePayment({ amount: '3500' })).paymentId,
      ]);
      await first.completePayment(paid);
      await first.completePayment(held);
      first.addBinding({ clientId: 'customer-1', cardLastFour: '4242', cardBrand: 'VISA' });
    } finally {
      await first.close();
    }

    const second = await PaymentsSandbox.start({ stateFile });
    try {
      expect(second.url).not.toBe(first.url);
      expect(second.getPayment(paid)).toMatchObject({ state: 'paid', amount: '1500', developerTrackingId: 'order-1' });
      expect(second.getPayment(pending)?.link).toBe(`${second.url}/checkout/sandbox-merchant/${pending}`);
      await withClient(second, async (client) => {
        expect(await client.verifyPayment(paid)).toMatchObject({ status: 'SUCCESS', amount: '1500' });
        await expect(client.refundPayment(paid)).resolves.toMatchObject({ paymentId: paid, status: 'success' });
        await expect(client.capturePayment(held, { amount: '2000' })).resolves.toMatchObject({ paymentId: held });
        expect(await client.listBindings('customer-1')).toHaveLength(1);
      });
      // A pending one can still be paid, from the new checkout page.
      await expect(second.completePayment(pending, { requireDelivery: false })).resolves.toMatchObject({
        status: 'SUCCESS',
      });
    } finally {
      await second.close();
    }

    // Every change was written: a third start sees the refund and the capture.
    const third = await PaymentsSandbox.start({ stateFile });
    try {
      expect([third.getPayment(paid)?.state, third.getPayment(held)?.state, third.getPayment(pending)?.state]).toEqual([
        'refunded',
        'captured',
        'paid',
      ]);
    } finally {
      await third.close();
    }
    expect(JSON.parse(await readFile(stateFile, 'utf8'))).toMatchObject({ version: 1 });
  });

  it('a file that is not a state file stops the start, saying so', async () => {
    const stateFile = join(dir, 'not-state.json');
    await writeFile(stateFile, '{"hello":"world"}');
    await expect(PaymentsSandbox.start({ stateFile })).rejects.toThrow(
      `PaymentsSandbox: ${stateFile} is not a state file of this sandbox (version 1); move it away to start afresh`,
    );
  });
});
