import { createServer } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient, type ApiClient } from '../../src/client/index.js';
import type { ApiInvoice } from '../../src/events/rest-contract.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/index.js';
import { listEvents } from '../../src/store/inbox.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

describe.each(backends)('end to end over loopback, inbox on $name', (backend) => {
  it.skipIf(!backend.available)(
    'a CASH payment completed in the sandbox: the inbox holds INVOICE_PAID and PAYMENT_COMPLETED once each, and a handler reading the invoice sees it paid',
    { timeout: 60_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent });
      const store = await backend.open();
      // The receiver's URL is needed to register the endpoint, and the endpoint's secret to build the receiver.
      let hooks: Payhooks<ApiClient> | undefined;
      const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
      const seenByHandler: ApiInvoice[] = [];
      try {
        const client = createClient({ apiKey: 'sk_test_e2e', environment: simulator.url });
        const endpoint = await client.webhooks.create({
          url: `${receiver.url}/webhooks`,
          description: 'end-to-end test',
          enabledEvents: ['INVOICE_PAID', 'PAYMENT_COMPLETED', 'CUSTOMER_CREATED'],
        });
        const { secret } = await client.webhooks.getSecret(endpoint.id);
        hooks = createPayhooks({ secret, database: store, logger: silent, api: client, worker: { pollIntervalMs: 50 } });
        hooks.on('INVOICE_PAID', async (event, ctx) => {
          // Current state through the API client, not the event's snapshot: the defence against out-of-order delivery.
          seenByHandler.push(await ctx.api!.invoices.get(event.data.invoiceId, { signal: ctx.signal }));
        });
        hooks.on('PAYMENT_COMPLETED', () => undefined);
        await hooks.start();

        const customer = await client.customers.create({ username: 'e2e-ada', name: 'Ada', email: 'ada@example.com' });
        const invoice = await client.invoices.create({
          customerId: customer.id,
          dueDate: '2026-12-01T06:00:00Z',
          items: [{ quantity: 1, concept: { displayName: 'Tuition, December', amount: 250_000, currency: 'MXN' } }],
        });
        expect(invoice.isPaid).toBe(false);
        const requested = await client.invoices.requestPayment(invoice.id, { paymentType: 'CASH' });
        const completed = await client.sandbox.completePayment(requested.payment.id, { outcome: 'SUCCEEDED' });
        expect(completed.payment).toMatchObject({ id: requested.payment.id, type: 'CASH' });

        await waitFor(
          async () => (await listEvents(store, { status: 'done' })).length >= 2 && seenByHandler.length >= 1,
          'the handlers to run',
          30_000,
        );
        await simulator.idle();
        const stored = await listEvents(store);
        const byType = (type: string) => stored.filter((event) => event.eventType === type);
        expect(byType('INVOICE_PAID')).toHaveLength(1);
        expect(byType('PAYMENT_COMPLETED')).toHaveLength(1);
        expect(byType('CUSTOMER_CREATED')).toHaveLength(1);
        expect(byType('INVOICE_CREATED')).toHaveLength(0); // not subscribed
        expect(byType('INVOICE_PAID')[0]).toMatchObject({ status: 'done', deliveries: 1 });
        expect(seenByHandler).toEqual([expect.objectContaining({ id: invoice.id, isPaid: true, amount: 250_000 })]);
        expect(simulator.webhookEvents().every((record) => record.status === 'delivered' && record.attempts.length === 1)).toBe(true);
      } finally {
        await hooks?.stop();
        await receiver.close();
        await simulator.close();
        await dispose(store);
      }
    },
  );
});
