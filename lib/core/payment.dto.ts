import {
  IsBoolean,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsPositive,
  IsString,
  Matches,
  Validate,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
  isURL,
  Max,
} from 'class-validator';
import { normalizeMillimes } from './money.util.js';

const URL_OPTIONS = { protocols: ['http', 'https'], require_protocol: true, require_tld: false, require_host: true };
const URL_MESSAGE = 'must be an absolute http(s) URL';
const ID_MESSAGE = 'must be a non-empty string';

// The same links (the module's successLink / failLink, a shop's few return URLs) come with every
// payment, and isURL was a tenth of generatePayment's CPU: its verdicts are remembered, for at most
// 512 strings of at most 2 KiB (about 1 MiB in the worst case).
const urlVerdicts = new Map<string, boolean>();

/**
 * The one rule for links and option URLs: an absolute http(s) URL; hosts without a TLD, like
 * `localhost`, are allowed (verdicts of repeated strings remembered).
 */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const known = urlVerdicts.get(value);
  if (known !== undefined) return known;
  const verdict = isURL(value, URL_OPTIONS);
  if (value.length <= 2048) {
    if (urlVerdicts.size >= 512) urlVerdicts.clear();
    urlVerdicts.set(value, verdict);
  }
  return verdict;
}

/** An absolute http(s) URL (hosts without a TLD, like `localhost`, are allowed). */
@ValidatorConstraint({ name: 'isUrl', async: false })
class HttpUrlConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return isHttpUrl(value);
  }

  defaultMessage(): string {
    return URL_MESSAGE;
  }
}

/** Accepts a digit string or a positive safe integer of millimes. */
@ValidatorConstraint({ name: 'millimes', async: false })
class MillimesConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return normalizeMillimes(value) !== undefined;
  }

  defaultMessage(): string {
    return 'must be a positive whole number of millimes: ASCII digits like "12500" or a positive safe integer (no decimals, signs or exponents)';
  }
}

/** Validation rules of `generatePayment`'s input, after the module's defaults were merged in. */
export class GeneratePaymentDto {
  @Validate(MillimesConstraint)
  amount!: string | number;

  @Validate(HttpUrlConstraint)
  successLink!: string;

  @Validate(HttpUrlConstraint)
  failLink!: string;

  @IsOptional()
  @Validate(HttpUrlConstraint)
  webhook?: string;

  @IsOptional()
  @IsString({ message: ID_MESSAGE })
  @IsNotEmpty({ message: ID_MESSAGE })
  developerTrackingId?: string;

  @IsOptional()
  @IsInt({ message: 'must be a positive integer' })
  @IsPositive({ message: 'must be a positive integer' })
  // Beyond 2^53 - 1 a number is no longer an exact integer (and 1e21 would travel as "1e+21").
  @Max(Number.MAX_SAFE_INTEGER, { message: 'must be a positive integer' })
  sessionTimeoutSecs?: number;

  @IsOptional()
  @IsBoolean({ message: 'must be a boolean' })
  acceptCard?: boolean;

  @IsOptional()
  @Validate(HttpUrlConstraint)
  imageUrl?: string;
}

/** Validation rule of a payment id (refund, cancel). */
export class PaymentIdDto {
  @IsString({ message: ID_MESSAGE })
  @Matches(/\S/, { message: ID_MESSAGE })
  paymentId!: string;
}

/** Validation rule of a client id (bindings). */
export class ClientIdDto {
  @IsString({ message: ID_MESSAGE })
  @Matches(/\S/, { message: ID_MESSAGE })
  // It travels in the query string: a lone surrogate cannot be percent-encoded.
  @Matches(/^\P{Cs}*$/u, { message: 'must be well-formed Unicode text (no lone surrogates)' })
  clientId!: string;
}
