import { NestFactory } from '@nestjs/core';
import { PaymentsService } from 'nestjs-payments';
import { InboxPaymentsModule } from '../recipes/inbox-nest.js';
import type { FrontEnd } from './recipe-run.js';

// The Nest front end of the recipes' runs: a Nest app (Express adapter) made of docs/exactly-once.md's
// InboxPaymentsModule, word for word (recipes/inbox-nest.ts), as its reader pastes it. Nest 12 in
// the repository's suite, Nest 11 in the compatibility app.

/** A Nest app of `InboxPaymentsModule.forRoot(() => inbox, handler, options)`. */
export const nestFrontEnd: FrontEnd = async (inbox, handler, options) => {
  const app = await NestFactory.create(
    InboxPaymentsModule.forRoot(() => inbox, handler, options),
    // Start-up errors are thrown here rather than ending the process.
    { logger: false, abortOnError: false },
  );
  await app.init();
  return {
    listener: app.getHttpAdapter().getInstance(),
    generatePayment: (input) => app.get(PaymentsService).generatePayment(input),
    close: () => app.close(),
  };
};
