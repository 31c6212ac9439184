// Type-level tests: checked by `npm run typecheck` (tsc), not run.
import { expectTypeOf } from 'vitest';
import type { EventMap, EventType, WebhookEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';

expectTypeOf<EventMap['INVOICE_PAID']['invoiceId']>().toEqualTypeOf<string>();
expectTypeOf<EventMap['INVOICE_PAID']['invoice']['amount']>().toEqualTypeOf<number>();
expectTypeOf<EventMap['CUSTOMER_CREATED']['email']>().toEqualTypeOf<string | null | undefined>();
expectTypeOf<NonNullable<EventMap['PAYMENT_COMPLETED']['paymentAttempt']>['attemptNumber']>().toEqualTypeOf<number>();
expectTypeOf<EventMap['INVOICE_PAID']['meta']>().toEqualTypeOf<Record<string, string> | null | undefined>();

declare const event: WebhookEvent;
if (event.eventType === 'PAYMENT_REFUNDED') {
  expectTypeOf(event.data.refund.amount).toEqualTypeOf<number>();
  // @ts-expect-error a refund event has no invoiceId
  void event.data.invoiceId;
}

declare function on<K extends EventType>(type: K, fn: (e: WebhookEvent<K>) => void): void;
on('INVOICE_PAID', (e) => {
  expectTypeOf(e.data.invoice.currency).toEqualTypeOf<string>();
  expectTypeOf(e.eventType).toEqualTypeOf<'INVOICE_PAID'>();
  // @ts-expect-error an INVOICE_PAID event has no refund
  void e.data.refund;
});

const hooks = createPayhooks({ secret: 's' });
hooks.on('DISPUTE_CREATED', (e, ctx) => {
  expectTypeOf(e.data.dispute.status).toEqualTypeOf<string>();
  expectTypeOf(ctx.attempt).toEqualTypeOf<number>();
});
hooks.on(['SUBSCRIPTION_CREATED', 'SUBSCRIPTION_CANCELED'], (e) => {
  expectTypeOf(e.data.subscription.isActive).toEqualTypeOf<boolean>();
  expectTypeOf(e.eventType).toEqualTypeOf<'SUBSCRIPTION_CREATED' | 'SUBSCRIPTION_CANCELED'>();
});
// @ts-expect-error not an event type
hooks.on('INVOICE_EXPLODED', () => undefined);
