import type { ConfigService } from '@nestjs/config';
import { parsePort } from './config.options.js';

/** Injection token of the {@link ShopSettings}. */
export const SHOP_SETTINGS = Symbol('SHOP_SETTINGS');

/** Injection token of the values known only at start-up (see {@link ShopRuntime}). */
export const SHOP_RUNTIME = Symbol('SHOP_RUNTIME');

/** What `createShopApp` knows before the modules are built. */
export interface ShopRuntime {
  /** The port the shop is actually listening on (never 0). */
  readonly port: number;
  /** Port asked for the embedded sandbox, overriding `SANDBOX_PORT`. */
  readonly sandboxPort?: number;
}

/** The shop's own configuration, read once at start-up. */
export interface ShopSettings {
  /** The port the shop listens on. */
  readonly port: number;
  /** Public origin of the shop, no trailing slash: the base of the success, fail and webhook URLs. */
  readonly publicUrl: string;
  /** True when no `PAYMENTS_PUBLIC_KEY` is set: payments go to the embedded sandbox. */
  readonly sandboxMode: boolean;
  /** Port of the embedded sandbox; 0 picks a free one. */
  readonly sandboxPort: number;
}

/**
 * Reads `PUBLIC_URL` (default `http://localhost:<port>`), `SANDBOX_PORT` (default 0) and
 * whether `PAYMENTS_PUBLIC_KEY` is set.
 * @throws Error naming the variable when one is malformed, so a typo stops the start
 */
export function readShopSettings(config: ConfigService, runtime: ShopRuntime): ShopSettings {
  const rawUrl = config.get<string>('PUBLIC_URL') || `http://localhost:${runtime.port}`;
  let publicUrl: URL;
  try {
    publicUrl = new URL(rawUrl);
  } catch {
    throw new Error('PUBLIC_URL must be an absolute http(s) URL, like https://shop.example.com');
  }
  if (publicUrl.protocol !== 'http:' && publicUrl.protocol !== 'https:') {
    throw new Error('PUBLIC_URL must be an absolute http(s) URL, like https://shop.example.com');
  }
  return {
    port: runtime.port,
    // A trailing slash would give "//orders/..." in every link built from it.
    publicUrl: publicUrl.href.replace(/\/+$/, ''),
    sandboxMode: !config.get<string>('PAYMENTS_PUBLIC_KEY'),
    sandboxPort: runtime.sandboxPort ?? parsePort('SANDBOX_PORT', config.get('SANDBOX_PORT')) ?? 0,
  };
}
