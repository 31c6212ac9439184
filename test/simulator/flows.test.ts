import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ApiClient } from '../../src/client/index.js';
import { EVENT_TYPES, parseEvent, type WebhookEvent } from '../../src/events/index.js';
import {
  FLOW_DESCRIPTIONS,
  type FLOW_NAMES,
  FlowError,
  runFlow,
  startSimulator,
  type FlowResult,
  type Simulator,
} from '../../src/simulator/index.js';
import { flowFor } from '../../src/simulator/flows.js';
import { recordingReceiver, registerEndpoint } from './api.js';

// Each flow against a real simulator over loopback: the events it reports are the ones the simulator emitted and
// delivered, each parses with the catalog, and each names resources the API then answers in the state it says.

let simulator: Simulator;
let receiver: Awaited<ReturnType<typeof recordingReceiver>>;
let api: ApiClient;
beforeAll(async () => {
  simulator = await startSimulator();
  receiver = await recordingReceiver();
  await registerEndpoint(simulator.url, receiver.url, EVENT_TYPES);
  api = createClient({ apiKey: 'sk_test_flows', environment: simulator.url });
});
afterAll(async () => {
  await simulator.close();
  await receiver.close();
});

/** Runs the flow, waits for its deliveries, and checks what every flow must satisfy; returns the parsed events by type. */
async function run(name: (typeof FLOW_NAMES)[number]) {
  const result: FlowResult = await runFlow(name, { baseUrl: simulator.url });
  await simulator.idle();
  const description = FLOW_DESCRIPTIONS.find((flow) => flow.name === name)!;
  expect(result.events.map((event) => event.eventType)).toEqual(description.events);
  const delivered = new Map(receiver.received.map((delivery) => [JSON.parse(delivery.body).eventId as string, delivery.body]));
  const parsed = result.events.map((event) => {
    // As the receiver got it, signed and over HTTP, not only as the flow reported it.
    const body = delivered.get(event.eventId);
    expect(body, `${event.eventType} ${event.eventId} delivered`).toBeDefined();
    const outcome = parseEvent(JSON.parse(body!));
    expect(outcome.ok, outcome.ok ? '' : outcome.error.message).toBe(true);
    return (outcome as { ok: true; event: WebhookEvent }).event;
  });
  const byType = <K extends WebhookEvent['eventType']>(type: K) => parsed.filter((event) => event.eventType === type) as WebhookEvent<K>[];
  const customerId = result.resources.customer![0]!;
  expect((await api.customers.get(customerId)).username).toMatch(new RegExp(`^${name}-`));
  return { result, byType, customerId };
}

describe('flows', () => {
  it.each(['cash-payment', 'transfer-payment'] as const)('%s: the invoice is paid by a completed payment of that type', async (name) => {
    const { result, byType, customerId } = await run(name);
    const paymentId = result.resources.payment![0]!;
    const invoiceId = result.resources.invoice![0]!;
    const payment = await api.payments.get(paymentId);
    expect(payment).toMatchObject({
      type: name === 'cash-payment' ? 'CASH' : 'TRANSFER',
      status: 'SUCCEEDED',
      isCompleted: true,
      invoiceId,
    });
    expect(await api.invoices.get(invoiceId)).toMatchObject({ isPaid: true, customerId, amount: 250_000 });
    expect(byType('INVOICE_PAID')[0]!.data).toMatchObject({ invoiceId, payment: { id: paymentId }, customer: { id: customerId } });
    expect(byType('PAYMENT_COMPLETED')[0]!.data).toMatchObject({ payment: { id: paymentId }, relatedInvoices: [{ id: invoiceId }] });
    expect(byType('PAYMENT_ATTEMPT_SUCCEEDED')[0]!.data.paymentAttempt).toMatchObject({ success: true, attemptNumber: 1 });
    expect(result.steps.map((step) => step.call)).toEqual([
      'POST /v1/customers',
      'POST /v1/invoices',
      `POST /v1/invoices/${invoiceId}/payments`,
      `POST /v1/sandbox/payments/${paymentId}/complete {"outcome":"SUCCEEDED"}`,
    ]);
  });

  it('mark-paid: an OTHER payment settles the invoice', async () => {
    const { result, byType } = await run('mark-paid');
    const payment = await api.payments.get(result.resources.payment![0]!);
    expect(payment).toMatchObject({ type: 'OTHER', isCompleted: true });
    expect(await api.invoices.get(result.resources.invoice![0]!)).toMatchObject({ isPaid: true });
    expect(byType('INVOICE_PAID_OTHER')[0]!.data.payment).toMatchObject({ id: payment.id, type: 'OTHER' });
  });

  it('failed-attempt: PAYMENT_ATTEMPT_FAILED from the pending payment, which stays pending and can still be paid', async () => {
    const { result, byType } = await run('failed-attempt');
    const paymentId = result.resources.payment![0]!;
    const failed = byType('PAYMENT_ATTEMPT_FAILED')[0]!.data;
    expect(failed.payment).toMatchObject({ id: paymentId, status: 'PENDING', isCompleted: false, type: 'TRANSFER' });
    expect(failed.paymentAttempt).toMatchObject({ success: false, attemptNumber: 1, errorCode: expect.any(String) });
    expect(await api.payments.get(paymentId)).toMatchObject({ status: 'PENDING', isCompleted: false });
    expect(await api.invoices.get(result.resources.invoice![0]!)).toMatchObject({ isPaid: false });
    // The failure settled nothing: a second attempt succeeds and is numbered 2.
    const completed = await api.sandbox.completePayment(paymentId, { outcome: 'SUCCEEDED' });
    expect(completed.invoice).toMatchObject({ isPaid: true });
    await simulator.idle();
    const second = simulator.events().findLast((event) => event.eventType === 'PAYMENT_ATTEMPT_SUCCEEDED');
    expect(second?.data).toMatchObject({ payment: { id: paymentId }, paymentAttempt: { attemptNumber: 2, success: true } });
  });

  it('refund: PAYMENT_REFUNDED of the whole amount, for a payment that exists and stays completed', async () => {
    const { result, byType, customerId } = await run('refund');
    const paymentId = result.resources.payment![0]!;
    const refunded = byType('PAYMENT_REFUNDED')[0]!.data;
    expect(refunded.refund).toMatchObject({ id: result.resources.refund![0], amount: 250_000, currency: 'MXN', status: 'SUCCEEDED' });
    expect(refunded.payment.id).toBe(paymentId);
    expect(refunded.customer.id).toBe(customerId);
    expect(await api.payments.get(paymentId)).toMatchObject({ id: paymentId, status: 'SUCCEEDED', isCompleted: true });
  });

  it('dispute: created, answered and resolved WON, each event carrying the same dispute of the completed payment', async () => {
    const { result, byType } = await run('dispute');
    const disputeId = result.resources.dispute![0]!;
    const paymentId = result.resources.payment![0]!;
    const created = byType('DISPUTE_CREATED')[0]!.data;
    const answered = byType('DISPUTE_RESPONSE_CREATED')[0]!.data;
    const resolved = byType('DISPUTE_RESOLVED')[0]!.data;
    expect(created).toMatchObject({ dispute: { id: disputeId, status: 'NEEDS_RESPONSE', resolvedAt: null }, response: null });
    expect(created.dispute.respondBy).toEqual(expect.any(String));
    expect(answered).toMatchObject({
      dispute: { id: disputeId, status: 'UNDER_REVIEW' },
      response: { id: expect.stringMatching(/^dspr_/) },
    });
    expect(resolved).toMatchObject({ dispute: { id: disputeId, status: 'WON', lostReason: null }, response: answered.response });
    expect(resolved.dispute.resolvedAt).toEqual(expect.any(String));
    for (const data of [created, answered, resolved]) expect(data.payment).toMatchObject({ id: paymentId, isCompleted: true });
  });

  it('subscription-cycle: created, one cycle whose invoice is paid, then canceled', async () => {
    const { result, byType } = await run('subscription-cycle');
    const subscriptionId = result.resources.subscription![0]!;
    const invoiceId = result.resources.invoice![0]!;
    const [created, updated, canceled] = [
      byType('SUBSCRIPTION_CREATED')[0]!.data.subscription,
      byType('SUBSCRIPTION_UPDATED')[0]!.data.subscription,
      byType('SUBSCRIPTION_CANCELED')[0]!.data.subscription,
    ];
    expect(created).toMatchObject({ id: subscriptionId, status: 'ACTIVE', isActive: true, lastCollectionDate: null });
    expect(created.nextCollectionDate).toBe(created.firstCollectionDate);
    expect(updated).toMatchObject({ id: subscriptionId, isActive: true, lastCollectionDate: created.firstCollectionDate });
    expect(Date.parse(updated.nextCollectionDate!)).toBeGreaterThan(Date.parse(created.firstCollectionDate));
    expect(canceled).toMatchObject({ id: subscriptionId, status: 'CANCELED', isActive: false, nextCollectionDate: null });
    // The cycle's invoice bills the subscription's items, is due on the collection date, and was paid.
    const invoice = await api.invoices.get(invoiceId);
    expect(invoice).toMatchObject({ isPaid: true, dueDate: created.firstCollectionDate, amount: 49_900 });
    expect(invoice.items[0]).toMatchObject({ conceptId: created.items[0]!.conceptId, amount: 49_900 });
    expect(byType('INVOICE_PAID')[0]!.data.invoiceId).toBe(invoiceId);
  });

  it('direct-debit: a consented card saved, then a failed attempt and a successful one on the same payment', async () => {
    const { result, byType, customerId } = await run('direct-debit');
    const paymentId = result.resources.payment![0]!;
    const saved = byType('PAYMENT_METHOD_CREATED')[0]!.data;
    expect(saved).toMatchObject({ customer: { id: customerId } });
    expect(JSON.stringify(saved)).toContain('4242');
    const failed = byType('PAYMENT_ATTEMPT_FAILED')[0]!.data;
    const succeeded = byType('PAYMENT_ATTEMPT_SUCCEEDED')[0]!.data;
    expect(failed.paymentAttempt).toMatchObject({ success: false, attemptNumber: 1 });
    expect(succeeded).toMatchObject({ payment: { id: paymentId }, paymentAttempt: { success: true, attemptNumber: 2 } });
    expect(await api.invoices.get(result.resources.invoice![0]!)).toMatchObject({ isPaid: true });
  });

  it('every event type a flow causes maps to its first flow; the four no call causes map to none', () => {
    expect(flowFor('INVOICE_PAID')).toBe('cash-payment');
    expect(flowFor('INVOICE_PAID_OTHER')).toBe('mark-paid');
    expect(flowFor('PAYMENT_ATTEMPT_FAILED')).toBe('failed-attempt');
    expect(flowFor('PAYMENT_REFUNDED')).toBe('refund');
    expect(flowFor('DISPUTE_RESOLVED')).toBe('dispute');
    expect(flowFor('SUBSCRIPTION_CANCELED')).toBe('subscription-cycle');
    expect(flowFor('PAYMENT_METHOD_CREATED')).toBe('direct-debit');
    const uncovered = EVENT_TYPES.filter((type) => flowFor(type) === undefined);
    expect(uncovered).toEqual(['INVOICE_UPDATED', 'INVOICE_CANCELED', 'CUSTOMER_UPDATED', 'CUSTOMER_ARCHIVED']);
  });

  it('a flow runs again with new resources, and reports only its own events while others call the simulator', async () => {
    const [first, second] = await Promise.all([
      runFlow('cash-payment', { baseUrl: simulator.url }),
      runFlow('mark-paid', { baseUrl: simulator.url }),
    ]);
    expect(first.resources.customer).not.toEqual(second.resources.customer);
    expect(first.events.map((event) => event.eventType)).toEqual(FLOW_DESCRIPTIONS[0]!.events);
    expect(second.events.map((event) => event.eventType)).toEqual(FLOW_DESCRIPTIONS[2]!.events);
  });

  it('stops with a FlowError naming the refused call; a production key is refused before any call', async () => {
    const elsewhere = await startSimulator();
    await elsewhere.close();
    const stopped = await runFlow('refund', { baseUrl: elsewhere.url }).catch((err: unknown) => err);
    expect(stopped).toBeInstanceOf(FlowError);
    expect((stopped as FlowError).steps).toEqual([]);
    expect((stopped as FlowError).message).toMatch(
      /^payhooks: flow refund stopped after 0 steps: GET \/v1\/sandbox\/events: could not reach/,
    );
    await expect(runFlow('refund', { baseUrl: simulator.url, apiKey: 'sk_live_nope' })).rejects.toThrow(/staging key/);
  });
});
