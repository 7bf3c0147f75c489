import {
  CancellationFailedError,
  InvalidClientIdError,
  PaymentsApiError,
  PaymentsAuthenticationError,
  PaymentsConnectionError,
  PaymentsError,
  PaymentsValidationError,
  RefundNotAllowedError,
} from 'nestjs-payments';

/**
 * Turns an error of the plugin into a sentence for the shop's staff. The plugin's errors never
 * carry credentials, but their messages are written for developers; these are for people.
 * Returns undefined for anything that is not a `PaymentsError` (a bug: let it surface).
 */
export function describePaymentsError(error: unknown, action: string): string | undefined {
  if (error instanceof RefundNotAllowedError || error instanceof CancellationFailedError) {
    return `${action} refused by the payment service: ${error.serviceMessage ?? 'no reason given'} (${error.code}).`;
  }
  if (error instanceof InvalidClientIdError) {
    return `The payment service does not accept this customer id: ${error.serviceMessage ?? 'invalid'} (${error.code}).`;
  }
  if (error instanceof PaymentsAuthenticationError) {
    return `${action} failed: the payment service refused the shop's keys (${error.code}). Check PAYMENTS_PUBLIC_KEY and PAYMENTS_PRIVATE_KEY.`;
  }
  if (error instanceof PaymentsConnectionError) {
    return error.mayHaveBeenProcessed
      ? `${action}: no answer from the payment service (${error.code}). It may have gone through: check the payment before trying again.`
      : `${action} failed: the payment service could not be reached (${error.code}). Nothing happened; you can try again.`;
  }
  if (error instanceof PaymentsValidationError) {
    return `${action} failed: ${error.fields.map((f) => `${f.field} ${f.messages.join(', ')}`).join('; ')}.`;
  }
  if (error instanceof PaymentsApiError) {
    return `${action} failed: the payment service answered HTTP ${error.httpStatus} (${error.code})${error.serviceMessage ? `: ${error.serviceMessage}` : ''}.`;
  }
  if (error instanceof PaymentsError) return `${action} failed (${error.code}).`;
  return undefined;
}
