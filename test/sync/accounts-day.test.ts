// Issue 48: three organizations, a scripted day each, shuffled together (the simulator duplicates and reorders), into
// one payhooks with three accounts and the mirror. Each account's mirror rows equal its organization's records; no
// event, row or API call crosses accounts (the simulator's request log shows each key used only for its own
// organization's resources); a delivery signed with one account's secret sent to another's route is refused.
import { createServer } from 'node:http';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { createSandboxClient, startSimulator } from '../../src/simulator/index.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { actualMirror, dropMirrorSchema, expectedMirror } from '../helpers/mirror.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const ENABLED = [
  'CUSTOMER_CREATED',
  'INVOICE_CREATED',
  'INVOICE_PAID',
  'INVOICE_PAID_OTHER',
  'PAYMENT_ATTEMPT_SUCCEEDED',
  'PAYMENT_ATTEMPT_FAILED',
  'PAYMENT_COMPLETED',
  'PAYMENT_REFUNDED',
  'DISPUTE_CREATED',
  'DISPUTE_RESOLVED',
  'SUBSCRIPTION_CREATED',
  'SUBSCRIPTION_UPDATED',
  'SUBSCRIPTION_CANCELED',
] as const;

/** One organization's day: customers, invoices, payments (some failing first), a refund, a dispute, a subscription. */
async function scriptedDay(client: ApiClient, sandbox: ReturnType<typeof createSandboxClient>, tag: string): Promise<void> {
  const customers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      client.customers.create({ username: `${tag}-${i}`, name: `${tag} ${i}`, email: `${tag}-${i}@example.com`, phoneNumber: `+52551000${i}00` }),
    ),
  );
  const invoices = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      client.invoices.create({
        customerId: customers[i % customers.length]!.id,
        dueDate: new Date(Date.UTC(2026, 11, 1 + (i % 28), 6)).toISOString(),
        items: [{ quantity: 1 + (i % 2), concept: { displayName: `${tag} concept`, amount: 10_000 * (1 + (i % 5)), currency: 'MXN' } }],
      }),
    ),
  );
  const payments: string[] = [];
  await Promise.all(
    invoices.slice(0, 12).map(async (invoice, i) => {
      const { payment } = await client.invoices.requestPayment(invoice.id, { paymentType: i % 2 ? 'CASH' : 'TRANSFER' });
      if (i % 4 === 0) await sandbox.failPayment(payment.id);
      await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
      payments[i] = payment.id;
    }),
  );
  await Promise.all(invoices.slice(12, 16).map((invoice) => client.invoices.markPaid(invoice.id)));
  await sandbox.refundPayment(payments[0]!, { amount: 5_000, reason: 'partial' });
  const dispute = await sandbox.openDispute(payments[1]!, { reason: 'FRAUD' });
  await sandbox.resolveDispute(dispute.id, { outcome: 'WON' });
  const subscription = await sandbox.createSubscription({
    customerId: customers[0]!.id,
    description: `${tag} plan`,
    items: [{ quantity: 1, concept: { displayName: 'Monthly', amount: 99_000, currency: 'MXN' } }],
  });
  await sandbox.cycleSubscription(subscription.id);
}

describe.each(backends)('three organizations, a day each, one payhooks with the mirror, inbox on $name', (backend) => {
  it.skipIf(!backend.available)('each account mirrors its own organization, and nothing crosses', { timeout: 240_000 }, async () => {
    const simulator = await startSimulator({
      accounts: ['north', 'south', 'east'],
      logger: silent,
      duplicateRate: 0.2,
      reorder: true,
      rateLimitPerMinute: 1_000_000,
      random: 48,
    });
    const store = await backend.open();
    const mirrorSchema = `${store.schema}_mirror`;
    let hooks: Payhooks<ApiClient> | undefined;
    const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
    try {
      const organizations = simulator.organizations();
      const clients = new Map<string, ApiClient>();
      const secrets = new Map<string, string>();
      for (const organization of organizations) {
        const client = createClient({ apiKey: organization.apiKey, environment: simulator.url, rateLimit: false });
        const endpoint = await client.webhooks.create({
          url: `${receiver.url}/webhooks/${organization.id}`,
          description: organization.id,
          enabledEvents: [...ENABLED],
        });
        secrets.set(organization.id, (await client.webhooks.getSecret(endpoint.id)).secret);
        clients.set(organization.id, client);
      }
      hooks = createPayhooks({
        accounts: organizations.map((organization) => ({
          id: organization.id,
          secret: secrets.get(organization.id),
          api: clients.get(organization.id),
        })),
        database: store,
        logger: silent,
        worker: { pollIntervalMs: 50, concurrency: 16, backoff: { baseMs: 50, maxMs: 1000 } },
      });
      await registerMirror(hooks, { schema: mirrorSchema });
      await hooks.start();

      // The three days at once: their requests, events and deliveries interleave.
      await Promise.all(
        organizations.map((organization) =>
          scriptedDay(clients.get(organization.id)!, createSandboxClient({ baseUrl: simulator.url, apiKey: organization.apiKey }), organization.id),
        ),
      );
      await simulator.idle();
      const emitted = organizations.reduce((sum, organization) => sum + organization.events().length, 0);
      await waitFor(
        async () => {
          const { rows } = await sql<{ stored: number; unfinished: number }>`
            select count(*)::int as stored, count(*) filter (where status <> 'done')::int as unfinished
              from ${sql.id(store.schema, 'inbox_event_states')}`.execute(store.db.withoutPlugins());
          return rows[0]!.stored === emitted && rows[0]!.unfinished === 0;
        },
        `all ${emitted} events stored and done`,
        180_000,
      );

      // Every stored event is under the account of the organization that emitted it.
      const stored = await store.db.selectFrom('inbox_events').select(['account', 'event_id']).execute();
      expect(stored.length).toBe(emitted);
      for (const row of stored) expect(simulator.ownerOf(row.event_id), row.event_id).toBe(row.account);

      // Each account's mirror equals its organization's records, row by row, and holds nothing of the others'.
      for (const organization of organizations) {
        const expected = expectedMirror(organization.records());
        const actual = await actualMirror(store, mirrorSchema, organization.id);
        expect(expected.customers).toHaveLength(8);
        expect(expected.payments.length).toBe(16);
        expect(actual.customers, organization.id).toEqual(expected.customers);
        expect(actual.invoices, organization.id).toEqual(expected.invoices);
        expect(actual.payments, organization.id).toEqual(expected.payments);
        expect(actual.refunds, organization.id).toEqual(expected.refunds);
        expect(actual.disputes, organization.id).toEqual(expected.disputes);
        expect(actual.subscriptions, organization.id).toEqual(expected.subscriptions);
      }
      const mirrored = await sql<{ account: string; id: string }>`select account, id from ${sql.id(mirrorSchema, 'customers')}`.execute(
        store.db.withoutPlugins(),
      );
      expect(mirrored.rows.length).toBe(24);
      for (const row of mirrored.rows) expect(simulator.ownerOf(row.id)).toBe(row.account);

      // The request log, the mirror's reads included: each key only ever touched its own organization's resources.
      let checked = 0;
      for (const entry of simulator.requestLog()) {
        expect(entry.apiKey).toBe(simulator.organization(entry.account).apiKey);
        for (const id of entry.resourceIds) {
          expect(simulator.ownerOf(id), `${entry.account}: ${entry.method} ${entry.path} touched ${id}`).toBe(entry.account);
          checked += 1;
        }
      }
      expect(checked).toBeGreaterThan(300);
      expect(simulator.deliveryPosts().filter((delivery) => delivery.duplicate).length).toBeGreaterThan(0);

      // Signed with north's secret, sent to south's route: refused, and stored nowhere.
      const northScheme = createDefaultScheme({ secrets: [secrets.get('north')!] });
      const crossed = await post(`${receiver.url}/webhooks/south`, signedDelivery(northScheme, envelope('evt_crossed')));
      expect(crossed.status).toBe(404);
      const own = await post(`${receiver.url}/webhooks/north`, signedDelivery(northScheme, envelope('evt_crossed')));
      expect(own.status).toBe(200);
      const crossedRows = await store.db.selectFrom('inbox_events').select('account').where('event_id', '=', 'evt_crossed').execute();
      expect(crossedRows).toEqual([{ account: 'north' }]);
      console.info(`three organizations on ${backend.name}: ${emitted} events, ${checked} resource ids in the request log checked`);
    } finally {
      await hooks?.stop();
      await receiver.close();
      await simulator.close();
      await dropMirrorSchema(store, mirrorSchema);
      await dispose(store);
    }
  });
});
