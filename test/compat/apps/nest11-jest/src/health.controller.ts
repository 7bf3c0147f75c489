import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { PaymentsHealthIndicator } from 'nestjs-payments/terminus';

// The plugin's health indicator in a Terminus 11 app: the store, and the service reached through
// one cheap, cached read (never verify_payment).
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly payments: PaymentsHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.payments.isHealthy('payments', { checkService: true })]);
  }
}
