import { createServer } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { apiInvoiceSchema, type ApiInvoice } from '../../src/events/api.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/index.js';
import { listEvents } from '../../src/store/inbox.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { api, eventually, registerEndpoint } from './api.js';

const silent = pino({ level: 'silent' });

describe.each(backends)('end to end over loopback, inbox on $name', (backend) => {
  it.skipIf(!backend.available)(
    'a CASH payment completed in the sandbox: the inbox holds INVOICE_PAID and PAYMENT_COMPLETED once each, and a handler reading the invoice sees it paid',
    { timeout: 60_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent });
      const store = await backend.open();
      // The receiver's URL is needed to register the endpoint, and the endpoint's secret to build the receiver.
      let hooks: Payhooks | undefined;
      const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
      const seenByHandler: ApiInvoice[] = [];
      try {
        const endpoint = await registerEndpoint(simulator.url, `${receiver.url}/webhooks`, ['INVOICE_PAID', 'PAYMENT_COMPLETED', 'CUSTOMER_CREATED']);
        hooks = createPayhooks({ secret: endpoint.secret, database: store, logger: silent, worker: { pollIntervalMs: 50 } });
        hooks.on('INVOICE_PAID', async (event) => {
          // Current state over HTTP, as a handler does it (plain fetch until the API client lands).
          const response = await fetch(`${simulator.url}/v1/invoices/${event.data.invoiceId}`, { headers: { authorization: 'Bearer sk_test_e2e' } });
          seenByHandler.push(apiInvoiceSchema.parse(await response.json()));
        });
        hooks.on('PAYMENT_COMPLETED', () => undefined);
        await hooks.start();

        const client = api(simulator.url, 'sk_test_e2e');
        const customer = (await client.post('/v1/customers', { username: 'e2e-ada', name: 'Ada', email: 'ada@example.com' })).body as { id: string };
        const invoice = (await client.post('/v1/invoices', {
          customerId: customer.id,
          dueDate: '2026-12-01T06:00:00Z',
          items: [{ quantity: 1, concept: { displayName: 'Tuition, December', amount: 250_000, currency: 'MXN' } }],
        })).body as { id: string };
        const requested = (await client.post(`/v1/invoices/${invoice.id}/payments`, { paymentType: 'CASH' })).body as { payment: { id: string } };
        const completed = await client.post(`/v1/sandbox/payments/${requested.payment.id}/complete`, { outcome: 'SUCCEEDED' });
        expect(completed.status).toBe(200);

        await eventually(async () => (await listEvents(store, { status: 'done' })).length >= 2 && seenByHandler.length >= 1, 'the handlers to run', 30_000);
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
