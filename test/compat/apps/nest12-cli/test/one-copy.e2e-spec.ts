// Not generated, not a recipe: this app's own check that a Vitest test and a CommonJS dependency
// of the app share one copy of the package (Nest's injection tokens), for every entry point.
import { createRequire } from 'node:module';
import { PaymentsModule, PaymentsService } from 'nestjs-payments';
import { createPaymentsClient } from 'nestjs-payments/express';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe('one copy of nestjs-payments', () => {
  it('gives require() the very classes import gave', () => {
    expect(require('nestjs-payments').PaymentsService).toBe(PaymentsService);
    expect(require('nestjs-payments').PaymentsModule).toBe(PaymentsModule);
    expect(require('nestjs-payments/express').createPaymentsClient).toBe(createPaymentsClient);
    expect(require('nestjs-payments/testing').PaymentsSandbox).toBe(PaymentsSandbox);
    expect(require('@nestjs/core/package.json').version).toMatch(/^12\./);
  });
});
