import { Inject, Injectable, Logger, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { SHOP_SETTINGS, type ShopSettings } from './shop.settings.js';

/** Injection token of the embedded sandbox: a `PaymentsSandbox`, or `null` with real keys. */
export const SHOP_SANDBOX = Symbol('SHOP_SANDBOX');

/** The customer whose card binding is seeded into the sandbox, for the admin's bindings lookup. */
export const DEMO_CUSTOMER_ID = 'demo-customer';

/**
 * Starts the sandbox when no `PAYMENTS_PUBLIC_KEY` is set, so `npm start` gives a working shop
 * with nothing else installed. With real keys it provides `null` and nothing is started.
 */
export const sandboxProvider: Provider = {
  provide: SHOP_SANDBOX,
  inject: [SHOP_SETTINGS],
  useFactory: async (settings: ShopSettings): Promise<PaymentsSandbox | null> => {
    if (!settings.sandboxMode) return null;
    // With a state file, the sandbox still knows after a restart the payments taken before it.
    const { sandboxStateFile: stateFile } = settings;
    const fresh = stateFile === undefined || !existsSync(stateFile);
    const sandbox = await PaymentsSandbox.start({ port: settings.sandboxPort, ...(stateFile && { stateFile }) });
    // Bindings come from paying with "Save my card" ticked; one is seeded (once) so the admin's
    // lookup has something to show before the first purchase.
    if (fresh) sandbox.addBinding({ clientId: DEMO_CUSTOMER_ID, cardLastFour: '4242', cardBrand: 'VISA' });
    new Logger('Shop').log(
      `No PAYMENTS_* keys set: using the built-in sandbox at ${sandbox.url} (no real money moves)`,
    );
    return sandbox;
  },
};

/** Closes the embedded sandbox when the app shuts down, so no socket outlives the app. */
@Injectable()
export class SandboxLifecycle implements OnApplicationShutdown {
  constructor(@Inject(SHOP_SANDBOX) private readonly sandbox: PaymentsSandbox | null) {}

  /** Stops the sandbox (after the webhooks in flight have been drained by the plugin). */
  async onApplicationShutdown(): Promise<void> {
    await this.sandbox?.close();
  }
}
