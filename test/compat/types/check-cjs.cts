// The same package from a CommonJS TypeScript file (`.cts`), under node16 and nodenext: the
// `require` condition of every entry point leads to CommonJS types. Type-checked, never run.
import { PaymentsModule, PaymentsService, toMillimes } from 'nestjs-payments';
import { createPaymentsDesk, PaymentsDeskModule } from 'nestjs-payments/desk';
import { createPaymentsClient } from 'nestjs-payments/express';
import { RedisPaymentsStore } from 'nestjs-payments/redis';
import { PaymentsHealthIndicator } from 'nestjs-payments/terminus';
import { PaymentsSandbox } from 'nestjs-payments/testing';

export const forRoot = PaymentsModule.forRoot({ publicKey: 'pk', privateKey: 'sk', baseUrl: 'http://127.0.0.1:1' });
export const amount: string = toMillimes('1');
export type Service = PaymentsService;
export const factories = [
  createPaymentsClient,
  RedisPaymentsStore,
  PaymentsSandbox.start,
  createPaymentsDesk,
  PaymentsDeskModule.forRoot,
] as const;
export type Health = PaymentsHealthIndicator['isHealthy'];
// @ts-expect-error toMillimes returns a digit string, not a number
export const wrong: number = toMillimes('1');
