import { Module } from '@nestjs/common';
import { PaymentsModule } from 'nestjs-payments';
import { Orders } from './orders.service';
import { paymentsOptionsFromEnv } from './payments.options';

@Module({
  imports: [PaymentsModule.forRootAsync({ useFactory: paymentsOptionsFromEnv })],
  providers: [Orders],
})
export class AppModule {}
