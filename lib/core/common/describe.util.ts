/** A short, secret-free description of a thrown value, for logs and outcome records. */
export function describe(error: unknown): string {
  if (error instanceof AggregateError) return error.errors.map(describe).join('; ');
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Compile-time exhaustiveness: a new kind of a union fails to compile where it is not handled. */
export function assertNever(value: never): never {
  throw new TypeError(`unhandled kind: ${JSON.stringify(value)}`);
}
