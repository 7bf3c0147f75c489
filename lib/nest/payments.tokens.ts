// Injection tokens of each registration. The default (unnamed) registration keeps the tokens the
// plugin always had (the PaymentsService class, PAYMENTS_CLIENT, PAYMENTS_MODULE_OPTIONS), so apps
// with one merchant account inject by type; named registrations get tokens of their own, so two
// registrations in one app never shadow each other. (`getPaymentsServiceToken` lives beside
// PaymentsService: this file imports nothing, so no import cycle can leave a token undefined.)

/** Injection token of the default registration's framework-free `PaymentsClient` (e.g. for `overrideProvider`). */
export const PAYMENTS_CLIENT: unique symbol = Symbol('PAYMENTS_CLIENT');

/** Injection token of the default registration's options, as they were passed to `forRoot()` / returned by the async factory. */
export const PAYMENTS_MODULE_OPTIONS: unique symbol = Symbol('PAYMENTS_MODULE_OPTIONS');

/**
 * The injection token of a registration's `PaymentsClient` (the core client the module builds).
 * @param name the registration's `name`; omitted: the default registration (`PAYMENTS_CLIENT`)
 */
export function getPaymentsClientToken(name?: string): string | symbol {
  return name === undefined ? PAYMENTS_CLIENT : `nestjs-payments:client:${name}`;
}

/**
 * The injection token of a registration's options.
 * @param name the registration's `name`; omitted: the default registration (`PAYMENTS_MODULE_OPTIONS`)
 */
export function getPaymentsOptionsToken(name?: string): string | symbol {
  return name === undefined ? PAYMENTS_MODULE_OPTIONS : `nestjs-payments:options:${name}`;
}
