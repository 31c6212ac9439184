import { createServer } from 'node:http';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient, type ApiClient } from '../../src/client/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createSandboxClient, startSimulator } from '../../src/simulator/index.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { actualMirror, expectedMirror, dropMirrorSchema } from '../helpers/mirror.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

/** Runs `work` over `items`, `width` at a time: the day's actions overlap, as a busy organization's do. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map((item, j) => work(item, i + j)));
  }
}

describe.each(backends)('the mirror after a scripted day, inbox on $name', (backend) => {
  it.skipIf(!backend.available)(
    '50 customers, 200 invoices, payments, refunds, disputes and subscriptions delivered shuffled and duplicated: the mirror equals the simulator row by row',
    { timeout: 180_000 },
    async () => {
      // Seeded chaos: a fifth of the deliveries twice, all of them shuffled in 50 ms windows.
      const simulator = await startSimulator({
        logger: silent,
        duplicateRate: 0.2,
        reorder: true,
        rateLimitPerMinute: 1_000_000,
        random: 11,
      });
      const store = await backend.open();
      const mirrorSchema = `${store.schema}_mirror`;
      let hooks: Payhooks<ApiClient> | undefined;
      const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
      try {
        const apiKey = 'sk_test_day';
        const client = createClient({ apiKey, environment: simulator.url, rateLimit: false });
        const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey });
        const endpoint = await client.webhooks.create({
          url: `${receiver.url}/webhooks`,
          description: 'scripted day',
          enabledEvents: [
            'CUSTOMER_CREATED',
            'INVOICE_CREATED',
            'INVOICE_PAID',
            'INVOICE_PAID_OTHER',
            'PAYMENT_ATTEMPT_SUCCEEDED',
            'PAYMENT_ATTEMPT_FAILED',
            'PAYMENT_COMPLETED',
            'PAYMENT_REFUNDED',
            'DISPUTE_CREATED',
            'DISPUTE_RESPONSE_CREATED',
            'DISPUTE_RESOLVED',
            'SUBSCRIPTION_CREATED',
            'SUBSCRIPTION_UPDATED',
            'SUBSCRIPTION_CANCELED',
          ],
        });
        const { secret } = await client.webhooks.getSecret(endpoint.id);
        // Retries come fast (the default first wait is a second): a few mirror writes end in a deadlock on the real
        // server and wait for their retry, and the day is about what the mirror ends with, not the spacing of retries.
        hooks = createPayhooks({
          secret,
          database: store,
          logger: silent,
          api: client,
          worker: { pollIntervalMs: 50, concurrency: 16, backoff: { baseMs: 50, maxMs: 1000 } },
        });
        await registerMirror(hooks, { schema: mirrorSchema });
        await hooks.start();

        // Morning: customers and their invoices.
        const customers: string[] = [];
        await inParallel(
          Array.from({ length: 50 }, (_, i) => i),
          10,
          async (i) => {
            const customer = await client.customers.create({
              username: `day-${i}`,
              name: `Customer ${i}`,
              email: `day-${i}@example.com`,
              phoneNumber: `+5255${String(10_000_000 + i)}`,
            });
            customers[i] = customer.id;
          },
        );
        const invoices: string[] = [];
        await inParallel(
          Array.from({ length: 200 }, (_, i) => i),
          20,
          async (i) => {
            const invoice = await client.invoices.create({
              customerId: customers[i % 50]!,
              dueDate: new Date(Date.UTC(2026, 11, 1 + (i % 28), 6)).toISOString(),
              items: Array.from({ length: 1 + (i % 3) }, (_, n) => ({
                quantity: 1 + n,
                concept: { displayName: `Concept ${n}`, amount: 10_000 * (1 + (i % 7)), currency: 'MXN' },
              })),
            });
            invoices[i] = invoice.id;
          },
        );

        // Midday: 120 paid in cash or by transfer (every tenth after a failed attempt), 40 marked paid, 40 left open.
        const settled: string[] = [];
        await inParallel(invoices.slice(0, 120), 20, async (invoiceId, i) => {
          const { payment } = await client.invoices.requestPayment(invoiceId, { paymentType: i % 2 ? 'CASH' : 'TRANSFER' });
          if (i % 10 === 0) await sandbox.failPayment(payment.id);
          await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
          settled[i] = payment.id;
        });
        await inParallel(invoices.slice(120, 160), 20, (invoiceId) => client.invoices.markPaid(invoiceId));

        // Afternoon: refunds, disputes and subscriptions (sandbox calls: the spec has no REST action for them).
        await inParallel(settled.slice(0, 10), 5, (paymentId, i) =>
          sandbox.refundPayment(paymentId, i % 2 ? { amount: 5_000, reason: 'partial' } : {}),
        );
        const disputes: string[] = [];
        await inParallel(settled.slice(20, 26), 6, async (paymentId, i) => {
          disputes[i] = (await sandbox.openDispute(paymentId, { reason: 'FRAUD' })).id;
        });
        await inParallel(disputes.slice(0, 4), 4, (disputeId) => sandbox.respondToDispute(disputeId));
        await inParallel(disputes.slice(0, 3), 3, (disputeId, i) => sandbox.resolveDispute(disputeId, { outcome: i % 2 ? 'LOST' : 'WON' }));
        const subscriptions: string[] = [];
        await inParallel(customers.slice(0, 5), 5, async (customerId, i) => {
          const subscription = await sandbox.createSubscription({
            customerId,
            description: `Plan ${i}`,
            items: [{ quantity: 1, concept: { displayName: 'Monthly', amount: 99_000, currency: 'MXN' } }],
          });
          subscriptions[i] = subscription.id;
        });
        for (const [i, subscriptionId] of subscriptions.entries()) {
          for (let cycle = 0; cycle <= i % 2; cycle++) await sandbox.cycleSubscription(subscriptionId);
        }
        await inParallel(subscriptions.slice(0, 2), 2, (subscriptionId) => sandbox.cancelSubscription(subscriptionId));

        // Evening: every delivery answered, every stored event finished.
        await simulator.idle();
        const emitted = simulator.events().length;
        const counts = async () => {
          const { rows } = await sql<{ stored: number; unfinished: number }>`
            select count(*)::int as stored, count(*) filter (where status not in ('done'))::int as unfinished
            from ${sql.id(store.schema, 'inbox_event_states')}`.execute(store.db.withoutPlugins());
          return rows[0]!;
        };
        await waitFor(
          async () => {
            const { stored, unfinished } = await counts();
            return stored === emitted && unfinished === 0;
          },
          `all ${emitted} events stored and done`,
          120_000,
        );
        const posts = simulator.deliveryPosts();
        expect(posts.filter((post) => post.duplicate).length).toBeGreaterThan(0);

        const expected = expectedMirror(simulator.records());
        const actual = await actualMirror(store, mirrorSchema);
        expect(expected.customers).toHaveLength(50);
        expect(expected.invoices.length).toBeGreaterThanOrEqual(200);
        expect(expected.payments.length).toBe(160);
        expect(expected.refunds).toHaveLength(10);
        expect(expected.disputes).toHaveLength(6);
        expect(expected.subscriptions).toHaveLength(5);
        expect(actual.customers).toEqual(expected.customers);
        expect(actual.invoices).toEqual(expected.invoices);
        expect(actual.payments).toEqual(expected.payments);
        expect(actual.refunds).toEqual(expected.refunds);
        expect(actual.disputes).toEqual(expected.disputes);
        expect(actual.subscriptions).toEqual(expected.subscriptions);
        console.info(
          `scripted day on ${backend.name}: ${emitted} events, ${posts.length} POSTs (${posts.filter((p) => p.duplicate).length} duplicates), ` +
            `mirror: ${actual.customers.length} customers, ${actual.invoices.length} invoices, ${actual.payments.length} payments`,
        );
      } finally {
        await hooks?.stop();
        await receiver.close();
        await simulator.close();
        await dropMirrorSchema(store, mirrorSchema);
        await dispose(store);
      }
    },
  );
});
