import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES, parseEvent } from '../../src/events/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { api, recordingReceiver, registerEndpoint } from './api.js';

let simulator: Simulator;
let receiver: Awaited<ReturnType<typeof recordingReceiver>>;
beforeAll(async () => {
  simulator = await startSimulator();
  receiver = await recordingReceiver();
  await registerEndpoint(simulator.url, receiver.url, EVENT_TYPES);
});
afterAll(async () => {
  await simulator.close();
  await receiver.close();
});

function expectCatalogAccepts(body: string, context: string): void {
  const result = parseEvent(JSON.parse(body));
  expect(result.ok, `${context}: ${result.ok ? '' : result.error.message}`).toBe(true);
  if (result.ok) expect('unknown' in result.event, context).toBe(false);
}

describe('the events the simulator emits', () => {
  it('from REST actions parse with the catalog, as delivered', async () => {
    const client = api(simulator.url);
    const customer = (
      await client.post('/v1/customers', { username: 'ev-user', name: 'Ev', email: 'ev@example.com', phoneNumber: '+525500000123' })
    ).body as { id: string };
    const invoiceInput = (amount: number) => ({
      customerId: customer.id,
      dueDate: '2026-12-01T06:00:00Z',
      items: [{ quantity: 3, concept: { displayName: 'Lunch', amount, currency: 'MXN' } }],
    });
    const invoice = (await client.post('/v1/invoices', invoiceInput(4500))).body as { id: string };
    const payment = (
      (await client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType: 'TRANSFER' })).body as { payment: { id: string } }
    ).payment;
    await client.post(`/v1/sandbox/payments/${payment.id}/complete`, { outcome: 'SUCCEEDED' });
    const other = (await client.post('/v1/invoices', invoiceInput(100))).body as { id: string };
    await client.post(`/v1/invoices/${other.id}/mark-paid`, {});
    await client.post('/v1/invoices', invoiceInput(0));
    await simulator.idle();

    const types = simulator.events().map((event) => event.eventType);
    expect(new Set(types)).toEqual(
      new Set([
        'CUSTOMER_CREATED',
        'INVOICE_CREATED',
        'PAYMENT_ATTEMPT_SUCCEEDED',
        'INVOICE_PAID',
        'PAYMENT_COMPLETED',
        'INVOICE_PAID_OTHER',
      ]),
    );
    expect(receiver.received).toHaveLength(types.length);
    for (const delivery of receiver.received) expectCatalogAccepts(delivery.body, delivery.body.slice(0, 80));

    const paid = simulator.events().find((event) => event.eventType === 'INVOICE_PAID' && JSON.stringify(event.data).includes(payment.id));
    expect(paid?.data).toMatchObject({
      invoiceId: invoice.id,
      amount: 13_500,
      invoice: { id: invoice.id, amount: 13_500, currency: 'MXN', items: [{ description: 'Lunch', amount: 4500, quantity: 3 }] },
      payment: { id: payment.id, type: 'TRANSFER', isCompleted: true },
      customer: { id: customer.id, customerId: customer.id, username: 'ev-user' },
      organization: { id: expect.stringMatching(/^org_/), name: expect.any(String) },
    });
    const completed = simulator
      .events()
      .find((event) => event.eventType === 'PAYMENT_COMPLETED' && JSON.stringify(event.data).includes(payment.id));
    expect(completed?.data).toMatchObject({
      items: [{ concept: { displayName: 'Lunch', amount: 4500 } }],
      relatedInvoices: [{ id: invoice.id }],
      paymentAttempt: { success: true },
    });
  });

  it('from emit() parse with the catalog for all 19 types, each with a fresh eventId', async () => {
    const before = receiver.received.length;
    const emitted = EVENT_TYPES.map((type) => simulator.emit(type));
    await simulator.idle();
    expect(new Set(emitted.map((event) => event.eventId)).size).toBe(EVENT_TYPES.length);
    const bodies = receiver.received.slice(before).map((delivery) => delivery.body);
    expect(bodies).toHaveLength(EVENT_TYPES.length);
    for (const body of bodies) expectCatalogAccepts(body, body.slice(0, 80));
    expect(new Set(bodies.map((body) => (JSON.parse(body) as { eventType: string }).eventType))).toEqual(new Set(EVENT_TYPES));
  });

  it('emit() overrides data fields and refuses an unknown type', () => {
    const event = simulator.emit('INVOICE_PAID', { amount: 1 });
    expect(event.data.amount).toBe(1);
    expect(simulator.events().at(-1)).toMatchObject({ eventId: event.eventId, eventType: 'INVOICE_PAID', data: { amount: 1 } });
    expect(() => simulator.emit('NOT_A_TYPE' as never)).toThrow(/Unknown event type/);
  });
});
