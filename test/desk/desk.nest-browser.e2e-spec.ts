// The desk in a real browser, mounted by PaymentsDeskModule in a Nest app on the Express and the
// Fastify adapter, two instances of it on one Redis store behind a balancer: the checks of
// desk.browser.e2e-spec.ts (desk-browser.ts), every page audited by axe-core; the pictures are
// taken on Express only.
import { jest } from '@jest/globals';
import { browserSuite } from './desk-browser.js';

jest.setTimeout(180_000);
browserSuite('nest-express');
browserSuite('nest-fastify');
