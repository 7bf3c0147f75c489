/**
 * Finding the optional peer `@opentelemetry/api`. Nothing imports it at load time: a
 * {@link TelemetryApiLoader} looks for it on first use, in the published CommonJS build with a
 * synchronous `require` inside a try/catch (so spans start with the very first call), elsewhere
 * (the ES-module sources under a test runner, `tsx`) with a dynamic `import()`.
 *
 * What was found is kept by the loader, not by this module: each telemetry instance (and the
 * health indicator) owns one, so nothing here is shared state between clients or tests. The
 * module system's own cache makes a second look cheap.
 */
import { otelApiOf } from './telemetry.api.js';
import { HEALTH_PROBE_KEY } from './telemetry.names.js';

/**
 * The `@opentelemetry/api` module, untyped here: the declarations the entry points reach must
 * not name the optional peer, or a project without it fails to type-check (skipLibCheck off).
 * `otelApiOf` (telemetry.api.ts) types it for the code that uses it.
 */
export type LoadedTelemetryApi = object;

/** Looks for `@opentelemetry/api` once and keeps the answer. One per telemetry instance. */
export class TelemetryApiLoader {
  /** undefined: not found yet (or an import under way); null: not installed (or failed to load). */
  #api: LoadedTelemetryApi | null | undefined;
  #loading?: Promise<boolean>;

  /**
   * The API if it was found, null if it is missing, undefined while an ES-module import is under
   * way (the first call starts it).
   */
  get(): LoadedTelemetryApi | null | undefined {
    if (this.#api !== undefined) return this.#api;
    if (typeof require === 'function') {
      try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer, loaded lazily and synchronously in the CommonJS build
        this.#api = require('@opentelemetry/api') as LoadedTelemetryApi;
      } catch {
        this.#api = null;
      }
      return this.#api;
    }
    void this.load();
    return undefined;
  }

  /** Resolves once the API has been looked for: true when it is installed. */
  load(): Promise<boolean> {
    if (this.#api !== undefined || typeof require === 'function') return Promise.resolve(Boolean(this.get()));
    this.#loading ??= import('@opentelemetry/api').then(
      (m: unknown) => {
        // A CommonJS module imported from ES modules may come as its `default` export.
        const mod = m as { trace?: unknown; default?: LoadedTelemetryApi };
        this.#api = mod.trace ? mod : (mod.default ?? null);
        return this.#api !== null;
      },
      () => {
        this.#api = null;
        return false;
      },
    );
    return this.#loading;
  }
}

/**
 * Resolves once the optional `@opentelemetry/api` has been looked for: true when it is installed.
 * The CommonJS build finds it synchronously. Under an ES-module loader (tests, `tsx`) each client
 * looks for it itself, asynchronously from its construction: await this before building the
 * client (it loads the module, so the client's own look settles within a few microtasks), or
 * await the client's telemetry `ready()`; a call made in the same tick as the client's
 * construction is not traced.
 */
export function loadTelemetryApi(): Promise<boolean> {
  return new TelemetryApiLoader().load();
}

/**
 * Runs `work` as a health probe: its calls to the service are recorded like any other, with
 * `payments.probe=true` on their span and call metric, so that the probe's expected refusals
 * (`INVALID_CLIENT_ID`) can be told from real failures. The mark is {@link HEALTH_PROBE_KEY} in the
 * OpenTelemetry context, which the core's call hook reads (a context manager is needed, as every
 * Node SDK setup registers one); without `@opentelemetry/api` the work runs unmarked.
 * @param work the probe's calls
 * @param loader finds `@opentelemetry/api` (the health indicator's own)
 */
export async function asHealthProbe<T>(work: () => Promise<T>, loader: TelemetryApiLoader): Promise<T> {
  // Waiting for the look costs nothing after the first probe, and marks even the first one under an ES-module loader.
  if (!(await loader.load())) return work();
  const api = otelApiOf(loader.get())!;
  return api.context.with(api.context.active().setValue(HEALTH_PROBE_KEY, true), work);
}
