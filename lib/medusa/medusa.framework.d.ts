// The part of `@medusajs/framework/utils` (Medusa 2.x) this entry uses, declared here so the
// package builds without Medusa installed (it is an optional peer). The compiled .d.ts files
// import the real module, so a Medusa project type-checks against Medusa's own declarations.
declare module '@medusajs/framework/utils' {
  /** Medusa's base class of payment module providers. */
  export abstract class AbstractPaymentProvider<TConfig = Record<string, unknown>> {
    /** The provider's options, as given in medusa-config. */
    protected readonly config: TConfig;
    /** The payment module's container. */
    protected readonly container: Record<string, unknown>;
    /** Called by Medusa's loader with the options before the provider is built. */
    static validateOptions(options: Record<string, unknown>): void;
    /** Makes the provider id `pp_<identifier>_<id>`. */
    static identifier: string;
    protected constructor(cradle: Record<string, unknown>, config?: TConfig);
    /** The static identifier. */
    getIdentifier(): string;
  }
  /** Medusa's error with a type the HTTP layer maps to a status. */
  export class MedusaError extends Error {
    /** The error types. */
    static Types: {
      readonly NOT_ALLOWED: 'not_allowed';
      readonly INVALID_DATA: 'invalid_data';
      readonly UNEXPECTED_STATE: 'unexpected_state';
    };
    constructor(type: string, message: string, code?: string, ...params: unknown[]);
  }
}
