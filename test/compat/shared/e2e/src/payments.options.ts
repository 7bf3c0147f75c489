// The plugin's options from the environment, as a deployed app reads them (run.sh copies this
// file into the src/ of every e2e compatibility app; the e2e scenario sets the variables).
import type { PaymentsModuleOptions } from 'nestjs-payments';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

export function paymentsOptionsFromEnv(): PaymentsModuleOptions {
  return {
    publicKey: env('PAYMENTS_PUBLIC_KEY'),
    privateKey: env('PAYMENTS_PRIVATE_KEY'),
    baseUrl: env('PAYMENTS_BASE_URL'),
    successLink: 'https://shop.example.com/checkout/success',
    failLink: 'https://shop.example.com/checkout/failed',
    webhook: { publicUrl: env('PAYMENTS_WEBHOOK_PUBLIC_URL'), secret: env('PAYMENTS_WEBHOOK_SECRET') },
  };
}
