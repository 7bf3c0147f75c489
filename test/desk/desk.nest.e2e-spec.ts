import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { PaymentsDeskModule } from '../../lib/desk/index.js';
import { deskChecks, type DeskHarness, type Seeded } from './desk-scenario.js';
import { HeaderGuard, startDesk, type RunningDesk } from './desk-hosts.js';

// The desk in a Nest app (Express and Fastify adapters), over loopback, against the sandbox: PaymentsModule's
// webhook route and handlers, and PaymentsDeskModule at /desk behind the host's guard.

jest.setTimeout(60_000);

for (const host of ['nest-express', 'nest-fastify'] as const) {
  describe(`the payments desk in a Nest app (${host.slice(5)} adapter)`, () => {
    let running: RunningDesk;
    let harness: DeskHarness;
    let seeded: Seeded;

    beforeAll(async () => {
      running = await startDesk(host, 'n');
      ({ harness, seeded } = running);
    });

    afterAll(async () => {
      await running?.close();
    });

    it('refuses to be built without a guard or a path, naming the fix', () => {
      const forRoot = PaymentsDeskModule.forRoot as (options: unknown) => unknown;
      expect(() => forRoot({ path: 'desk' })).toThrow(
        /options\.guard is required: .* Pass your authentication guard class/,
      );
      expect(() => forRoot({ guard: HeaderGuard })).toThrow(/options\.path is required/);
    });

    deskChecks(
      () => harness,
      () => seeded,
    );
  });
}
