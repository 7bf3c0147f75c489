// paymentsOptionsFromConfig for a second account: its own variables under a prefix, none read
// from the default account's (its public URL above all), and the previous secrets as a list.
import { describe, expect, it } from '@jest/globals';
import { PAYMENTS_ENV, paymentsOptionsFromConfig } from '../../lib/index.js';

const SECRET = 'whsec_config_prefix_tests_0123456789abcd';
const OLD = 'whsec_config_prefix_previous_0123456789ab';
const env: Record<string, string> = {
  PAYMENTS_PUBLIC_KEY: 'pk_shop',
  PAYMENTS_PRIVATE_KEY: 'sk_shop',
  PAYMENTS_BASE_URL: 'https://pay.example',
  PAYMENTS_WEBHOOK_PUBLIC_URL: 'https://shop.example/payments/webhook',
  PAYMENTS_WEBHOOK_SECRET: SECRET,
  PAYMENTS_OUTLET_PUBLIC_KEY: 'pk_outlet',
  PAYMENTS_OUTLET_PRIVATE_KEY: 'sk_outlet',
  PAYMENTS_OUTLET_BASE_URL: 'https://pay.example',
  PAYMENTS_OUTLET_WEBHOOK_PUBLIC_URL: 'https://shop.example/payments/outlet/webhook',
  PAYMENTS_OUTLET_WEBHOOK_SECRET: SECRET,
  PAYMENTS_OUTLET_WEBHOOK_PREVIOUS_SECRETS: ` ${OLD} ,`,
};
const config = (extra: Record<string, string> = {}) => ({ get: (key: string) => ({ ...env, ...extra })[key] });

describe('paymentsOptionsFromConfig with a prefix', () => {
  it("reads the account's own variables only", () => {
    expect(paymentsOptionsFromConfig(config(), {}, { prefix: 'PAYMENTS_OUTLET_' })).toEqual({
      publicKey: 'pk_outlet',
      privateKey: 'sk_outlet',
      baseUrl: 'https://pay.example',
      webhook: { publicUrl: 'https://shop.example/payments/outlet/webhook', secret: SECRET, previousSecrets: [OLD] },
    });
    expect(paymentsOptionsFromConfig(config())).toMatchObject({
      publicKey: 'pk_shop',
      webhook: { publicUrl: 'https://shop.example/payments/webhook' },
    });
  });

  it('names the prefixed variable of a missing or invalid value, never a secret', () => {
    const bad = config({
      PAYMENTS_OUTLET_PUBLIC_KEY: '',
      PAYMENTS_OUTLET_WEBHOOK_PREVIOUS_SECRETS: `${OLD},short-one`,
    });
    const build = () => paymentsOptionsFromConfig(bad, {}, { prefix: 'PAYMENTS_OUTLET_' });
    expect(build).toThrow('PAYMENTS_OUTLET_PUBLIC_KEY (publicKey) (is required');
    expect(build).toThrow(
      'PAYMENTS_OUTLET_WEBHOOK_PREVIOUS_SECRETS (webhook.previousSecrets[1]) (must be a string of at least 32 characters)',
    );
    expect(build).not.toThrow('short-one');
  });

  it('refuses a prefix that is no variable name', () => {
    expect(() => paymentsOptionsFromConfig(config(), {}, { prefix: 'PAYMENTS OUTLET' })).toThrow('prefix');
  });

  it('lists PAYMENTS_WEBHOOK_PREVIOUS_SECRETS among the variables', () => {
    expect(PAYMENTS_ENV.webhookPreviousSecrets).toBe('PAYMENTS_WEBHOOK_PREVIOUS_SECRETS');
  });
});
