import type { ConfigModuleOptions } from '@nestjs/config';

/** Variables given in code instead of the environment (see `createShopApp({ env })`). */
export type ShopEnv = Readonly<Record<string, string | undefined>>;

/**
 * Options of `ConfigModule.forRoot` for the shop.
 *
 * Without `env`: the usual merchant set-up, `process.env` plus an optional `.env` file in the
 * working directory. With `env`: those variables only, so a test's configuration cannot be
 * changed by whatever happens to be exported in the developer's shell (a stray
 * `PAYMENTS_PUBLIC_KEY` would otherwise switch a test from the sandbox to a real service).
 */
export function configModuleOptions(env?: ShopEnv): ConfigModuleOptions {
  if (env === undefined) return { isGlobal: true };
  const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined));
  return {
    isGlobal: true,
    ignoreEnvFile: true,
    // Keeps process.env out of both the loaded values and ConfigService.get.
    validatePredefined: false,
    skipProcessEnv: true,
    load: [() => defined],
  };
}

/**
 * Reads a TCP port variable: undefined when unset or empty.
 * @throws Error naming the variable when it is not an integer from 0 to 65535
 */
export function parsePort(name: string, value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value);
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535)) throw new Error(`${name} must be a TCP port number from 0 to 65535`);
  return port;
}

/**
 * Reads a positive integer variable: undefined when unset or empty.
 * @throws Error naming the variable when it is not a positive integer
 */
export function parsePositiveInteger(name: string, value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value);
  const n = /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(n > 0)) throw new Error(`${name} must be a positive integer`);
  return n;
}
