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

  it('iterates every invoice across pages: exactly as many as created, each once, with total required', async () => {
    // A simulator of its own, so the count is known exactly whatever else this file created.
    const own = await startSimulator();
    try {
      const ownClient = createClient({ apiKey: 'sk_test_client_suite', environment: own.url });
      const customer = await ownClient.customers.create({ username: 'bob' });
      for (let n = 0; n < 105; n++) await ownClient.invoices.create(newInvoice(customer.id));
      const all: string[] = [];
      for await (const invoice of ownClient.invoices.iterate()) all.push(invoice.id);
      expect(all).toHaveLength(105);
      expect(new Set(all).size).toBe(105);
      const first = await ownClient.invoices.list({ take: 1 });
      expect(first.total).toBe(105);
      expect(first.data).toHaveLength(1);
      expect((await ownClient.invoices.list({ skip: 100, take: 100 })).data.map((invoice) => invoice.id)).toEqual(all.slice(100));
    } finally {
      await own.close();
    }
  });

  it('manages a webhook endpoint, and finds it again in the list, which never carries secrets', async () => {
    const customer = await client.customers.create({ username: 'carol' });
    const endpoint = await client.webhooks.create({
      url: 'http://127.0.0.1:9/webhooks',
      description: 'client suite',
      enabledEvents: ['INVOICE_PAID'],
    });
    const { secret } = await client.webhooks.getSecret(endpoint.id);
    expect((await client.webhooks.rotateSecret(endpoint.id)).secret).not.toBe(secret);
    expect(Array.isArray((await client.webhookEvents.list({ take: 10 })).data)).toBe(true);
    expect((await client.customerPortal.createSession({ destination: 'home', customerId: customer.id })).url).toMatch(/^http/);

    const page = await client.webhooks.list();
    expect(page.total).toBe(1);
    expect(page.data).toEqual([
      {
        id: endpoint.id,
        url: 'http://127.0.0.1:9/webhooks',
        description: 'client suite',
        enabledEvents: ['INVOICE_PAID'],
        createdAt: endpoint.createdAt,
      },
    ]);
    expect(JSON.stringify(page)).not.toContain(secret);
    const second = await client.webhooks.create({
      url: 'https://example.com/hooks',
      description: 'second',
      enabledEvents: ['PAYMENT_COMPLETED'],
    });
    const listed: string[] = [];
    for await (const each of client.webhooks.iterate()) listed.push(each.id);
    expect(listed).toEqual([endpoint.id, second.id]);
    expect((await client.webhooks.list({ skip: 1, take: 1 })).data.map((each) => each.id)).toEqual([second.id]);
    await expect(client.webhooks.list({ take: 101 })).rejects.toBeInstanceOf(ApiInputError);
  });

  it('a production client never reaches the sandbox', async () => {
    const production = createClient({ apiKey: 'sk_live_client_suite', environment: simulator.url });
    await expect(production.sandbox.completePayment('pay_1', { outcome: 'SUCCEEDED' })).rejects.toBeInstanceOf(ApiInputError);
  });
});
