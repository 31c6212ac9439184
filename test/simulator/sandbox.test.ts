import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEvent } from '../../src/events/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { addMonths } from '../../src/simulator/subscription-routes.js';
import { errorMessage } from '../helpers/error-body.js';
import { api } from './api.js';

// The simulator-only sandbox calls: their state rules, their refusals (each a clear error that changes nothing),
// and the events they emit, checked against the catalog.

let simulator: Simulator;
let client: ReturnType<typeof api>;
let counter = 0;
beforeAll(async () => {
  simulator = await startSimulator();
  client = api(simulator.url);
});
afterAll(() => simulator.close());

const item = (amount: number, currency = 'MXN') => ({ quantity: 1, concept: { displayName: 'Tuition', amount, currency } });

async function customer(): Promise<string> {
  return ((await client.post('/v1/customers', { username: `sandbox-${++counter}` })).body as { id: string }).id;
}

async function pending(paymentType: 'CASH' | 'TRANSFER' = 'CASH', amount = 10_000): Promise<{ id: string; invoiceId: string }> {
  const invoice = (
    await client.post('/v1/invoices', { customerId: await customer(), dueDate: '2026-12-01T06:00:00Z', items: [item(amount)] })
  ).body as { id: string };
  return (
    (await client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType })).body as { payment: { id: string; invoiceId: string } }
  ).payment;
}

async function completed(amount = 10_000): Promise<string> {
  const payment = await pending('CASH', amount);
  expect((await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' })).status).toBe(200);
  return payment.id;
}

/** The events emitted since `from`, each checked against the catalog. */
function eventsSince(from: number): { eventType: string; data: Record<string, unknown> }[] {
  const events = simulator.events().slice(from);
  for (const event of events) {
    const parsed = parseEvent(event);
    expect(parsed.ok, parsed.ok ? '' : parsed.error.message).toBe(true);
  }
  return events as { eventType: string; data: Record<string, unknown> }[];
}

describe('outcome FAILED', () => {
  it('records a failed attempt, emits only PAYMENT_ATTEMPT_FAILED, and leaves payment and invoice as they were', async () => {
    const payment = await pending('TRANSFER');
    const from = simulator.events().length;
    const answer = await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'FAILED' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ payment: { status: 'PENDING', isCompleted: false }, invoice: { isPaid: false } });
    const events = eventsSince(from);
    expect(events.map((event) => event.eventType)).toEqual(['PAYMENT_ATTEMPT_FAILED']);
    expect(events[0]!.data).toMatchObject({
      payment: { id: payment.id, status: 'PENDING' },
      paymentAttempt: { success: false, attemptNumber: 1, errorType: 'DECLINED' },
    });
    expect((await client.get(`/v1/invoices/${payment.invoiceId}`)).body).toMatchObject({ isPaid: false, paidAt: null });
  });

  it('is refused like SUCCEEDED for a settled payment (409) and with a production key (403)', async () => {
    const paymentId = await completed();
    const settled = await client.post(`/v1/sandbox/payments/${paymentId}/complete`, { outcome: 'FAILED' });
    expect(settled.status).toBe(409);
    const live = await api(simulator.url, 'sk_live_x').post(`/v1/sandbox/payments/${paymentId}/complete`, { outcome: 'FAILED' });
    expect(live.status).toBe(403);
  });
});

describe('refunds', () => {
  it('partial, then the rest; a third is 409, one over what is left is 400; the payment stays completed', async () => {
    const paymentId = await completed(10_000);
    const from = simulator.events().length;
    const part = await client.post(`/v1/sandbox/payments/${paymentId}/refund`, { amount: 4_000, reason: 'broken' });
    expect(part.status).toBe(200);
    expect(part.body).toMatchObject({
      refund: { amount: 4_000, currency: 'MXN', status: 'SUCCEEDED', customRefundReason: 'broken', paymentId },
      payment: { id: paymentId, isCompleted: true },
    });
    const over = await client.post(`/v1/sandbox/payments/${paymentId}/refund`, { amount: 6_001 });
    expect(over.status).toBe(400);
    expect(errorMessage(over.body)).toMatch(/more than what is left to refund .*6000 MXN/);
    const rest = await client.post(`/v1/sandbox/payments/${paymentId}/refund`);
    expect(rest.body).toMatchObject({ refund: { amount: 6_000, customRefundReason: null } });
    const again = await client.post(`/v1/sandbox/payments/${paymentId}/refund`, {});
    expect(again.status).toBe(409);
    expect(errorMessage(again.body)).toMatch(/already refunded in full/);
    const events = eventsSince(from);
    expect(events.map((event) => [event.eventType, (event.data.refund as { amount: number }).amount])).toEqual([
      ['PAYMENT_REFUNDED', 4_000],
      ['PAYMENT_REFUNDED', 6_000],
    ]);
    expect((await client.get(`/v1/payments/${paymentId}`)).body).toMatchObject({ status: 'SUCCEEDED', isCompleted: true });
  });

  it('refuses a pending payment and an OTHER payment (409), an unknown one (404), a production key (403), a bad amount (400)', async () => {
    const from = simulator.events().length;
    const open = await pending();
    expect((await client.post(`/v1/sandbox/payments/${open.id}/refund`)).status).toBe(409);
    const invoice = (
      await client.post('/v1/invoices', { customerId: await customer(), dueDate: '2026-12-01T06:00:00Z', items: [item(500)] })
    ).body as { id: string };
    const other = (await client.post(`/v1/invoices/${invoice.id}/mark-paid`)).body as { payment: { id: string } };
    const refusedOther = await client.post(`/v1/sandbox/payments/${other.payment.id}/refund`);
    expect(refusedOther.status).toBe(409);
    expect(errorMessage(refusedOther.body)).toMatch(/outside the service \(OTHER\)/);
    expect((await client.post('/v1/sandbox/payments/pay_none/refund')).status).toBe(404);
    const paymentId = await completed();
    expect((await api(simulator.url, 'sk_live_x').post(`/v1/sandbox/payments/${paymentId}/refund`)).status).toBe(403);
    expect((await client.post(`/v1/sandbox/payments/${paymentId}/refund`, { amount: -5 })).status).toBe(400);
    expect(eventsSince(from).filter((event) => event.eventType === 'PAYMENT_REFUNDED')).toEqual([]);
  });
});

describe('disputes', () => {
  it('NEEDS_RESPONSE → UNDER_REVIEW → LOST; each step once, out-of-order steps 409, one open dispute per payment', async () => {
    const paymentId = await completed();
    const from = simulator.events().length;
    const opened = await client.post(`/v1/sandbox/payments/${paymentId}/dispute`);
    expect(opened.body).toMatchObject({ status: 'NEEDS_RESPONSE', reason: 'GENERAL', paymentId, response: null });
    const disputeId = (opened.body as { id: string }).id;
    expect((await client.post(`/v1/sandbox/payments/${paymentId}/dispute`)).status).toBe(409);
    expect((await client.post(`/v1/sandbox/disputes/${disputeId}/respond`)).body).toMatchObject({ status: 'UNDER_REVIEW' });
    expect((await client.post(`/v1/sandbox/disputes/${disputeId}/respond`)).status).toBe(409);
    const lost = await client.post(`/v1/sandbox/disputes/${disputeId}/resolve`, { outcome: 'LOST' });
    expect(lost.body).toMatchObject({ status: 'LOST', lostReason: 'INSUFFICIENT_EVIDENCE', resolvedAt: expect.any(String) });
    expect((await client.post(`/v1/sandbox/disputes/${disputeId}/resolve`, { outcome: 'WON' })).status).toBe(409);
    expect((await client.post(`/v1/sandbox/disputes/${disputeId}/respond`)).status).toBe(409);
    expect(eventsSince(from).map((event) => event.eventType)).toEqual(['DISPUTE_CREATED', 'DISPUTE_RESPONSE_CREATED', 'DISPUTE_RESOLVED']);
    // Once resolved, the payment can be disputed again.
    expect((await client.post(`/v1/sandbox/payments/${paymentId}/dispute`, { reason: 'DUPLICATE' })).status).toBe(200);
  });

  it('lost without a response: NO_RESPONSE; unknown ids 404; pending payments 409', async () => {
    const paymentId = await completed();
    const disputeId = ((await client.post(`/v1/sandbox/payments/${paymentId}/dispute`)).body as { id: string }).id;
    const lost = await client.post(`/v1/sandbox/disputes/${disputeId}/resolve`, { outcome: 'LOST' });
    expect(lost.body).toMatchObject({ status: 'LOST', lostReason: 'NO_RESPONSE', response: null });
    expect((await client.post('/v1/sandbox/disputes/dsp_none/respond')).status).toBe(404);
    expect((await client.post('/v1/sandbox/disputes/dsp_none/resolve', { outcome: 'WON' })).status).toBe(404);
    expect((await client.post(`/v1/sandbox/payments/${(await pending()).id}/dispute`)).status).toBe(409);
  });
});

describe('subscriptions', () => {
  it('each cycle issues an invoice due on the collection date; after numberOfPayments the subscription completes', async () => {
    const customerId = await customer();
    const from = simulator.events().length;
    const created = await client.post('/v1/sandbox/subscriptions', {
      customerId,
      items: [item(1_500), { quantity: 2, concept: { displayName: 'Locker', amount: 200, currency: 'MXN' } }],
      firstCollectionDate: '2027-01-31T09:00:00.000Z',
      numberOfPayments: 2,
    });
    expect(created.status).toBe(200);
    const id = (created.body as { id: string }).id;
    const first = (await client.post(`/v1/sandbox/subscriptions/${id}/cycle`)).body as {
      subscription: Record<string, unknown>;
      invoice: { id: string; amount: number; dueDate: string; customerId: string };
    };
    expect(first.invoice).toMatchObject({ amount: 1_900, dueDate: '2027-01-31T09:00:00.000Z', customerId, isPaid: false });
    expect(first.subscription).toMatchObject({
      lastCollectionDate: '2027-01-31T09:00:00.000Z',
      nextCollectionDate: '2027-02-28T09:00:00.000Z',
    });
    const second = (await client.post(`/v1/sandbox/subscriptions/${id}/cycle`)).body as { subscription: Record<string, unknown> };
    expect(second.subscription).toMatchObject({
      status: 'COMPLETED',
      isActive: false,
      isCompleted: true,
      nextCollectionDate: null,
      invoiceIds: [first.invoice.id, expect.any(String)],
    });
    expect((await client.post(`/v1/sandbox/subscriptions/${id}/cycle`)).status).toBe(409);
    expect((await client.post(`/v1/sandbox/subscriptions/${id}/cancel`)).status).toBe(409);
    expect(eventsSince(from).map((event) => event.eventType)).toEqual([
      'SUBSCRIPTION_CREATED',
      'INVOICE_CREATED',
      'SUBSCRIPTION_UPDATED',
      'INVOICE_CREATED',
      'SUBSCRIPTION_UPDATED',
    ]);
  });

  it('refuses an unknown customer (404), mixed currencies and no items (400), emitting nothing; cancel is 409 twice', async () => {
    const before = simulator.events().length;
    expect((await client.post('/v1/sandbox/subscriptions', { customerId: 'cus_none', items: [item(100)] })).status).toBe(404);
    const mixed = await client.post('/v1/sandbox/subscriptions', { customerId: await customer(), items: [item(100), item(100, 'USD')] });
    expect(mixed.status).toBe(400);
    expect(errorMessage(mixed.body)).toMatch(/All items of a subscription must share one currency/);
    expect((await client.post('/v1/sandbox/subscriptions', { customerId: await customer(), items: [] })).status).toBe(400);
    expect(
      simulator
        .events()
        .slice(before)
        .filter((event) => event.eventType.startsWith('SUBSCRIPTION_')),
    ).toEqual([]);
    const id = (
      (await client.post('/v1/sandbox/subscriptions', { customerId: await customer(), items: [item(100)] })).body as { id: string }
    ).id;
    expect((await client.post(`/v1/sandbox/subscriptions/${id}/cancel`)).body).toMatchObject({
      status: 'CANCELED',
      canceledAt: expect.any(String),
    });
    expect((await client.post(`/v1/sandbox/subscriptions/${id}/cancel`)).status).toBe(409);
    expect((await client.post('/v1/sandbox/subscriptions/sub_none/cancel')).status).toBe(404);
  });

  it('addMonths keeps the day, or takes the last day of a shorter month, counting from the first date', () => {
    expect(addMonths('2027-01-31T09:00:00.000Z', 1)).toBe('2027-02-28T09:00:00.000Z');
    expect(addMonths('2027-01-31T09:00:00.000Z', 2)).toBe('2027-03-31T09:00:00.000Z');
    expect(addMonths('2028-01-30T00:00:00.000Z', 1)).toBe('2028-02-29T00:00:00.000Z');
    expect(addMonths('2027-11-15T12:30:00.000Z', 3)).toBe('2028-02-15T12:30:00.000Z');
  });
});

describe('GET /v1/sandbox/events', () => {
  it('lists every event emitted, oldest first, with total; staging keys only', async () => {
    await customer();
    const all = simulator.events();
    const page = (await client.get(`/v1/sandbox/events?skip=${all.length - 1}&take=100`)).body as {
      data: { eventId: string; eventType: string }[];
      total: number;
    };
    expect(page.total).toBe(all.length);
    expect(page.data).toEqual([expect.objectContaining({ eventId: all.at(-1)!.eventId, eventType: 'CUSTOMER_CREATED' })]);
    expect((await api(simulator.url, 'sk_live_x').get('/v1/sandbox/events')).status).toBe(403);
  });
});
