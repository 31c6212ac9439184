import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiInputError, ConflictError, createClient, NotFoundError, type ApiClient } from '../../src/client/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

// The client against the simulator: the two were built from the same wire contract by different hands,
// so this checks that they agree, end to end over loopback HTTP.
describe('against the simulator', () => {
  let simulator: Simulator;
  let client: ApiClient;
  beforeAll(async () => {
    simulator = await startSimulator();
    client = createClient({ apiKey: 'sk_test_client_suite', environment: simulator.url });
  });
  afterAll(async () => {
    await simulator.close();
  });

  const newInvoice = (customerId: string) => ({
    customerId,
    dueDate: '2026-12-01T00:00:00Z',
    items: [{ quantity: 1, concept: { displayName: 'Tuition', amount: 250000, currency: 'MXN' } }],
  });

  it('creates a customer and an invoice, collects it in cash through the sandbox, and reads the paid state', async () => {
    const customer = await client.customers.create({ username: 'ada', email: 'ada@example.com', phoneNumber: '+525500000001' });
    expect((await client.customers.get(customer.id)).username).toBe('ada');
    await expect(client.customers.create({ username: 'ada' })).rejects.toBeInstanceOf(ConflictError);

    const invoice = await client.invoices.create(newInvoice(customer.id));
    const { payment } = await client.invoices.requestPayment(invoice.id, { paymentType: 'CASH' });
    expect((await client.payments.get(payment.id)).type).toBe('CASH');
    await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
    expect((await client.invoices.get(invoice.id)).isPaid).toBe(true);
    await expect(client.invoices.get('inv_missing')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('iterates every invoice and manages a webhook endpoint', async () => {
    const customer = await client.customers.create({ username: 'bob' });
    for (let n = 0; n < 5; n++) await client.invoices.create(newInvoice(customer.id));
    const all = [];
    for await (const invoice of client.invoices.iterate()) all.push(invoice.id);
    expect(all.length).toBe((await client.invoices.list({ take: 1 })).total ?? all.length);
    expect(new Set(all).size).toBe(all.length);

    const endpoint = await client.webhooks.create({
      url: 'http://127.0.0.1:9/webhooks',
      description: 'client suite',
      enabledEvents: ['INVOICE_PAID'],
    });
    const { secret } = await client.webhooks.getSecret(endpoint.id);
    expect((await client.webhooks.rotateSecret(endpoint.id)).secret).not.toBe(secret);
    expect(Array.isArray((await client.webhookEvents.list({ take: 10 })).data)).toBe(true);
    expect((await client.customerPortal.createSession({ destination: 'home', customerId: customer.id })).url).toMatch(/^http/);
  });

  it('a production client never reaches the sandbox', async () => {
    const production = createClient({ apiKey: 'sk_live_client_suite', environment: simulator.url });
    await expect(production.sandbox.completePayment('pay_1', { outcome: 'SUCCEEDED' })).rejects.toBeInstanceOf(ApiInputError);
  });
});
