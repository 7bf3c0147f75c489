import { validateSync, type ValidationError } from 'class-validator';
import { normalizeMillimes } from './money.util.js';
import { ClientIdDto, GeneratePaymentDto, isHttpUrl, PaymentIdDto } from './payment.dto.js';
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
  if (isPlainlyValid(input as unknown as Record<string, unknown>)) return;
  // Undefined and null count as "not set": the wire omits them (see wire.mapper.ts).
  // Unknown keys are reported here rather than by class-validator's whitelist, which looks names up
  // in a plain object and so lets `__proto__`, `constructor`, `hasOwnProperty`... through; copying
  // only known keys also keeps an own `__proto__` key (JSON.parse makes one) off the DTO's prototype.
  const dto = new GeneratePaymentDto();
  const unknown: PaymentsFieldError[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    if (GENERATE_FIELDS.has(key)) (dto as unknown as Record<string, unknown>)[key] = value;
    else unknown.push({ field: key, messages: [`property ${key} should not exist`] });
  }
  const errors = validateSync(dto, VALIDATE_OPTIONS).map(toFieldError);
  if (errors.length > 0 || unknown.length > 0) throw new PaymentsValidationError([...errors, ...unknown], 'generatePayment input');
}

/**
 * The fast path, without class-validator: true when every field is unset or in its plain valid
 * form. It accepts a subset of what the DTO accepts (e.g. not `new String('x')`), so the answer
 * never differs; anything else goes through class-validator, which reports every bad field.
 * (class-validator was the largest share of generatePayment's own CPU.)
 */
function isPlainlyValid(input: Record<string, unknown>): boolean {
  let required = 0;
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    switch (key) {
      case 'amount':
        if (normalizeMillimes(value) === undefined) return false;
        required++;
        break;
      case 'successLink':
      case 'failLink':
        if (!isHttpUrl(value)) return false;
        required++;
        break;
      case 'webhook':
      case 'imageUrl':
        if (!isHttpUrl(value)) return false;
        break;
      case 'developerTrackingId':
        if (typeof value !== 'string' || value === '') return false;
        break;
      case 'sessionTimeoutSecs':
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) return false;
        break;
      case 'acceptCard':
        if (typeof value !== 'boolean') return false;
        break;
      default:
        return false;
    }
  }
  return required === 3;
}

const GENERATE_FIELDS: ReadonlySet<string> = new Set([
  'amount',
  'successLink',
  'failLink',
  'webhook',
  'developerTrackingId',
  'sessionTimeoutSecs',
  'acceptCard',
  'imageUrl',
] satisfies Array<keyof GeneratePaymentDto>);

/**
 * Validates a payment id for refund or cancel.
 * @throws PaymentsValidationError when it is not a non-empty string
 */
export function validatePaymentId(paymentId: unknown, operation: string): asserts paymentId is string {
  if (typeof paymentId === 'string' && /\S/.test(paymentId)) return; // the DTO's rule, without class-validator
  const dto = new PaymentIdDto();
  dto.paymentId = paymentId as string;
  check(dto, `${operation} input`);
}

/**
 * Validates a client id for the bindings list.
 * @throws PaymentsValidationError when it is not a non-empty string
 */
export function validateClientId(clientId: unknown): asserts clientId is string {
  if (typeof clientId === 'string' && /\S/.test(clientId) && !/\p{Cs}/u.test(clientId)) return; // the DTO's rules, without class-validator
  const dto = new ClientIdDto();
  dto.clientId = clientId as string;
  check(dto, 'listBindings input');
}
