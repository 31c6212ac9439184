import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  apiCustomerSchema,
  apiErrorBodySchema,
  apiInvoiceSchema,
  apiPaymentSchema,
  completePaymentResponseSchema,
  listPageSchema,
  markPaidResponseSchema,
  requestPaymentResponseSchema,
  rotatedWebhookSecretSchema,
  signInUrlSchema,
  webhookEndpointSchema,
  webhookEventRecordSchema,
  webhookSecretSchema,
} from '../../src/events/rest-contract.js';
import { sandboxAdvanceSchema, sandboxClockSchema } from '../../src/simulator/clock-routes.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import {
  sandboxCycleResponseSchema,
  sandboxDisputeSchema,
  sandboxEventSchema,
  sandboxRefundResponseSchema,
  sandboxPaymentMethodSchema,
  sandboxSubscriptionSchema,
} from '../../src/simulator/sandbox-contract.js';
import { errorMessage } from '../helpers/error-body.js';
import { api, recordingReceiver, type ApiAnswer } from './api.js';

const DUE = '2026-12-01T06:00:00.000Z';
const item = (amount: number, currency = 'MXN', quantity = 1) => ({ quantity, concept: { displayName: 'Tuition', amount, currency } });

let simulator: Simulator;
let client: ReturnType<typeof api>;
let counter = 0;
const unique = (prefix: string) => `${prefix}${++counter}`;

beforeAll(async () => {
  simulator = await startSimulator();
  client = api(simulator.url);
});
afterAll(() => simulator.close());

async function newCustomer(): Promise<{ id: string }> {
  const answer = await client.post('/v1/customers', { username: unique('user-') });
  expect(answer.status).toBe(200);
  return answer.body as { id: string };
}

async function newInvoice(amount = 250_000): Promise<{ id: string; amount: number; isPaid: boolean }> {
  const customer = await newCustomer();
  const answer = await client.post('/v1/invoices', { customerId: customer.id, dueDate: DUE, items: [item(amount)] });
  expect(answer.status).toBe(200);
  return answer.body as { id: string; amount: number; isPaid: boolean };
}

async function pendingPayment(paymentType: 'CASH' | 'TRANSFER' = 'CASH'): Promise<{ id: string; invoiceId: string }> {
  const invoice = await newInvoice();
  const answer = await client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType });
  expect(answer.status).toBe(200);
  return (answer.body as { payment: { id: string; invoiceId: string } }).payment;
}

function typesOf(invoiceOrPaymentId: string): string[] {
  return simulator
    .events()
    .filter((event) => JSON.stringify(event.data).includes(invoiceOrPaymentId))
    .map((event) => event.eventType);
}

describe('API keys', () => {
  it.each([
    ['no Authorization header', null],
    ['a key without the sk_ prefix', 'pk_test_123'],
    ['an sk_ key of no environment', 'sk_other_123'],
    ['sk_test_ with nothing after it', 'sk_test_'],
  ])('401 for %s', async (_name, key) => {
    const answer = await api(simulator.url, key).get('/v1/customers');
    expect(answer.status).toBe(401);
    expect(errorMessage(answer.body)).toMatch(/API key/);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('accepts sk_test_ (staging) and sk_live_ (production) keys', async () => {
    expect((await api(simulator.url, 'sk_test_abc').get('/v1/customers')).status).toBe(200);
    expect((await api(simulator.url, 'sk_live_abc').get('/v1/customers')).status).toBe(200);
  });
});

describe('request bodies', () => {
  it('400 for a body that is not JSON', async () => {
    const answer = await client.call('POST', '/v1/customers', { body: '{"input": ' });
    expect(answer.status).toBe(400);
    expect(errorMessage(answer.body)).toMatch(/not valid JSON/);
  });

  it('400 for fields not wrapped in input', async () => {
    const answer = await client.call('POST', '/v1/customers', { body: JSON.stringify({ username: 'bare' }) });
    expect(answer.status).toBe(400);
    expect(errorMessage(answer.body)).toMatch(/"input"/);
  });

  it('400 naming every failing path of the input', async () => {
    const answer = await client.post('/v1/customers', { username: 'x', email: 'not-an-email', phoneNumber: '5512345678' });
    expect(answer.status).toBe(400);
    expect(errorMessage(answer.body)).toMatch(/input\.email/);
    expect(errorMessage(answer.body)).toMatch(/input\.phoneNumber/);
  });

  it('400 for invoice items in two currencies, 404 for an unknown customer', async () => {
    const customer = await newCustomer();
    const mixed = await client.post('/v1/invoices', { customerId: customer.id, dueDate: DUE, items: [item(100, 'MXN'), item(100, 'USD')] });
    expect(mixed.status).toBe(400);
    expect(errorMessage(mixed.body)).toMatch(/one currency/);
    const unknown = await client.post('/v1/invoices', { customerId: 'cus_missing', dueDate: DUE, items: [item(100)] });
    expect(unknown.status).toBe(404);
  });

  it('400 for a webhook URL that is plain http to another host; http on localhost is fine', async () => {
    const remote = await client.post('/v1/webhooks', {
      url: 'http://example.com/hooks',
      description: 'x',
      enabledEvents: ['INVOICE_PAID'],
    });
    expect(remote.status).toBe(400);
    expect(errorMessage(remote.body)).toMatch(/https/);
    const notUrl = await client.post('/v1/webhooks', { url: 'not a url', description: 'x', enabledEvents: ['INVOICE_PAID'] });
    expect(notUrl.status).toBe(400);
    expect(errorMessage(notUrl.body)).toMatch(/input\.url/);
    const local = await client.post('/v1/webhooks', { url: 'http://localhost:1/hooks', description: 'x', enabledEvents: ['INVOICE_PAID'] });
    expect(local.status).toBe(200);
  });
});

describe('customers', () => {
  it.each([
    ['username', { username: 'taken-name' }, { username: 'taken-name', email: 'other1@example.com' }],
    ['email', { username: 'e1', email: 'same@example.com' }, { username: 'e2', email: 'SAME@example.com' }],
    ['phone number', { username: 'p1', phoneNumber: '+525500000099' }, { username: 'p2', phoneNumber: '+525500000099' }],
  ])('409 for a repeated %s, naming it', async (field, first, second) => {
    expect((await client.post('/v1/customers', first)).status).toBe(200);
    const answer = await client.post('/v1/customers', second);
    expect(answer.status).toBe(409);
    expect(errorMessage(answer.body)).toContain(field);
  });
});

describe('paging', () => {
  it.each([
    ['take=101', /take/],
    ['take=0', /take/],
    ['skip=-1', /skip/],
    ['take=ten', /take/],
  ])('400 for %s', async (query, message) => {
    const answer = await client.get(`/v1/customers?${query}`);
    expect(answer.status).toBe(400);
    expect(errorMessage(answer.body)).toMatch(message);
  });

  it('pages with take and skip, 20 by default', async () => {
    for (let i = 0; i < 22; i++) await newCustomer();
    const first = (await client.get('/v1/customers')).body as { data: { id: string }[]; total: number; take: number; skip: number };
    expect(first).toMatchObject({ take: 20, skip: 0 });
    expect(first.data).toHaveLength(20);
    const second = (await client.get('/v1/customers?take=5&skip=20')).body as { data: { id: string }[]; total: number };
    expect(second.data).toHaveLength(Math.min(5, first.total - 20));
    expect(second.data[0]?.id).not.toBe(first.data[0]?.id);
  });
});

describe('idempotency', () => {
  it('the same key and body answer the first response again and create once; another body or path is a 409', async () => {
    const key = { 'x-idempotency-key': unique('idem-') };
    const input = { username: unique('idem-user-'), email: `${unique('idem')}@example.com` };
    const before = (await client.get('/v1/customers')).body as { total: number };
    const first = await client.post('/v1/customers', input, key);
    const again = await client.post('/v1/customers', input, key);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const after = (await client.get('/v1/customers')).body as { total: number };
    expect(after.total).toBe(before.total + 1);
    expect(simulator.events().filter((event) => (event.data as { username?: string }).username === input.username)).toHaveLength(1);

    const otherBody = await client.post('/v1/customers', { ...input, username: 'something-else' }, key);
    expect(otherBody.status).toBe(409);
    expect(errorMessage(otherBody.body)).toMatch(/X-Idempotency-Key/);
    const otherPath = await client.post('/v1/webhooks', input, key);
    expect(otherPath.status).toBe(409);
  });

  it('a replay answers the state of the first call, not the current one', async () => {
    const payment = await pendingPayment();
    const key = { 'x-idempotency-key': unique('complete-') };
    const first = await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' }, key);
    await client.post(`/v1/invoices/${payment.invoiceId}/mark-paid`, {});
    const replay = await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' }, key);
    expect(replay.body).toEqual(first.body);
    expect(typesOf(payment.id).filter((type) => type === 'PAYMENT_COMPLETED')).toHaveLength(1);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After in whole seconds past the limit', async () => {
    const limited = await startSimulator({ rateLimitPerMinute: 5 });
    try {
      const limitedClient = api(limited.url);
      for (let i = 0; i < 5; i++) expect((await limitedClient.get('/v1/customers')).status).toBe(200);
      const refused = await limitedClient.get('/v1/customers');
      expect(refused.status).toBe(429);
      expect(errorMessage(refused.body)).toMatch(/5 per minute/);
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    } finally {
      await limited.close();
    }
  });
});

describe('--fail-rate', () => {
  it('a write whose answer was lost is replayed by a retry with the same key, and created once', async () => {
    // Scripted chance: the first request fails after its write (0 < failRate, then 0.2 < 0.5); then no failures.
    const script = [0, 0.2];
    const flaky = await startSimulator({ failRate: 0.5, random: () => script.shift() ?? 0.99 });
    try {
      const flakyClient = api(flaky.url);
      const key = { 'x-idempotency-key': 'lost-answer-1' };
      const lost = await flakyClient.post('/v1/customers', { username: 'lost-answer' }, key);
      expect(lost.status).toBe(503);
      expect(errorMessage(lost.body)).toBe('Simulated failure (--fail-rate)');
      const retried = await flakyClient.post('/v1/customers', { username: 'lost-answer' }, key);
      expect(retried.status).toBe(200);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect((await flakyClient.get('/v1/customers')).body).toMatchObject({ total: 1 });
      expect(flaky.events()).toHaveLength(1);
    } finally {
      await flaky.close();
    }
  });

  it('a failure before the work changes nothing', async () => {
    const script = [0, 0.7];
    const flaky = await startSimulator({ failRate: 0.5, random: () => script.shift() ?? 0.99 });
    try {
      const flakyClient = api(flaky.url);
      expect((await flakyClient.post('/v1/customers', { username: 'early' }, { 'x-idempotency-key': 'k' })).status).toBe(503);
      expect((await flakyClient.get('/v1/customers')).body).toMatchObject({ total: 0 });
      const retried = await flakyClient.post('/v1/customers', { username: 'early' }, { 'x-idempotency-key': 'k' });
      expect(retried.status).toBe(200);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
    } finally {
      await flaky.close();
    }
  });
});

describe('state rules', () => {
  it('a CASH payment completed in the sandbox settles the invoice and emits the three events in order', async () => {
    const payment = await pendingPayment('CASH');
    const completed = await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' });
    expect(completed.status).toBe(200);
    expect(completed.body).toMatchObject({ payment: { status: 'SUCCEEDED', isCompleted: true, type: 'CASH' }, invoice: { isPaid: true } });
    expect(typesOf(payment.id)).toEqual(['PAYMENT_ATTEMPT_SUCCEEDED', 'INVOICE_PAID', 'PAYMENT_COMPLETED']);
    expect((await client.get(`/v1/invoices/${payment.invoiceId}`)).body).toMatchObject({ isPaid: true, paidAt: expect.any(String) });
  });

  it('the sandbox refuses production keys (403), settled or OTHER payments (409), other outcomes (400), unknown ids (404)', async () => {
    const payment = await pendingPayment('TRANSFER');
    const live = await api(simulator.url, 'sk_live_prod').post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' });
    expect(live.status).toBe(403);
    expect(errorMessage(live.body)).toMatch(/sk_test_/);
    const unknownOutcome = await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'EXPLODED' });
    expect(unknownOutcome.status).toBe(400);
    expect(errorMessage(unknownOutcome.body)).toMatch(/input\.outcome/);
    expect((await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' })).status).toBe(200);
    const twice = await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' });
    expect(twice.status).toBe(409);
    expect(errorMessage(twice.body)).toMatch(/pending CASH or TRANSFER/);

    const invoice = await newInvoice();
    const other = (await client.post(`/v1/invoices/${invoice.id}/mark-paid`, {})).body as { payment: { id: string } };
    expect((await client.post(`/v1/sandbox/payments/${other.payment.id}/complete`, { outcome: 'SUCCEEDED' })).status).toBe(409);
    expect((await client.post('/v1/sandbox/payments/pay_missing/complete', { outcome: 'SUCCEEDED' })).status).toBe(404);
  });

  it('an invoice whose total is zero is paid at once: INVOICE_CREATED then INVOICE_PAID', async () => {
    const invoice = await newInvoice(0);
    expect(invoice).toMatchObject({ amount: 0, isPaid: true });
    expect(typesOf(invoice.id)).toEqual(['INVOICE_CREATED', 'INVOICE_PAID']);
  });

  it('mark-paid creates an OTHER payment and emits INVOICE_PAID_OTHER and PAYMENT_COMPLETED; a paid invoice is a 409', async () => {
    const invoice = await newInvoice(120_000);
    const marked = await client.post(`/v1/invoices/${invoice.id}/mark-paid`, { description: 'Paid at the front desk' });
    expect(marked.status).toBe(200);
    expect(marked.body).toMatchObject({ invoice: { isPaid: true }, payment: { type: 'OTHER', amount: 120_000, isCompleted: true } });
    expect(typesOf(invoice.id)).toEqual(['INVOICE_CREATED', 'INVOICE_PAID_OTHER', 'PAYMENT_COMPLETED']);
    expect((await client.post(`/v1/invoices/${invoice.id}/mark-paid`, {})).status).toBe(409);
    expect((await client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType: 'CASH' })).status).toBe(409);
    expect((await client.post('/v1/invoices/inv_missing/payments', { paymentType: 'CASH' })).status).toBe(404);
  });

  it('mark-paid accepts a request without a body', async () => {
    const invoice = await newInvoice();
    expect((await client.call('POST', `/v1/invoices/${invoice.id}/mark-paid`)).status).toBe(200);
  });
});

describe('routing', () => {
  it('404 for an unknown path, 405 with Allow for a wrong method', async () => {
    const unknown = await client.get('/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(errorMessage(unknown.body)).toMatch(/No route/);
    const wrong = await client.call('DELETE', '/v1/invoices');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST, GET');
  });
});

describe('every operation', () => {
  it('answers 2xx bodies its response schema accepts and error bodies of the error shape', async () => {
    const receiver = await recordingReceiver();
    const seen = new Set<string>();
    const errors: ApiAnswer[] = [];
    const expectShape = async <T = { id: string }>(
      operationId: string,
      call: Promise<ApiAnswer>,
      schema: z.ZodType,
      error: Promise<ApiAnswer>,
    ) => {
      const answer = await call;
      expect(answer.status, `${operationId}: ${JSON.stringify(answer.body)}`).toBe(200);
      const parsed = schema.safeParse(answer.body);
      expect(parsed.success, `${operationId}: ${parsed.error?.message}`).toBe(true);
      errors.push(await error);
      seen.add(operationId);
      return answer.body as T;
    };
    try {
      const customer = await expectShape(
        'createCustomer',
        client.post('/v1/customers', {
          username: unique('t-'),
          name: 'Ada',
          email: `${unique('t')}@example.com`,
          phoneNumber: '+525512345678',
        }),
        apiCustomerSchema,
        client.post('/v1/customers', {}),
      );
      await expectShape(
        'listCustomers',
        client.get('/v1/customers?take=3'),
        listPageSchema(apiCustomerSchema),
        client.get('/v1/customers?skip=x'),
      );
      await expectShape('getCustomer', client.get(`/v1/customers/${customer.id}`), apiCustomerSchema, client.get('/v1/customers/cus_none'));
      const invoice = await expectShape(
        'createInvoice',
        client.post('/v1/invoices', { customerId: customer.id, dueDate: DUE, items: [item(1000, 'MXN', 2)] }),
        apiInvoiceSchema,
        client.post('/v1/invoices', { customerId: customer.id }),
      );
      await expectShape('listInvoices', client.get('/v1/invoices'), listPageSchema(apiInvoiceSchema), client.get('/v1/invoices?take=1000'));
      await expectShape('getInvoice', client.get(`/v1/invoices/${invoice.id}`), apiInvoiceSchema, client.get('/v1/invoices/inv_none'));
      const requested = await expectShape<{ payment: { id: string } }>(
        'requestPayment',
        client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType: 'TRANSFER' }),
        requestPaymentResponseSchema,
        client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType: 'CARD' }),
      );
      const paymentId = requested.payment.id;
      await expectShape('getPayment', client.get(`/v1/payments/${paymentId}`), apiPaymentSchema, client.get('/v1/payments/pay_none'));
      const endpoint = await expectShape(
        'createWebhookEndpoint',
        client.post('/v1/webhooks', { url: receiver.url, description: 'shapes', enabledEvents: ['INVOICE_PAID', 'PAYMENT_COMPLETED'] }),
        webhookEndpointSchema,
        client.post('/v1/webhooks', { url: receiver.url, description: 'x', enabledEvents: ['NOT_A_TYPE'] }),
      );
      expect(endpoint).not.toHaveProperty('secret');
      await expectShape(
        'getWebhookSecret',
        client.get(`/v1/webhooks/${endpoint.id}/secret`),
        webhookSecretSchema,
        client.get('/v1/webhooks/we_none/secret'),
      );
      await expectShape(
        'completeSandboxPayment',
        client.post(`/v1/sandbox/payments/${paymentId}/complete`, { outcome: 'SUCCEEDED' }),
        completePaymentResponseSchema,
        client.post(`/v1/sandbox/payments/${paymentId}/complete`, { outcome: 'SUCCEEDED' }),
      );
      await simulator.idle();
      const history = await expectShape<{ data: { id: string }[] }>(
        'listWebhookEvents',
        client.get(`/v1/webhook-events?endpointId=${endpoint.id}&status=delivered`),
        listPageSchema(webhookEventRecordSchema),
        client.get('/v1/webhook-events?take=-5'),
      );
      expect(history.data).toHaveLength(2);
      const recordId = history.data[0]!.id;
      const retried = await expectShape<{ attempts: unknown[] }>(
        'retryWebhookEvent',
        client.post(`/v1/webhook-events/${recordId}/retry`),
        webhookEventRecordSchema,
        client.post('/v1/webhook-events/whevt_none/retry'),
      );
      expect(retried.attempts).toHaveLength(2);
      await expectShape(
        'rotateWebhookSecret',
        client.post(`/v1/webhooks/${endpoint.id}/secret/rotate`),
        rotatedWebhookSecretSchema,
        client.post('/v1/webhooks/we_none/secret/rotate'),
      );
      const other = await newInvoice();
      await expectShape(
        'markInvoicePaid',
        client.post(`/v1/invoices/${other.id}/mark-paid`, { paymentTime: '2026-11-20T10:00:00Z' }),
        markPaidResponseSchema,
        client.post(`/v1/invoices/${other.id}/mark-paid`, {}),
      );
      await expectShape(
        'listWebhookEndpoints',
        client.get('/v1/webhooks?take=100'),
        listPageSchema(webhookEndpointSchema),
        client.get('/v1/webhooks?take=0'),
      );
      const refunded = await expectShape<{ refund: { id: string } }>(
        'refundSandboxPayment',
        client.post(`/v1/sandbox/payments/${paymentId}/refund`, { amount: 500, reason: 'shapes' }),
        sandboxRefundResponseSchema,
        client.post(`/v1/sandbox/payments/${paymentId}/refund`, { amount: 1_000_000 }),
      );
      expect(refunded.refund.id).toMatch(/^ref_/);
      const dispute = await expectShape(
        'openSandboxDispute',
        client.post(`/v1/sandbox/payments/${paymentId}/dispute`, { reason: 'FRAUDULENT' }),
        sandboxDisputeSchema,
        client.post(`/v1/sandbox/payments/${paymentId}/dispute`, {}),
      );
      await expectShape(
        'respondSandboxDispute',
        client.post(`/v1/sandbox/disputes/${dispute.id}/respond`, { evidence: 'receipt' }),
        sandboxDisputeSchema,
        client.post(`/v1/sandbox/disputes/${dispute.id}/respond`, {}),
      );
      await expectShape(
        'resolveSandboxDispute',
        client.post(`/v1/sandbox/disputes/${dispute.id}/resolve`, { outcome: 'LOST' }),
        sandboxDisputeSchema,
        client.post(`/v1/sandbox/disputes/${dispute.id}/resolve`, { outcome: 'DRAW' }),
      );
      const subscription = await expectShape(
        'createSandboxSubscription',
        client.post('/v1/sandbox/subscriptions', { customerId: customer.id, items: [item(9_900)], numberOfPayments: 3 }),
        sandboxSubscriptionSchema,
        client.post('/v1/sandbox/subscriptions', { customerId: 'cus_none', items: [item(9_900)] }),
      );
      await expectShape(
        'cycleSandboxSubscription',
        client.post(`/v1/sandbox/subscriptions/${subscription.id}/cycle`),
        sandboxCycleResponseSchema,
        client.post('/v1/sandbox/subscriptions/sub_none/cycle'),
      );
      await expectShape(
        'cancelSandboxSubscription',
        client.post(`/v1/sandbox/subscriptions/${subscription.id}/cancel`),
        sandboxSubscriptionSchema,
        client.post(`/v1/sandbox/subscriptions/${subscription.id}/cancel`),
      );
      await expectShape(
        'saveSandboxPaymentMethod',
        client.post(`/v1/sandbox/customers/${customer.id}/payment-methods`, { type: 'BANK_ACCOUNT', clabe: '002180001234567891' }),
        sandboxPaymentMethodSchema,
        client.post(`/v1/sandbox/customers/${customer.id}/payment-methods`, { type: 'BANK_ACCOUNT', clabe: '12' }),
      );
      await expectShape(
        'updateSandboxCustomer',
        client.post(`/v1/sandbox/customers/${customer.id}/update`, { name: 'Renamed' }),
        apiCustomerSchema,
        client.post('/v1/sandbox/customers/cus_none/update', { name: 'Nobody' }),
      );
      const toCancel = await newInvoice();
      await expectShape(
        'cancelSandboxInvoice',
        client.post(`/v1/sandbox/invoices/${toCancel.id}/cancel`),
        apiInvoiceSchema,
        client.post(`/v1/sandbox/invoices/${toCancel.id}/cancel`),
      );
      await expectShape(
        'listSandboxEvents',
        client.get('/v1/sandbox/events?take=5'),
        listPageSchema(sandboxEventSchema),
        api(simulator.url, 'sk_live_prod').get('/v1/sandbox/events'),
      );
      await expectShape(
        'getSandboxClock',
        client.get('/v1/sandbox/clock'),
        sandboxClockSchema,
        api(simulator.url, 'sk_live_prod').get('/v1/sandbox/clock'),
      );
      // Only a manual clock moves; this file's simulator runs on the real one, which answers 409.
      const manual = await startSimulator({ clock: 'manual' });
      try {
        await expectShape(
          'advanceSandboxClock',
          api(manual.url).post('/v1/sandbox/clock/advance', { by: '1h' }),
          sandboxAdvanceSchema,
          client.post('/v1/sandbox/clock/advance', { by: '1h' }),
        );
      } finally {
        await manual.close();
      }
      await expectShape(
        'createCustomerPortalSession',
        client.post('/v1/customer-portal-session', { destination: 'home', customerId: customer.id }),
        signInUrlSchema,
        client.post('/v1/customer-portal-session', { destination: 'home', customerId: 'cus_none' }),
      );
      await expectShape(
        'createAuthLink',
        client.post('/v1/auth-links', { customerId: customer.id, url: 'https://example.com/after' }),
        signInUrlSchema,
        client.post('/v1/auth-links', { customerId: '' }),
      );
      await expectShape(
        'getOpenApiJson',
        api(simulator.url, null).get('/openapi.json'),
        simulator.routes.find((r) => r.operationId === 'getOpenApiJson')!.response,
        client.call('POST', '/openapi.json'),
      );
      await expectShape(
        'getOpenApiYaml',
        api(simulator.url, null).get('/openapi.yaml'),
        simulator.routes.find((r) => r.operationId === 'getOpenApiYaml')!.response,
        client.call('PUT', '/openapi.yaml'),
      );

      expect([...seen].sort()).toEqual(simulator.routes.map((route) => route.operationId).sort());
      for (const error of errors) {
        expect(error.status).toBeGreaterThanOrEqual(400);
        expect(apiErrorBodySchema.safeParse(error.body).success, JSON.stringify(error.body)).toBe(true);
      }
    } finally {
      await receiver.close();
    }
  });
});
