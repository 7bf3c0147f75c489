/**
 * The webhook span in a Nest app, where the guard (authentication, which starts the span) and the
 * controller (deliver(), which ends it) are apart: whatever the host puts between them may answer
 * instead (an interceptor or pipe throwing). The span still ends, with the status sent, and
 * nothing is settled or verified; a delivery that reaches the controller is one span as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  ImATeapotException,
  Injectable,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { loadTelemetryApi } from '../../lib/core/telemetry/telemetry.loader.js';
import { PaymentsModule, PaymentsService } from '../../lib/index.js';
import { FakeService } from '../support/fake-service.js';
import { ADAPTERS, answerVerify, generateThrough, startNestApp, verifyCalls } from '../support/nest-app.js';
import { startSdk, type TestSdk } from './otel-sdk.js';

const SECRET = 'nest-span-webhook-secret-0123456789abcdef';

/** Refuses deliveries flagged by a header, after the plugin's guard let them through. */
@Injectable()
class RefuseFlagged implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (request.headers['x-refuse'] === 'yes') throw new ImATeapotException();
    return next.handle();
  }
}

let sdk: TestSdk;
let fake: FakeService;

beforeAll(async () => {
  expect(await loadTelemetryApi()).toBe(true);
  sdk = startSdk();
  fake = await FakeService.start();
});

afterAll(async () => {
  await fake.close();
  await sdk.shutdown();
});

describe.each(ADAPTERS)('webhook span on Nest-%s', (adapter) => {
  it('ends with the status the host sent when a host interceptor answers before deliver(), and settles nothing', async () => {
    const running = await startNestApp(adapter, {
      imports: [
        PaymentsModule.forRoot({
          publicKey: 'pk_span',
          privateKey: 'sk_span_private',
          successLink: 'https://shop.example/ok',
          failLink: 'https://shop.example/ko',
          baseUrl: fake.url,
          reconciliation: { enabled: false },
          webhook: {
            publicUrl: 'https://shop.example/payments/webhook',
            secret: SECRET,
            decorators: [UseInterceptors(RefuseFlagged)],
          },
        }),
      ],
    });
    const id = `pay_span_${adapter}`;
    try {
      const post = (url: string, refuse: boolean) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-refuse': refuse ? 'yes' : 'no' },
          body: JSON.stringify({ payment_id: id }),
        });
      const { webhook } = await generateThrough(fake, id, () =>
        running.app.get(PaymentsService).generatePayment({ amount: '12500' }),
      );
      answerVerify(fake, id, { status: 'FAILURE' });
      sdk.spans.reset();

      expect((await post(`${running.url}${webhook.pathname}`, true)).status).toBe(418);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the response's close event
      const [refused] = sdk.finished().filter((s) => s.name === 'payments webhook');
      expect(refused?.attributes).toMatchObject({
        'http.response.status_code': 418,
        'payments.webhook.result': 'not-delivered',
      });
      expect(refused.attributes['payments.settle.result']).toBeUndefined();
      expect(verifyCalls(fake, id)).toBe(0);

      // The same delivery let through: delivered, one span ended by deliver() (the close is a no-op).
      sdk.spans.reset();
      expect((await post(`${running.url}${webhook.pathname}`, false)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const delivered = sdk.finished().filter((s) => s.name === 'payments webhook');
      expect(
        delivered.map((s) => [s.attributes['http.response.status_code'], s.attributes['payments.webhook.result']]),
      ).toEqual([[200, 'handled']]);
      expect(verifyCalls(fake, id)).toBe(1);
    } finally {
      await running.close();
    }
  });
});
