/** A JSON object as parsed from a body. */
export type JsonObject = Record<string, unknown>;

/** Narrows an unknown parsed body to a plain JSON object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
