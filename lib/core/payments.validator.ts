import { validateSync, type ValidationError } from 'class-validator';
import { ClientIdDto, GeneratePaymentDto, PaymentIdDto } from './payment.dto.js';
import { PaymentsValidationError, type PaymentsFieldError } from './payments.errors.js';
import type { GeneratePaymentInput } from './payments.types.js';

// Built once: class-validator's per-call cost is the metadata walk, not these options.
const VALIDATE_OPTIONS = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  validationError: { target: false, value: false },
} as const;

function check<T extends object>(dto: T, subject: string): void {
  const errors = validateSync(dto, VALIDATE_OPTIONS);
  if (errors.length > 0) throw new PaymentsValidationError(errors.map(toFieldError), subject);
}

function toFieldError(error: ValidationError): PaymentsFieldError {
  const messages = Object.values(error.constraints ?? {});
  // forbidNonWhitelisted reports unknown fields with class-validator's own wording.
  return { field: error.property, messages: messages.length > 0 ? messages : ['is invalid'] };
}

/**
 * Validates a `generatePayment` input (defaults already merged).
 * @throws PaymentsValidationError listing every invalid field
 */
export function validateGeneratePayment(input: GeneratePaymentInput): void {
  if (typeof input !== 'object' || input === null) {
    throw new PaymentsValidationError([{ field: 'input', messages: ['must be an object'] }], 'generatePayment input');
  }
  // Undefined and null count as "not set": the wire omits them (see wire.mapper.ts).
  const dto = new GeneratePaymentDto();
  for (const [key, value] of Object.entries(input)) {
    if (value !== undefined && value !== null) (dto as unknown as Record<string, unknown>)[key] = value;
  }
  check(dto, 'generatePayment input');
}

/**
 * Validates a payment id for refund or cancel.
 * @throws PaymentsValidationError when it is not a non-empty string
 */
export function validatePaymentId(paymentId: unknown, operation: string): asserts paymentId is string {
  const dto = new PaymentIdDto();
  dto.paymentId = paymentId as string;
  check(dto, `${operation} input`);
}

/**
 * Validates a client id for the bindings list.
 * @throws PaymentsValidationError when it is not a non-empty string
 */
export function validateClientId(clientId: unknown): asserts clientId is string {
  const dto = new ClientIdDto();
  dto.clientId = clientId as string;
  check(dto, 'listBindings input');
}
