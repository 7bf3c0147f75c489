import type { ModuleRef } from '@nestjs/core';
import type { RegistrationRoute } from './webhook.route.js';

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
