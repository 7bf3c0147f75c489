// The desk in a real browser, mounted by PaymentsDeskModule in a Nest app on the Express and the
// Fastify adapter: its CSP and stylesheet, and each action once on a double click (the pages
// themselves are searched and audited page by page on Express: desk.browser.e2e-spec.ts).
import { jest } from '@jest/globals';
import { browserSuite } from './desk-browser.js';

jest.setTimeout(180_000);
browserSuite('nest-express');
browserSuite('nest-fastify');
