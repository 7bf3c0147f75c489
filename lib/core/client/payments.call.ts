import type { TelemetryHooks } from '../telemetry/index.js';
import {
  type HttpTransport,
  identifier,
  pathSegmentId,
  PaymentsApiError,
  PaymentsValidationError,
  type PaymentsOperation,
  interpretResponse,
  SERVICE_PATHS,
  type JsonObject,
} from '../api/index.js';

/** One request to the service, as an operation sends it. */
export interface ServiceRequest {
  /** The operation, named in errors and telemetry. */
  operation: PaymentsOperation;
  /** The HTTP method. */
  method: 'GET' | 'POST';
  /** The path under the base URL (a payment id already encoded into it for verify). */
  path: string;
  /** The JSON body; none for a GET. */
  body?: object;
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
  telemetry: TelemetryHooks,
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
