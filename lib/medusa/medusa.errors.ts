import { MedusaError } from '@medusajs/framework/utils';
import { PaymentsApiError, PaymentsValidationError } from '../core/api/index.js';
import { MedusaAmountError, millimesOf } from './medusa.money.js';

/** The core's errors as Medusa's: the message (never a secret) and a type Medusa's HTTP layer maps. */
export function medusaErrorOf(error: unknown): unknown {
  if (error instanceof PaymentsValidationError) return new MedusaError(MedusaError.Types.INVALID_DATA, error.message);
  if (
    error instanceof PaymentsApiError &&
    (error.code === 'REFUND_NOT_ALLOWED' || error.code === 'CANCELLATION_FAILED')
  ) {
    return new MedusaError(
      MedusaError.Types.NOT_ALLOWED,
      `${error.message} (the service refuses; the payment may have been refunded or released already)`,
    );
  }
  return error;
}

/** Runs a call to the core, its failure thrown as {@link medusaErrorOf} maps it. */
export async function medusaCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw medusaErrorOf(error);
  }
}

/** {@link millimesOf}, an amount it refuses thrown as Medusa's `INVALID_DATA`. */
export function medusaMillimesOf(amount: unknown, currencyCode: string): string {
  try {
    return millimesOf(amount, currencyCode);
  } catch (error) {
    if (error instanceof MedusaAmountError) throw new MedusaError(MedusaError.Types.INVALID_DATA, error.message);
    throw error;
  }
}
