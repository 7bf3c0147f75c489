/**
 * The sample shop on its embedded sandbox (no PAYMENTS_* keys), killed with SIGKILL and started
 * again on the same DATA_DIR: its sandbox keeps its payments in DATA_DIR/sandbox-state.json, so
 * the admin refunds and captures orders paid before the crash. Real processes (support/shop-process.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShopClient } from './shop.helpers.js';
import { buildShop, ShopProcess } from './support/shop-process.js';
import { freePort } from '../support/ports.js';

const ADMIN_PASSWORD = 'restart-test-admin-0123';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Buys a product and pays on the embedded sandbox's checkout page (its Pay button, as a browser posts it). */
async function buyAndPay(client: ShopClient, productId: string, state: 'paid' | 'authorized'): Promise<string> {
  const res = await client.buy(productId);
  expect(res.status).toBe(303);
  const link = res.location!;
  const paid = await fetch(`${link}/pay`, { method: 'POST', redirect: 'manual' });
  expect(paid.status).toBe(303);
  const back = paid.headers.get('location')!;
  const orderId = /\/orders\/(ord_[0-9a-f]+)\//.exec(back)![1];
  const end = Date.now() + 20_000;
  while (!(await client.get(back)).text.includes(`data-state="${state}"`)) {
    if (Date.now() > end) throw new Error(`order ${orderId} not ${state} in time`);
    await sleep(300);
  }
  return orderId;
}

describe('the sample shop on its embedded sandbox, killed and restarted', () => {
  let main: string;
  let dataDir: string;

  beforeAll(async () => {
    main = await buildShop();
    dataDir = await mkdtemp(join(tmpdir(), 'shop-sandbox-restart-'));
  }, 180_000);

  afterAll(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('refunds and captures, after SIGKILL and a restart, orders paid before it', async () => {
    const port = await freePort();
    const env = { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: join(dataDir, 'pgdata'), ADMIN_PASSWORD };
    const first = await ShopProcess.start(main, env, 'shop-before-crash');
    let paidOrder: string;
    let heldOrder: string;
    try {
      const customer = new ShopClient(`http://localhost:${port}`);
      paidOrder = await buyAndPay(customer, 'moka-pot', 'paid');
      heldOrder = await buyAndPay(customer, 'espresso-machine', 'authorized');
    } finally {
      expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    }

    // Another sandbox port after the restart (SANDBOX_PORT 0): the payments are known all the same.
    const second = await ShopProcess.start(main, env, 'shop-after-crash');
    try {
      const admin = new ShopClient(`http://localhost:${port}`);
      await admin.signIn(ADMIN_PASSWORD);
      await admin.get(`/admin/orders/${paidOrder}/refund`);
      const refunded = await admin.postAndFollow(`/admin/orders/${paidOrder}/refund`, { confirm: 'yes' });
      expect(refunded.text).toMatch(new RegExp(`Refund of order ${paidOrder} succeeded \\(refund ref_[0-9a-f]+\\)\\.`));
      await admin.get('/admin');
      const captured = await admin.postAndFollow(`/admin/orders/${heldOrder}/capture`, { amount: '' });
      expect(captured.text).toContain(`Captured 649.000 TND of order ${heldOrder}`);
    } finally {
      expect((await second.stop('SIGTERM')).code).toBe(0);
    }
    expect(existsSync(join(dataDir, 'pgdata', 'sandbox-state.json'))).toBe(true);
  }, 180_000);
});
