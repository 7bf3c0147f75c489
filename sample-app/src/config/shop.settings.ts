import type { ConfigService } from '@nestjs/config';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DEFAULT_DATA_DIR } from '../db/database.js';
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
  /**
   * Where the embedded sandbox keeps its payments, so orders paid before a restart can still be
   * refunded or captured: `SANDBOX_STATE_FILE`, else `sandbox-state.json` in `DATA_DIR` (default
   * `sample-app/.data/`); none with an in-memory `DATA_DIR` (`memory://`).
   */
  readonly sandboxStateFile?: string;
  /** The admin password: `ADMIN_PASSWORD`, or (sandbox mode only) one generated for this run. */
  readonly adminPassword: string;
  /** True when {@link adminPassword} was generated (it is printed once at start). */
  readonly adminPasswordGenerated: boolean;
  /** Signs the admin session cookie and the CSRF tokens: `SESSION_SECRET`, else random per run. */
  readonly sessionSecret: string;
  /** Cookies get `Secure` when the shop's public URL is https. */
  readonly secureCookies: boolean;
}

const MIN_SECRET_LENGTH = 32;

function sandboxStateFile(config: ConfigService): { sandboxStateFile?: string } {
  const explicit = config.get<string>('SANDBOX_STATE_FILE');
  if (explicit) return { sandboxStateFile: explicit };
  const dataDir = config.get<string>('DATA_DIR') || DEFAULT_DATA_DIR;
  return dataDir.startsWith('memory://') ? {} : { sandboxStateFile: join(dataDir, 'sandbox-state.json') };
}

/**
 * Reads `PUBLIC_URL` (default `http://localhost:<port>`), `SANDBOX_PORT` (default 0), whether
 * `PAYMENTS_PUBLIC_KEY` is set, `ADMIN_PASSWORD` (required with real keys) and `SESSION_SECRET`.
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
  const sandboxMode = !config.get<string>('PAYMENTS_PUBLIC_KEY');
  const configuredPassword = config.get<string>('ADMIN_PASSWORD') || undefined;
  if (!configuredPassword && !sandboxMode) {
    throw new Error('ADMIN_PASSWORD must be set to protect /admin when the shop uses real PAYMENTS_* keys');
  }
  if (configuredPassword !== undefined && configuredPassword.length < 12) {
    throw new Error('ADMIN_PASSWORD must be at least 12 characters long');
  }
  const sessionSecret = config.get<string>('SESSION_SECRET') || undefined;
  if (sessionSecret !== undefined && sessionSecret.length < MIN_SECRET_LENGTH) {
    throw new Error(`SESSION_SECRET must be at least ${MIN_SECRET_LENGTH} characters long`);
  }
  return {
    port: runtime.port,
    // A trailing slash would give "//orders/..." in every link built from it.
    publicUrl: publicUrl.href.replace(/\/+$/, ''),
    sandboxMode,
    sandboxPort: runtime.sandboxPort ?? parsePort('SANDBOX_PORT', config.get('SANDBOX_PORT')) ?? 0,
    ...sandboxStateFile(config),
    adminPassword: configuredPassword ?? randomBytes(12).toString('base64url'),
    adminPasswordGenerated: configuredPassword === undefined,
    // Without SESSION_SECRET, admin sessions and open forms end when the shop restarts.
    sessionSecret: sessionSecret ?? randomBytes(32).toString('base64url'),
    secureCookies: publicUrl.protocol === 'https:',
  };
}
