// Type-level tests of the API client: checked by `npm run typecheck` (tsc), not run.
import { expectTypeOf } from 'vitest';
import {
  createClient,
  createPostgresRateLimiter,
  type ApiClient,
  type ApiCustomer,
  type ApiInvoice,
  type ListPage,
  type RateLimiter,
  type WebhookEventRecord,
} from '../../src/client/index.js';
import { createPayhooks } from '../../src/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';

const client = createClient({ apiKey: 'sk_test_x', environment: 'staging', baseUrl: 'http://127.0.0.1:1' });
expectTypeOf(client).toEqualTypeOf<ApiClient>();

async function outputs(): Promise<void> {
  const invoice = await client.invoices.get('inv_1');
  expectTypeOf(invoice).toEqualTypeOf<ApiInvoice>();
  expectTypeOf(invoice.amount).toEqualTypeOf<number>();
  expectTypeOf(invoice.currency).toEqualTypeOf<string>();
  expectTypeOf(invoice.isPaid).toEqualTypeOf<boolean | null | undefined>();
  expectTypeOf(invoice.items[0]!.quantity).toEqualTypeOf<number>();
  // @ts-expect-error unknown fields are kept at run time but not typed
  void invoice.refund;

  expectTypeOf((await client.customers.create({ username: 'ada' })).username).toEqualTypeOf<string>();
  expectTypeOf(await client.customers.list({ take: 10 })).toEqualTypeOf<ListPage<ApiCustomer>>();
  expectTypeOf((await client.invoices.list()).data).toEqualTypeOf<ApiInvoice[]>();
  for await (const item of client.invoices.iterate()) expectTypeOf(item).toEqualTypeOf<ApiInvoice>();
  for await (const item of client.webhookEvents.iterate({ status: 'failed' })) expectTypeOf(item).toEqualTypeOf<WebhookEventRecord>();

  const requested = await client.invoices.requestPayment('inv_1', { paymentType: 'CASH' });
  expectTypeOf(requested.payment.id).toEqualTypeOf<string>();
  expectTypeOf(
    (await client.sandbox.completePayment(requested.payment.id, { outcome: 'SUCCEEDED' })).payment.amount,
  ).toEqualTypeOf<number>();
  expectTypeOf((await client.invoices.markPaid('inv_1')).payment.type).toEqualTypeOf<string | null | undefined>();
  expectTypeOf((await client.payments.get('pay_1')).invoiceId).toEqualTypeOf<string | null | undefined>();
  expectTypeOf(
    (await client.webhooks.create({ url: 'https://x.test/h', description: '', enabledEvents: ['INVOICE_PAID'] })).enabledEvents,
  ).toEqualTypeOf<string[]>();
  expectTypeOf((await client.webhooks.getSecret('wh_1')).secret).toEqualTypeOf<string>();
  expectTypeOf((await client.webhooks.rotateSecret('wh_1')).previousSecretExpiresAt).toEqualTypeOf<string | null | undefined>();
  expectTypeOf((await client.webhookEvents.retry('whe_1')).attempts[0]!.responseStatus).toEqualTypeOf<number | null | undefined>();
  expectTypeOf((await client.customerPortal.createSession({ destination: 'home', customerId: 'c' })).url).toEqualTypeOf<string>();
  expectTypeOf((await client.authLinks.create({ customerId: 'c' })).url).toEqualTypeOf<string>();
}
void outputs;

async function inputs(): Promise<void> {
  // @ts-expect-error only CASH or TRANSFER
  await client.invoices.requestPayment('inv_1', { paymentType: 'CARD' });
  // @ts-expect-error paymentType is required
  await client.invoices.requestPayment('inv_1', {});
  // @ts-expect-error username is required
  await client.customers.create({ email: 'a@example.com' });
  // @ts-expect-error not a field of the input
  await client.customers.create({ username: 'ada', nickname: 'A' });
  await client.invoices.create({
    customerId: 'c',
    dueDate: 'd',
    // @ts-expect-error amount is a number
    items: [{ quantity: 1, concept: { displayName: 'x', amount: '1', currency: 'MXN' } }],
  });
  // @ts-expect-error not an event type
  await client.webhooks.create({ url: 'https://x.test/h', description: '', enabledEvents: ['INVOICE_EXPLODED'] });
  // @ts-expect-error the only outcome is SUCCEEDED
  await client.sandbox.completePayment('pay_1', { outcome: 'FAILED' });
  // @ts-expect-error take is a number
  await client.invoices.list({ take: '100' });
  // @ts-expect-error iterate chooses the page size itself
  client.invoices.iterate({ take: 10 });
  // @ts-expect-error an id is a string
  await client.invoices.get(42);
  await client.customerPortal.createSession({ destination: 'billing', customerId: 'c' });
  await client.customers.create({ username: 'ada' }, { idempotencyKey: 'evt_1:customer', timeoutMs: 5000, signal: AbortSignal.timeout(1) });
  await client.customers.create({ username: 'ada' }, { idempotencyKey: false });
  // @ts-expect-error an idempotency key is a string, or false
  await client.customers.create({ username: 'ada' }, { idempotencyKey: true });
}
void inputs;

// @ts-expect-error environment is a name or a URL string
createClient({ apiKey: 'sk_test_x', environment: 1 });
// @ts-expect-error apiKey is required
createClient({ environment: 'staging' });
// @ts-expect-error unknown path group
createClient({ apiKey: 'sk_test_x', paths: { invoice: '/v1/x' } });
createClient({ apiKey: 'sk_test_x', paths: { payments: '/v1/payment-records' }, rateLimit: { requestsPerMinute: 500 } });

// The store's limiter fits the client's RateLimiter without the store importing the client.
declare const store: PayhooksDatabase;
expectTypeOf(createPostgresRateLimiter(store)).toExtend<RateLimiter>();
createClient({ apiKey: 'sk_test_x', rateLimit: createPostgresRateLimiter(store, { requestsPerWindow: 500 }) });

// Handlers see the client's type through ctx.api.
const hooks = createPayhooks({ secret: 's', api: client });
hooks.on('INVOICE_PAID', async (event, ctx) => {
  const current = await ctx.api?.invoices.get(event.data.invoiceId);
  expectTypeOf(current).toEqualTypeOf<ApiInvoice | undefined>();
});
