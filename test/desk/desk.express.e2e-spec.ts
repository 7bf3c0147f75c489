import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { createPaymentsDesk } from '../../lib/desk/index.js';
import { deskChecks, type DeskHarness, type Seeded } from './desk-scenario.js';
import { startDesk, type RunningDesk } from './desk-hosts.js';

// The desk on Express, over loopback, against the sandbox: the app's webhook route, its desk at
// /desk behind an `authorize` reading a header (as a session would be read).

jest.setTimeout(60_000);

describe('the payments desk on Express', () => {
  let running: RunningDesk;
  let harness: DeskHarness;
  let seeded: Seeded;

  beforeAll(async () => {
    running = await startDesk('express', 'x');
    ({ harness, seeded } = running);
  });

  afterAll(async () => {
    await running?.close();
  });

  it('refuses to be built without authorize, naming the fix', () => {
    expect(() =>
      createPaymentsDesk({ client: harness.client } as unknown as Parameters<typeof createPaymentsDesk>[0]),
    ).toThrow(/options\.authorize is required: .* Pass \(req\) => the signed-in person's id/);
    expect(() =>
      createPaymentsDesk({ authorize: () => 'a' } as unknown as Parameters<typeof createPaymentsDesk>[0]),
    ).toThrow(/options\.client must be the PaymentsClient/);
  });

  deskChecks(
    () => harness,
    () => seeded,
  );
});
