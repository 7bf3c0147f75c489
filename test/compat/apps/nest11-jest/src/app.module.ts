import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { PaymentsModule } from 'nestjs-payments';
import { PaymentsHealthIndicator } from 'nestjs-payments/terminus';
import { HealthController } from './health.controller';
import { Orders } from './orders.service';
import { paymentsOptionsFromEnv } from './payments.options';

@Module({
  imports: [TerminusModule, PaymentsModule.forRootAsync({ useFactory: paymentsOptionsFromEnv })],
  controllers: [HealthController],
  providers: [Orders, PaymentsHealthIndicator],
})
export class AppModule {}
