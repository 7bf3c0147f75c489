import { Module } from '@nestjs/common';
import { PaymentsModule } from 'nestjs-payments';
import { Orders } from './orders.service.js';
import { paymentsOptionsFromEnv } from './payments.options.js';

@Module({
  imports: [PaymentsModule.forRootAsync({ useFactory: paymentsOptionsFromEnv })],
  providers: [Orders],
})
export class AppModule {}
