/**
 * The desk in a real browser (Debian's chromium, JavaScript off), mounted in Express (Nest:
 * desk.nest-browser.e2e-spec.ts; both run desk-browser.ts), two instances on one Redis store
 * behind a round-robin balancer: the pages render under their Content-Security-Policy with their
 * stylesheet and no violation, every kind of payment shows its whole timeline, search finds a
 * payment, and a double click on "run again", on "refund" and on "mark reviewed", its two posts
 * reaching the two instances, acts once each. Every page it shows passes axe-core with no serious
 * or critical violation.
 *
 * With DESK_SCREENSHOTS=1 it also writes the pictures of docs/desk.md to docs/desk/ (1200 pixels
 * wide, cut to each page's content, in 256 colours): `DESK_SCREENSHOTS=1 CI=true node --experimental-vm-modules
 * node_modules/jest/bin/jest.js test/desk/desk.browser.e2e-spec.ts`.
 */
import { jest } from '@jest/globals';
import { browserSuite } from './desk-browser.js';

jest.setTimeout(180_000);
browserSuite('express');
