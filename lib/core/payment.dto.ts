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
  IsUrl,
} from 'class-validator';
import { normalizeMillimes } from './money.util.js';

const URL_OPTIONS = { protocols: ['http', 'https'], require_protocol: true, require_tld: false, require_host: true };
const URL_MESSAGE = 'must be an absolute http(s) URL';
const ID_MESSAGE = 'must be a non-empty string';

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

  @IsUrl(URL_OPTIONS, { message: URL_MESSAGE })
  successLink!: string;

  @IsUrl(URL_OPTIONS, { message: URL_MESSAGE })
  failLink!: string;

  @IsOptional()
  @IsUrl(URL_OPTIONS, { message: URL_MESSAGE })
  webhook?: string;

  @IsOptional()
  @IsString({ message: ID_MESSAGE })
  @IsNotEmpty({ message: ID_MESSAGE })
  developerTrackingId?: string;

  @IsOptional()
  @IsInt({ message: 'must be a positive integer' })
  @IsPositive({ message: 'must be a positive integer' })
  sessionTimeoutSecs?: number;

  @IsOptional()
  @IsBoolean({ message: 'must be a boolean' })
  acceptCard?: boolean;

  @IsOptional()
  @IsUrl(URL_OPTIONS, { message: URL_MESSAGE })
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
  clientId!: string;
}
