import type { ModuleRef } from '@nestjs/core';
import { PaymentsValidationError } from '../core/api/index.js';
import { PAYMENTS_DEFAULTS } from '../core/client/index.js';
import type { PaymentsModuleOptions, PaymentsWebhookRouteOptions } from './payments.module-options.js';

/** What a registration fixed about its webhook route when it was defined (`forRoot` / `forRootAsync`). */
export interface StaticWebhookRoute {
  /** The path, when known at definition; undefined: the factory's, resolved per app at start-up. */
  path?: string;
  /** The host's decorators for the controller. */
  decorators: ReadonlyArray<ClassDecorator | MethodDecorator>;
}

/** A registration's webhook route, resolved at start-up from its options. */
export interface RegistrationRoute {
  /** The registration's name; undefined for the default registration. */
  readonly name?: string;
  /** The route path, without leading or trailing slash (as the core resolves `webhook.path`). */
  readonly path: string;
  /** The registration's `webhook.publicUrl`, to compare with the route it is served at. */
  readonly publicUrl?: string;
}

/** What `forRootAsync({ webhook })` or `forRoot(options)` fix about the route. */
export function staticWebhookRoute(
  route: PaymentsWebhookRouteOptions | undefined,
  pathRequired: boolean,
): StaticWebhookRoute {
  const path = route?.path ?? (pathRequired ? PAYMENTS_DEFAULTS.webhookPath : undefined);
  return { path, decorators: route?.decorators ?? [] };
}

// The core trims the slashes of webhook.path the same way (payments.options.ts); Nest routes
// `/a/` and `a` alike, so this only matters for comparing paths.
function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

/**
 * The route a registration serves, from its options at start-up, checked against what was fixed
 * at definition: a factory may repeat the static path and decorators but not change them (Nest
 * has already read them).
 * @throws PaymentsValidationError naming `webhook.path` or `webhook.decorators`
 */
export function resolveWebhookRoute(
  options: PaymentsModuleOptions | undefined,
  name: string | undefined,
  fixed: StaticWebhookRoute,
): RegistrationRoute {
  const given = options?.webhook?.path;
  const problems = [];
  if (fixed.path !== undefined && typeof given === 'string' && trimSlashes(given) !== trimSlashes(fixed.path)) {
    problems.push({
      field: 'webhook.path',
      messages: [
        `is '${trimSlashes(given)}' but the route was defined as '${trimSlashes(fixed.path)}': ` +
          'give forRootAsync() the path beside useFactory ({ webhook: { path } }), or leave it out of one of them',
      ],
    });
  }
  const decorators = options?.webhook?.decorators ?? [];
  if (
    decorators.length > 0 &&
    (decorators.length !== fixed.decorators.length || decorators.some((d, i) => d !== fixed.decorators[i]))
  ) {
    problems.push({
      field: 'webhook.decorators',
      messages: [
        'must be given to forRootAsync() beside useFactory ({ webhook: { decorators } }): Nest reads them before the factory runs',
      ],
    });
  }
  if (problems.length > 0) throw new PaymentsValidationError(problems, 'payments options');
  const path = fixed.path ?? (typeof given === 'string' ? given : PAYMENTS_DEFAULTS.webhookPath);
  const publicUrl = options?.webhook?.publicUrl;
  return { name, path: trimSlashes(path), publicUrl: typeof publicUrl === 'string' ? publicUrl : undefined };
}

/** Whether `path` is `base` plus one segment: what `base`'s token route matches. */
function oneSegmentBelow(path: string, base: string): boolean {
  return path.startsWith(`${base}/`) && !path.slice(base.length + 1).includes('/');
}

/**
 * How a registration is named in messages: its name, and the modules that import it when known
 * (two unnamed registrations are told apart by where they are).
 */
export function registrationLabel(route: RegistrationRoute, importers: readonly string[] = []): string {
  const who = route.name === undefined ? 'the default registration' : `registration '${route.name}'`;
  return importers.length === 0 ? who : `${who} (imported by ${importers.join(', ')})`;
}

/**
 * Refuses two registrations of one app whose webhook routes overlap (the caller leaves out pairs
 * where neither serves webhooks): the same path, or one path
 * being the other's plus one segment (its `:token` route would take the other's deliveries).
 * Either way one registration's webhooks would reach the other's guard and all be refused (401).
 * @throws PaymentsValidationError naming both registrations
 */
export function refuseSharedRoutes(
  route: RegistrationRoute,
  others: Iterable<RegistrationRoute>,
  importersOf: (route: RegistrationRoute) => readonly string[] = () => [],
): void {
  for (const other of others) {
    if (other === route) continue;
    if (
      other.path === route.path ||
      oneSegmentBelow(route.path, other.path) ||
      oneSegmentBelow(other.path, route.path)
    ) {
      const suggestion = route.name === undefined ? other : route;
      throw new PaymentsValidationError(
        [
          {
            field: 'webhook.path',
            messages: [
              `'${route.path}' of ${registrationLabel(route, importersOf(route))} overlaps '${other.path}' of ${registrationLabel(other, importersOf(other))}: ` +
                `give each registration its own webhook.path (e.g. 'payments/${suggestion.name ?? 'default'}/webhook')`,
            ],
          },
        ],
        'payments options',
      );
    }
  }
}

/** The part of Nest's ApplicationConfig read here (the same in Nest 11 and 12). */
interface GlobalPrefixConfig {
  getGlobalPrefix?(): string;
  getGlobalPrefixOptions?(): { exclude?: Array<{ pathRegex?: RegExp }> };
}

/** The part of a Nest module (in `ModulesContainer`) read here. */
export interface ScannedModuleShape {
  providers: Map<unknown, { instance: unknown }>;
  imports?: Set<unknown>;
  metatype?: { name?: string };
}

/**
 * The path a registration's webhook route is served at: the app's global prefix (unless the
 * route is excluded from it) and the route's path. Nest does not make its application config
 * injectable: it is read from the container behind `ModuleRef`, where both Nest 11 and 12 keep
 * it; without it, the path alone. RouterModule prefixes and URI versioning are not added.
 */
export function servedWebhookPath(moduleRef: ModuleRef | undefined, route: RegistrationRoute): string {
  const config = (moduleRef as unknown as { container?: { applicationConfig?: GlobalPrefixConfig } } | undefined)
    ?.container?.applicationConfig;
  const prefix = (config?.getGlobalPrefix?.() ?? '').replace(/^\/+|\/+$/g, '');
  const own = `/${route.path}`;
  if (prefix === '') return own;
  const excluded = (config?.getGlobalPrefixOptions?.().exclude ?? []).some(
    (e) => e.pathRegex instanceof RegExp && e.pathRegex.test(own),
  );
  return excluded ? own : `/${prefix}${own}`;
}

/** The names of the modules that import `module` (where a registration was written). */
export function importersOf(modules: Iterable<ScannedModuleShape>, module: ScannedModuleShape): string[] {
  const names: string[] = [];
  for (const m of modules) {
    if (m !== module && m.imports?.has(module) && m.metatype?.name) names.push(m.metatype.name);
  }
  return names;
}
