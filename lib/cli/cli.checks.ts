/**
 * The checks of `nestjs-payments doctor`, one function each: what a set-up is checked for, and the
 * fix printed when it fails. `cli.doctor.ts` runs them in order and prints the report.
 */
import {
  PAYMENTS_DEFAULTS,
  PaymentsApiError,
  PaymentsAuthenticationError,
  PaymentsClient,
  PaymentsConnectionError,
  webhookProbeUrl,
} from '../core/index.js';
import { PAYMENTS_ENV } from '../nest/payments.config.js';
import {
  CLI_STORE_ENV,
  describeProblem,
  problemVariable,
  QUIET_LOGGER,
  storeClientMissing,
  storeSources,
  type CliConfig,
} from './cli.config.js';
import { printable, safeUrl, type CliIo } from './cli.io.js';
import {
  CHECK_TIMEOUT_MS,
  fail,
  fetchFailure,
  isLoopback,
  ok,
  skip,
  withTimeout,
  type DoctorCheck,
  type DoctorCheckId,
} from './cli.report.js';

/** Problems of the variables that have a check of their own. */
const OWN_CHECK: Readonly<Record<string, DoctorCheckId>> = {
  [PAYMENTS_ENV.baseUrl]: 'baseUrl',
  [PAYMENTS_ENV.webhookPublicUrl]: 'webhookUrl',
  [PAYMENTS_ENV.webhookSecret]: 'secret',
};

function problemsOf(config: CliConfig, id: DoctorCheckId): string[] {
  return config.problems.filter((p) => OWN_CHECK[problemVariable(p) ?? ''] === id).map(describeProblem);
}

/**
 * The variables as the module validates them at start-up: any problem fails this check (the app
 * would not start), those with a check of their own named here and described on their own line.
 */
export function checkVariables(config: CliConfig, env: CliIo['env']): DoctorCheck {
  if (config.problems.length > 0) {
    const others = config.problems
      .filter((p) => OWN_CHECK[problemVariable(p) ?? ''] === undefined)
      .map(describeProblem);
    const own = [
      ...new Set(
        config.problems.map(problemVariable).filter((v): v is string => v !== undefined && OWN_CHECK[v] !== undefined),
      ),
    ];
    const parts = [...others, ...(own.length > 0 ? [`${own.join(', ')} invalid (see below)`] : [])];
    return fail(
      'variables',
      `the module would refuse to start: ${parts.join('; ')}`,
      'set each variable named as it says (docs/cli.md lists them); the app reads them the same way',
    );
  }
  const set = Object.values(PAYMENTS_ENV).filter((name) => env[name] !== undefined && env[name] !== '').length;
  return ok('variables', `${set} PAYMENTS_* variables read, as the module reads them`);
}

export async function checkBaseUrl(env: CliIo['env'], config: CliConfig): Promise<DoctorCheck> {
  const raw = env[PAYMENTS_ENV.baseUrl];
  if (!raw)
    return fail(
      'baseUrl',
      `${PAYMENTS_ENV.baseUrl} is not set`,
      `set ${PAYMENTS_ENV.baseUrl} to the service's address (the environment, sandbox or live, your keys were issued for)`,
    );
  const problems = problemsOf(config, 'baseUrl');
  if (problems.length > 0)
    return fail(
      'baseUrl',
      problems.join('; '),
      `set ${PAYMENTS_ENV.baseUrl} to an absolute https URL such as https://pay.example.com`,
    );
  const url = new URL(raw);
  if (url.protocol !== 'https:' && !isLoopback(url))
    return fail(
      'baseUrl',
      `${safeUrl(raw)} is plain HTTP`,
      'use the https:// address of the service: over HTTP the keys travel in clear (plain HTTP is for a sandbox on this machine only)',
    );
  try {
    const response = await fetch(url, {
      method: 'GET',
      redirect: 'manual',
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return ok(
      'baseUrl',
      `${safeUrl(raw)} answers (HTTP ${response.status})${url.protocol === 'http:' ? ', plain HTTP on loopback: a local sandbox' : ''}`,
    );
  } catch (error) {
    return fail(
      'baseUrl',
      `${safeUrl(raw)} does not answer (${fetchFailure(error, CHECK_TIMEOUT_MS)})`,
      `check ${PAYMENTS_ENV.baseUrl} (host, port, https), DNS, and that this machine may reach it (firewall, egress proxy); for a local sandbox, start it: npx nestjs-payments sandbox`,
    );
  }
}

export async function checkKeys(config: CliConfig, baseUrl: DoctorCheck): Promise<DoctorCheck> {
  if (!config.connection) {
    return fail(
      'keys',
      `not checked: ${config.connectionProblems.map(describeProblem).join('; ')}`,
      `set ${PAYMENTS_ENV.publicKey}, ${PAYMENTS_ENV.privateKey} and ${PAYMENTS_ENV.baseUrl}`,
    );
  }
  if (baseUrl.status !== 'ok')
    return fail('keys', 'not checked: the base URL does not answer', 'fix the base URL first');
  // One read of a payment that cannot exist: the keys are checked, nothing is created or spent.
  const client = new PaymentsClient({ ...config.connection, maxRetries: 0 });
  const madeUp = `doctor-check-${Date.now().toString(36)}`;
  const fixKeys = `check ${PAYMENTS_ENV.publicKey} and ${PAYMENTS_ENV.privateKey}, and that ${PAYMENTS_ENV.baseUrl} is the environment (sandbox or live) they were issued for`;
  try {
    await client.verifyPayment(madeUp);
    return ok('keys', 'accepted by the service (a read of a made-up payment id was answered)');
  } catch (error) {
    if (error instanceof PaymentsAuthenticationError)
      return fail('keys', `refused by the service (HTTP ${error.httpStatus})`, fixKeys);
    if (error instanceof PaymentsApiError && error.httpStatus === 404 && error.serviceMessage !== undefined)
      return ok('keys', 'accepted by the service (a made-up payment id was answered "not found", not 401/403)');
    if (error instanceof PaymentsApiError && error.httpStatus === 404)
      return fail(
        'keys',
        "not checked: the verify path answered 404 in a shape that is not the service's",
        `${PAYMENTS_ENV.baseUrl} must be the service's root address, without a path (the plugin adds /api/v2/...)`,
      );
    if (
      error instanceof PaymentsApiError &&
      error.serviceMessage !== undefined &&
      error.httpStatus < 500 &&
      error.httpStatus !== 429
    )
      return ok(
        'keys',
        `accepted by the service (a made-up payment id was answered HTTP ${error.httpStatus}, not 401/403)`,
      );
    if (error instanceof PaymentsApiError)
      return fail(
        'keys',
        `not checked: the service answered HTTP ${error.httpStatus} (${printable(error.code)})`,
        'the service may be down or rate-limiting: run doctor again in a minute',
      );
    if (error instanceof PaymentsConnectionError)
      return fail('keys', `not checked: ${printable(error.reason)}`, `check that ${PAYMENTS_ENV.baseUrl} answers`);
    return fail('keys', `not checked: ${printable(error instanceof Error ? error.message : error)}`, fixKeys);
  } finally {
    await client.close();
  }
}

export function checkWebhookUrl(env: CliIo['env'], config: CliConfig): DoctorCheck {
  const raw = env[PAYMENTS_ENV.webhookPublicUrl];
  const fix = `set ${PAYMENTS_ENV.webhookPublicUrl} to the absolute https URL at which the service reaches the app's webhook route, e.g. https://shop.example.com/payments/webhook (behind a proxy: the proxy's URL)`;
  if (!raw)
    return fail(
      'webhookUrl',
      `${PAYMENTS_ENV.webhookPublicUrl} is not set: payments are then confirmed only by the return page and reconciliation`,
      fix,
    );
  const problems = problemsOf(config, 'webhookUrl');
  if (problems.length > 0) return fail('webhookUrl', problems.join('; '), fix);
  const url = new URL(raw);
  if (url.protocol === 'https:') return ok('webhookUrl', `${safeUrl(raw)} is absolute HTTPS`);
  if (isLoopback(url))
    return ok('webhookUrl', `${safeUrl(raw)} is plain HTTP on loopback: only a local sandbox can deliver to it`);
  return fail('webhookUrl', `${safeUrl(raw)} is not HTTPS`, fix);
}

export function checkSecret(env: CliIo['env'], config: CliConfig): DoctorCheck {
  const secret = env[PAYMENTS_ENV.webhookSecret];
  const min = PAYMENTS_DEFAULTS.minSecretLength;
  const fix = `set ${PAYMENTS_ENV.webhookSecret} to at least ${min} random characters, the same in the app and here, e.g. the output of: node -e "console.log(require('node:crypto').randomBytes(32).toString('base64url'))"`;
  if (!secret) return fail('secret', `${PAYMENTS_ENV.webhookSecret} is not set: webhook URLs cannot be signed`, fix);
  // The secret's value and length are never printed.
  if (secret.length < min)
    return fail('secret', `${PAYMENTS_ENV.webhookSecret} is shorter than ${min} characters`, fix);
  const problems = problemsOf(config, 'secret');
  if (problems.length > 0) return fail('secret', problems.join('; '), fix);
  return ok('secret', `${PAYMENTS_ENV.webhookSecret} is set, at least ${min} characters`);
}

export async function checkProbe(
  env: CliIo['env'],
  webhookUrl: DoctorCheck,
  secret: DoctorCheck,
  probe: boolean,
): Promise<DoctorCheck> {
  if (!probe)
    return skip(
      'probe',
      'not sent (add --probe, with the app running, to check the public URL reaches its webhook route)',
    );
  if (webhookUrl.status !== 'ok' || secret.status !== 'ok')
    return fail('probe', 'not sent: the webhook URL or secret is not valid', 'fix the webhook URL and secret first');
  const publicUrl = env[PAYMENTS_ENV.webhookPublicUrl] as string;
  const where = safeUrl(publicUrl);
  const notRouted = `the request did not reach the plugin's route: check the proxy's rules, the app's global prefix and ${PAYMENTS_ENV.webhookPath}, and that ${PAYMENTS_ENV.webhookPublicUrl} is the public address of that route (prefix included)`;
  let response: Response;
  try {
    response = await fetch(webhookProbeUrl(publicUrl, env[PAYMENTS_ENV.webhookSecret] as string), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      redirect: 'manual',
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
  } catch (error) {
    return fail(
      'probe',
      `${where} does not answer (${fetchFailure(error, CHECK_TIMEOUT_MS)})`,
      `check that the app runs and that ${where} reaches it (DNS, proxy, TLS certificate)`,
    );
  }
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const isProbe = (body as { probe?: unknown } | undefined)?.probe === true;
  if (response.status === 200 && isProbe)
    return ok('probe', `a signed probe sent to ${where} reached the plugin's webhook route`);
  if (response.status >= 300 && response.status < 400)
    return fail(
      'probe',
      `${where} redirects (HTTP ${response.status})`,
      `the service does not follow redirects: set ${PAYMENTS_ENV.webhookPublicUrl} to the final URL (https, host, trailing slash)`,
    );
  if (response.status === 404)
    return fail('probe', `webhook URL not routed: ${where} answered HTTP 404 to a signed probe`, notRouted);
  if (response.status === 401)
    return fail(
      'probe',
      `a webhook route at ${where} refused the probe's signature (HTTP 401)`,
      `the app runs with another ${PAYMENTS_ENV.webhookSecret} than this one (or a nestjs-payments without probes): use the same secret in both`,
    );
  if (response.status === 200)
    return fail('probe', `${where} answered HTTP 200, but not as the plugin's webhook route`, notRouted);
  return fail('probe', `${where} answered HTTP ${response.status} to a signed probe`, notRouted);
}

/** The `store` check: each store the variables name answers (and has its tables). */
export async function checkStores(env: CliIo['env']): Promise<DoctorCheck[]> {
  const sources = storeSources(env, QUIET_LOGGER);
  if (sources.length === 0)
    return [
      skip(
        'store',
        `no ${CLI_STORE_ENV.redisUrl} or ${CLI_STORE_ENV.databaseUrl}: the app's store is not checked (the memory store needs no check)`,
      ),
    ];
  const checks: DoctorCheck[] = [];
  for (const source of sources) {
    let store;
    try {
      store = await source.open();
      const pending = await withTimeout(store.countPending(), CHECK_TIMEOUT_MS, `${source.kind}`);
      checks.push(
        ok('store', `${source.kind} at ${source.where} answers (${pending} payment(s) waiting for reconciliation)`),
      );
    } catch (error) {
      const missing = storeClientMissing(source, error);
      if (missing) {
        checks.push(
          fail(
            'store',
            `${source.kind} not checked: ${missing.packageName} is not installed (${source.variable} names a ${source.kind} store)`,
            `npm install ${missing.packageName}`,
          ),
        );
        continue;
      }
      const reason = printable(error instanceof Error ? error.message : error).slice(0, 200);
      const missingTables = source.kind === 'PostgreSQL' && /relation .* does not exist/i.test(reason);
      checks.push(
        fail(
          'store',
          `${source.kind} at ${source.where} does not answer (${reason})`,
          missingTables
            ? "the store's tables are missing: start the app once (the store creates them) or apply paymentsStoreMigration()"
            : `check that ${source.kind} runs and that ${source.variable} names the server the app uses (host, port, credentials)`,
        ),
      );
    } finally {
      await store?.close?.().catch(() => undefined);
    }
  }
  return checks;
}
