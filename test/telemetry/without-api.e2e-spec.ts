/**
 * Without `@opentelemetry/api` (simulated: the module cannot be loaded), the plugin loads, works,
 * and records nothing: the lazy load fails once, quietly, and every hook runs the bare work.
 */
import { describe, expect, it, jest } from '@jest/globals';
import { outcomeHandlers } from '../support/outcome-handlers.js';

jest.unstable_mockModule('@opentelemetry/api', () => {
  throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
});

describe('telemetry without @opentelemetry/api installed', () => {
  it('finds no API, and the client and webhooks work untraced', async () => {
    const { loadTelemetryApi } = await import('../../lib/core/telemetry/telemetry.loader.js');
    const { PaymentsTelemetry } = await import('../../lib/core/telemetry/telemetry.otel.js');
    const { PaymentsClient } = await import('../../lib/core/client/payments.client.js');
    const { FakeService } = await import('../support/fake-service.js');
    const { verifyAnswer, verifyPath } = await import('../support/verify-answers.js');
    expect(await loadTelemetryApi()).toBe(false);
    const telemetry = new PaymentsTelemetry({ enabled: true, backlogIntervalMs: 1000 });
    expect(await telemetry.ready()).toBe(false);
    expect(telemetry.active).toBe(false);

    const fake = await FakeService.start();
    const client = new PaymentsClient({
      publicKey: 'pk_none',
      privateKey: 'sk_none_0123456789',
      baseUrl: fake.url,
      reconciliation: { enabled: false },
    });
    try {
      fake.reply(verifyPath('pay_n'), { status: 200, body: verifyAnswer({ status: 'SUCCESS' }) });
      await expect(client.verifyPayment('pay_n')).resolves.toMatchObject({ status: 'SUCCESS' });
      let handled = 0;
      client.setHandlers(
        outcomeHandlers(async () => {
          handled++;
        }),
      );
      fake.reply(verifyPath('pay_n'), { status: 200, body: verifyAnswer({ status: 'SUCCESS' }) });
      await expect(client.reconcilePayment('pay_n')).resolves.toMatchObject({ outcome: 'confirmed', handled: true });
      expect(handled).toBe(1);
    } finally {
      await client.close();
      await fake.close();
    }
  });
});
