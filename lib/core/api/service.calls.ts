import type { HttpTransport } from './http.transport.js';
import { PaymentsApiError, PaymentsValidationError, type PaymentsOperation } from './payments.errors.js';
import type { PaymentRefund, VerifiedPayment } from './payments.types.js';
import { fromRefundWire, fromVerifyWire, interpretResponse, SERVICE_PATHS } from './wire.mapper.js';
import { identifier, isJsonObject, pathSegmentId, type JsonObject } from './wire.values.js';

/*
 * The plain calls to the service: how one request is sent and its answer read, and verify, the call
 * every settlement path makes. They sit below the settlement so that it calls the service downward
 * (the client's operations build on the same calls).
 */

/**
 * What observes a call to the service (the telemetry's hooks implement it; the layer above this one).
 * `run` fills in `stats`: the attempts made, the final HTTP status.
 */
export interface CallObserver {
  /** Whether anything is recorded; an unobserved call builds nothing for it. */
  readonly active: boolean;
  /**
   * Runs one call to the service.
   * @param urlTemplate the path with ids replaced by placeholders
   */
  call<T>(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    urlTemplate: string,
    run: (stats: { attempts: number; status?: number }) => Promise<T>,
  ): Promise<T>;
}

/** One request to the service, as an operation sends it. */
export interface ServiceRequest {
  /** The operation, named in errors and telemetry. */
  operation: PaymentsOperation;
  /** The HTTP method. */
  method: 'GET' | 'POST';
  /** The path under the base URL (a payment id already encoded into it for verify). */
  path: string;
  /** The JSON body, or its text when the caller serialised it already (sent as it is); none for a GET. */
  body?: object | string;
  /** The query parameters; none when absent. */
  query?: Record<string, string>;
}

/**
 * Sends one request through the transport and reads the answer (`interpretResponse`): a success
 * is what `isSuccess` accepts. Traced when telemetry is on.
 * @param transport sends the request
 * @param telemetry what observes the call
 * @param request the operation, method, path, body and query
 * @param isSuccess which answers are a success
 */
export async function callService(
  transport: HttpTransport,
  telemetry: CallObserver,
  request: ServiceRequest,
  isSuccess: (json: JsonObject) => boolean,
): Promise<JsonObject> {
  const { operation, method, path, body, query } = request;
  if (!telemetry.active)
    return interpretResponse(operation, await transport.send({ operation, method, path, body, query }), isSuccess);
  // Traced: a CLIENT span and the call's metrics (telemetry.otel.ts); the payment id stays out of the template.
  const template = path.startsWith(SERVICE_PATHS.verify) ? `${SERVICE_PATHS.verify}{payment_id}` : path;
  return telemetry.call(operation, method, template, async (stats) => {
    const response = await transport.send({ operation, method, path, body, query }, stats);
    stats.status = response.status;
    return interpretResponse(operation, response, isSuccess);
  });
}

/** Refuses an id that is not one (PaymentsValidationError naming the field), before any call. */
export function checkId(value: unknown, field: string, operation: string): asserts value is string {
  // A payment id may go into a request path (verify); one rule for every operation taking one.
  const problem = field === 'paymentId' ? pathSegmentId(value) : identifier(value);
  if (problem) throw new PaymentsValidationError([{ field, messages: [problem] }], `${operation} input`);
}

/**
 * The error of a success answer that lacks what the operation reads from it.
 * @param operation the operation that got the answer
 * @param what which fields are missing or malformed
 */
export function unexpected(operation: PaymentsOperation, what: string): PaymentsApiError {
  return new PaymentsApiError('INVALID_RESPONSE', {
    operation,
    httpStatus: 200,
    bodyExcerpt: `success answer without the expected fields: ${what}`,
  });
}

/** How the settlement reads a payment from the service: `verify_payment`, and nothing else. */
export interface PaymentVerifier {
  /** The payment as the service has it; throws a `PaymentsError` when no usable answer came. */
  verify(paymentId: string): Promise<VerifiedPayment>;
}

/** What a duplicate's automatic refund asks of the service: the refund, and nothing else (a port). */
export interface PaymentRefunder {
  /** Refunds the payment at the service; throws a `PaymentsError` when no usable answer came. */
  refund(paymentId: string): Promise<PaymentRefund>;
}

/**
 * The settlement's calls to the service over the transport: `verify_payment`, which the client's
 * `verifyPayment` and every settlement path share, and `refund`, which the client's
 * `refundPayment` and the settlement's refund of a duplicate share (each emits `payment.refunded`
 * itself, naming what it knows). One instance per registration.
 */
export class ServiceCalls implements PaymentVerifier, PaymentRefunder {
  /**
   * @param transport sends the requests
   * @param observer what observes the calls (the telemetry)
   */
  constructor(
    private readonly transport: HttpTransport,
    private readonly observer: CallObserver,
  ) {}

  /** @inheritdoc */
  async verify(paymentId: string): Promise<VerifiedPayment> {
    checkId(paymentId, 'paymentId', 'verifyPayment');
    const json = await callService(
      this.transport,
      this.observer,
      { operation: 'verifyPayment', method: 'GET', path: SERVICE_PATHS.verify + encodeURIComponent(paymentId) },
      isVerified,
    );
    const verified = fromVerifyWire(paymentId, json.result as JsonObject);
    if (!verified)
      throw unexpected(
        'verifyPayment',
        'the status or the amount is missing or malformed, or the tracking id or the type is malformed',
      );
    return verified;
  }

  /** @inheritdoc */
  async refund(paymentId: string): Promise<PaymentRefund> {
    checkId(paymentId, 'paymentId', 'refundPayment');
    const json = await callService(
      this.transport,
      this.observer,
      { operation: 'refundPayment', method: 'POST', path: SERVICE_PATHS.refund, body: { payment_id: paymentId } },
      isFlatSuccess,
    );
    const refund = fromRefundWire(json.result as JsonObject);
    if (!refund) throw unexpected('refundPayment', 'no refund id, or the payment id is missing or malformed');
    return refund;
  }
}

/** A success of the operations that answer `{ status: 'success', result }` (refund, cancellation). */
export function isFlatSuccess(json: JsonObject): boolean {
  return json.status === 'success' && isJsonObject(json.result);
}

function isVerified(json: JsonObject): boolean {
  return json.success === true && isJsonObject(json.result);
}
