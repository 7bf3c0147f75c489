/**
 * Error classes of nestjs-payments. Every error the plugin throws is an instance of
 * {@link PaymentsError} with a stable string `code`, so callers can branch on `code`
 * (or `instanceof`) without parsing messages.
 *
 * None of these errors keeps a reference to the HTTP request or its headers, so the
 * private key cannot leak through `JSON.stringify(error)`, `util.inspect(error)` or logs.
 */

/**
 * Codes of the errors raised by the plugin itself. `PaymentsError.code` is typed
 * `PaymentsErrorCode | (string & {})`: the service's own codes (e.g. `INSUFFICIENT_FUNDS`) pass
 * through as they are, so a `switch` on `code` keeps a `default` branch.
 */
export type PaymentsErrorCode =
  | 'VALIDATION_FAILED'
  | 'REFUND_NOT_ALLOWED'
  | 'CANCELLATION_FAILED'
  | 'INVALID_CLIENT_ID'
  | 'AUTHENTICATION_FAILED'
  | 'BAD_REQUEST'
  | 'API_ERROR'
  | 'INVALID_RESPONSE'
  | 'UNEXPECTED_REDIRECT'
  | 'NOT_FOUND'
  | 'RATE_LIMITED'
  | 'CONNECTION_FAILED'
  | 'TIMEOUT'
  | 'STORE_UNAVAILABLE';

/** The operations of the service, as named in error messages and in `error.operation`. */
export type PaymentsOperation =
  'generatePayment' | 'verifyPayment' | 'capturePayment' | 'refundPayment' | 'cancelPayment' | 'listBindings';

/** Base class of every error thrown by nestjs-payments. */
export class PaymentsError extends Error {
  /**
   * Stable machine-readable code: one of {@link PaymentsErrorCode}, or any other string when the
   * service sent its own code (hence the type `PaymentsErrorCode | (string & {})`, which keeps
   * the known codes in autocompletion).
   */
  readonly code: PaymentsErrorCode | (string & {});

  /**
   * @param message human-readable description (never contains credentials)
   * @param code stable machine-readable code
   */
  constructor(message: string, code: string) {
    super(message);
    this.code = code;
    // Keeps `name` right after transpilation and minification, where `constructor.name` may not be.
    Object.defineProperty(this, 'name', { value: new.target.name, enumerable: false, configurable: true });
  }

  /** A plain, credential-free representation for logs and API answers. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message };
  }
}

/** One invalid field of a {@link PaymentsValidationError}. */
export interface PaymentsFieldError {
  /** The field's name as the caller wrote it (camelCase), e.g. `amount` or `webhook.secret`. */
  readonly field: string;
  /** Why it is invalid. The rejected value is never included. */
  readonly messages: readonly string[];
}

/** Bad input caught before any request was sent (`VALIDATION_FAILED`). Lists every bad field. */
export class PaymentsValidationError extends PaymentsError {
  /** Every invalid field, in the order they were checked. */
  readonly fields: readonly PaymentsFieldError[];

  /**
   * @param fields the invalid fields
   * @param subject what was validated, for the message (e.g. `generatePayment input`)
   */
  constructor(fields: readonly PaymentsFieldError[], subject = 'input') {
    const list = fields.map((f) => `${f.field} (${f.messages.join('; ')})`).join(', ');
    super(`Invalid ${subject}: ${list}`, 'VALIDATION_FAILED');
    this.fields = fields;
  }

  /** @inheritdoc */
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), fields: this.fields };
  }
}

/** Details of an answer of the service that was an error. */
export interface PaymentsApiErrorDetails {
  /** Which operation failed. */
  operation: PaymentsOperation;
  /** HTTP status of the answer. */
  httpStatus: number;
  /** The service's own message, when the body carried one. */
  serviceMessage?: string;
  /** The first characters of a body that was not a recognised shape (HTML, empty, broken JSON). */
  bodyExcerpt?: string;
  /** Seconds the service asked to wait (`Retry-After` of a 429 or 503), when it said. */
  retryAfterSecs?: number;
}

/** The service answered with an error. Carries the HTTP status and the service's message. */
export class PaymentsApiError extends PaymentsError {
  /** Which operation failed. */
  readonly operation: PaymentsOperation;
  /** HTTP status of the answer (the error may also come with HTTP 200: the body decides). */
  readonly httpStatus: number;
  /** The service's own message, when the body carried one. */
  readonly serviceMessage?: string;
  /** Up to 200 characters of an unrecognised body, to help diagnose proxies and outages. */
  readonly bodyExcerpt?: string;
  /** Seconds the service asked to wait before trying again, when it said (429, 503). */
  readonly retryAfterSecs?: number;

  /**
   * @param code the service's code, or one of the plugin's (`API_ERROR`, `INVALID_RESPONSE`, ...)
   * @param details status, operation and message of the answer
   */
  constructor(code: string, details: PaymentsApiErrorDetails) {
    const what =
      details.serviceMessage ??
      (details.bodyExcerpt !== undefined ? `unexpected body: ${JSON.stringify(details.bodyExcerpt)}` : 'no message');
    super(`${details.operation} failed (HTTP ${details.httpStatus}, ${code}): ${what}`, code);
    this.operation = details.operation;
    this.httpStatus = details.httpStatus;
    this.serviceMessage = details.serviceMessage;
    this.bodyExcerpt = details.bodyExcerpt;
    this.retryAfterSecs = details.retryAfterSecs;
  }

  /** @inheritdoc */
  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      operation: this.operation,
      httpStatus: this.httpStatus,
      serviceMessage: this.serviceMessage,
      bodyExcerpt: this.bodyExcerpt,
      retryAfterSecs: this.retryAfterSecs,
    };
  }
}

/**
 * The service refused the call for its rate (HTTP 429, code `RATE_LIMITED` unless the body named
 * its own). {@link PaymentsRateLimitedError.waitSecs} says how long every path should pause: the
 * service's `Retry-After` when it sent one, else 30 s.
 */
export class PaymentsRateLimitedError extends PaymentsApiError {
  /** Pause when a 429 did not say how long. */
  static readonly DEFAULT_WAIT_SECS = 30;

  /**
   * @param details status, operation, message and Retry-After of the answer
   * @param code the service's own code, when its body carried one
   */
  constructor(details: PaymentsApiErrorDetails, code = 'RATE_LIMITED') {
    super(code, details);
  }

  /** Seconds to wait before calling again: the service's `Retry-After`, else {@link PaymentsRateLimitedError.DEFAULT_WAIT_SECS}. */
  get waitSecs(): number {
    return this.retryAfterSecs ?? PaymentsRateLimitedError.DEFAULT_WAIT_SECS;
  }
}

/** The payment cannot be refunded (`REFUND_NOT_ALLOWED`). */
export class RefundNotAllowedError extends PaymentsApiError {
  /** @param details status, operation and message of the answer */
  constructor(details: PaymentsApiErrorDetails) {
    super('REFUND_NOT_ALLOWED', details);
  }
}

/** The pre-authorized payment cannot be cancelled (`CANCELLATION_FAILED`). */
export class CancellationFailedError extends PaymentsApiError {
  /** @param details status, operation and message of the answer */
  constructor(details: PaymentsApiErrorDetails) {
    super('CANCELLATION_FAILED', details);
  }
}

/** The service rejected the client id of a bindings lookup (`INVALID_CLIENT_ID`). */
export class InvalidClientIdError extends PaymentsApiError {
  /** @param details status, operation and message of the answer */
  constructor(details: PaymentsApiErrorDetails) {
    super('INVALID_CLIENT_ID', details);
  }
}

/**
 * The service refused the credentials: HTTP 401 or 403 (`AUTHENTICATION_FAILED`). The message says
 * what to check: the key pair, and that `baseUrl` is the environment the keys were issued for.
 */
export class PaymentsAuthenticationError extends PaymentsApiError {
  /** @param details status, operation and message of the answer */
  constructor(details: PaymentsApiErrorDetails) {
    super('AUTHENTICATION_FAILED', details);
    this.message +=
      ' (check publicKey/privateKey, and that baseUrl is the environment, sandbox or live, the keys were issued for)';
  }
}

/**
 * The store failed around a payment (`STORE_UNAVAILABLE`); `paymentId` names it.
 *
 * - From `generatePayment` (`step` `generatePayment`): the service created the payment but the
 *   store could not record it. Its webhook still confirms it (the signed token carries what must
 *   be checked), but it is not in the reconciliation queue, so if its webhook never comes only
 *   your own `reconcilePayment(paymentId)` settles it.
 * - From `reconcilePayment` (`step` `reconcilePayment`): the payment's claim could not be taken,
 *   so nothing was verified and no handler ran; call again once the store is back.
 */
export class PaymentsStoreUnavailableError extends PaymentsError {
  /** The payment concerned. */
  readonly paymentId: string;
  /** The operation during which the store failed. */
  readonly step: 'generatePayment' | 'reconcilePayment';

  /**
   * @param paymentId the payment concerned
   * @param reason why the store failed (no secrets)
   * @param step the operation during which it failed; default `generatePayment`
   */
  constructor(paymentId: string, reason: string, step: 'generatePayment' | 'reconcilePayment' = 'generatePayment') {
    super(
      step === 'generatePayment'
        ? `payment ${paymentId} was created but could not be recorded in the store (${reason}); reconcile it yourself if no webhook confirms it`
        : `reconcilePayment: the store is unreachable (${reason}); payment ${paymentId} was not verified and no handler ran, try again later`,
      'STORE_UNAVAILABLE',
    );
    this.paymentId = paymentId;
    this.step = step;
  }

  /** @inheritdoc */
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), paymentId: this.paymentId, step: this.step };
  }
}

/** Details of a {@link PaymentsConnectionError}. */
export interface PaymentsConnectionErrorDetails {
  /** Which operation failed. */
  operation: PaymentsOperation;
  /** `TIMEOUT` when `timeoutMs` passed, else `CONNECTION_FAILED`. */
  code: 'CONNECTION_FAILED' | 'TIMEOUT';
  /** Whether the service may have acted on the request (only false when it surely never got it). */
  mayHaveBeenProcessed: boolean;
  /** How many attempts were made. */
  attempts: number;
  /** The low-level reason (e.g. `ECONNREFUSED`), never with credentials. */
  reason: string;
}

/**
 * No usable answer came back (`CONNECTION_FAILED` or `TIMEOUT`).
 *
 * `mayHaveBeenProcessed` tells whether the service may have acted on the request: when true for a
 * refund or a payment, do not simply try again; check the payment's state first.
 */
export class PaymentsConnectionError extends PaymentsError {
  /** Which operation failed. */
  readonly operation: PaymentsOperation;
  /** Whether the service may have acted on the request. */
  readonly mayHaveBeenProcessed: boolean;
  /** How many attempts were made. */
  readonly attempts: number;
  /** The low-level reason, e.g. `ECONNREFUSED`, `ECONNRESET`, `timeout of 10000ms exceeded`. */
  readonly reason: string;

  /** @param details what failed and whether it may have been processed */
  constructor(details: PaymentsConnectionErrorDetails) {
    const tail = details.mayHaveBeenProcessed
      ? 'the request may have been processed by the service; check before repeating it'
      : 'the request was not processed';
    super(
      `${details.operation} failed after ${details.attempts} attempt(s) (${details.code}: ${details.reason}); ${tail}`,
      details.code,
    );
    this.operation = details.operation;
    this.mayHaveBeenProcessed = details.mayHaveBeenProcessed;
    this.attempts = details.attempts;
    this.reason = details.reason;
  }

  /** @inheritdoc */
  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      operation: this.operation,
      mayHaveBeenProcessed: this.mayHaveBeenProcessed,
      attempts: this.attempts,
      reason: this.reason,
    };
  }
}
