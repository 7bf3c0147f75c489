/**
 * The value rules of the plugin, each in one place: request fields (`payment.fields.ts`),
 * options (`payments.options.ts`) and the service's answers (`wire.mapper.ts`) all use these.
 * A rule returns `undefined` when the value is acceptable, otherwise the message to show (the
 * value itself is never echoed: it may be a secret).
 */
export type ValueRule = (value: unknown) => string | undefined;
