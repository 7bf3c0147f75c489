// The package's main entry (`nestjs-payments`): the framework-free core and the Nest module.
// Subpaths: `nestjs-payments/express`, `nestjs-payments/redis`, `nestjs-payments/testing`.
import 'reflect-metadata';
export * from './core/index.js';
export * from './nest/index.js';
