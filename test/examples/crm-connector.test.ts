import { createServer } from 'node:http';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import type { EventType } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { type Connector, registerConnector } from '../../src/sync/connector.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { type StubCrm, type StubCrmOptions, startStubCrm } from '../helpers/stub-crm.js';
import { waitFor } from '../helpers/wait.js';

// The example is plain JavaScript without a declaration file (tsconfig has no allowJs): a specifier TypeScript does
// not resolve, and the one export the test uses, typed here. Vitest still loads it with `payhooks` aliased to src/.
const examplePath: string = '../../examples/crm-connector/hubspot-connector.mjs';
const { hubspotConnector } = (await import(examplePath)) as {
  hubspotConnector(options: { baseUrl: string; token: string; name?: string }): Connector;
};

const silent = pino({ level: 'silent' });
const TOKEN = 'pat-na1-stub-token';
const API_KEY = 'sk_test_crm';
const SYNCED: EventType[] = [
  'CUSTOMER_CREATED',
  'CUSTOMER_UPDATED',
  'CUSTOMER_ARCHIVED',
  'INVOICE_CREATED',
  'INVOICE_UPDATED',
  'INVOICE_PAID',
  'INVOICE_PAID_OTHER',
  'INVOICE_CANCELED',
];

/** Runs `work` over `items`, `width` at a time, so that the day's calls overlap. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map((item, j) => work(item, i + j)));
  }
}

/** The simulator, the stub CRM, an inbox and a receiver wired to the HubSpot connector; `run` gets them, then all is closed. */
async function withConnector(
  backend: (typeof backends)[number],
  options: { simulator?: Parameters<typeof startSimulator>[0]; crm?: Omit<StubCrmOptions, 'token'>; api?: boolean },
  run: (setup: { simulator: Simulator; client: ApiClient; crm: StubCrm; store: PayhooksDatabase }) => Promise<void>,
): Promise<void> {
  const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000, ...options.simulator });
  const crm = await startStubCrm({ token: TOKEN, ...options.crm });
  const store = await backend.open();
  let hooks: Payhooks<ApiClient> | undefined;
  const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
  try {
    const client = createClient({ apiKey: API_KEY, environment: simulator.url, rateLimit: false });
    const endpoint = await client.webhooks.create({ url: `${receiver.url}/webhooks`, description: 'crm connector', enabledEvents: SYNCED });
    const { secret } = await client.webhooks.getSecret(endpoint.id);
    hooks = createPayhooks({
      secret,
      database: store,
      logger: silent,
      api: options.api === false ? undefined : client,
      worker: { pollIntervalMs: 50, concurrency: 16 },
    });
    await registerConnector(hooks, hubspotConnector({ baseUrl: crm.url, token: TOKEN }));
    await hooks.start();
    await run({ simulator, client, crm, store });
  } finally {
    await hooks?.stop();
    await receiver.close();
    await simulator.close();
    await crm.close();
    await dispose(store);
  }
}

/** How many of the simulator's events the endpoint gets, and how many of them the inbox holds, per state. */
async function progress(simulator: Simulator, store: PayhooksDatabase) {
  const { rows } = await sql<{ status: string; n: number }>`
    select status, count(*)::int as n from ${sql.id(store.schema, 'inbox_event_states')} group by status`.execute(
    store.db.withoutPlugins(),
  );
  const by = Object.fromEntries(rows.map((row) => [row.status, row.n])) as Record<string, number>;
  const expected = simulator.events().filter((event) => (SYNCED as string[]).includes(event.eventType)).length;
  return { expected, stored: rows.reduce((sum, row) => sum + row.n, 0), done: by.done ?? 0, dead: by.dead ?? 0 };
}

const byProperty = (objects: ReturnType<StubCrm['contacts']>, property: string) =>
  new Map(objects.map((object) => [object.properties[property], object]));

describe.each(backends)('the HubSpot example connector, inbox on $name', (backend) => {
  it.skipIf(!backend.available)(
    'a day of 15 customers and 40 invoices, delivered duplicated and shuffled: one contact per customer, one deal per invoice at its final stage',
    { timeout: 60_000 },
    async () => {
      const started = Date.now();
      await withConnector(
        backend,
        { simulator: { duplicateRate: 0.2, reorder: true, random: 7 } },
        async ({ simulator, client, crm, store }) => {
          const customers: string[] = [];
          await inParallel(
            Array.from({ length: 15 }, (_, i) => i),
            5,
            async (i) => {
              const customer = await client.customers.create({
                username: `crm-${i}`,
                name: i === 0 ? 'Cher' : `Cliente ${i} de Prueba`,
                email: `crm-${i}@example.com`,
                phoneNumber: `+5255${String(20_000_000 + i)}`,
              });
              customers[i] = customer.id;
            },
          );
          // Odd cents on purpose, and the last invoice totals zero (the simulator settles it at once).
          const invoices: string[] = [];
          await inParallel(
            Array.from({ length: 40 }, (_, i) => i),
            10,
            async (i) => {
              const invoice = await client.invoices.create({
                customerId: customers[i % 15]!,
                dueDate: new Date(Date.UTC(2026, 10, 1 + (i % 28), 6)).toISOString(),
                items: Array.from({ length: 1 + (i % 3) }, (_, n) => ({
                  quantity: 1 + n,
                  concept: { displayName: `Item ${n}`, amount: i === 39 ? 0 : 1_999 + 1_037 * (i % 7), currency: 'MXN' },
                })),
              });
              invoices[i] = invoice.id;
            },
          );
          // 18 paid through the service, 8 marked paid, the rest left open.
          await inParallel(invoices.slice(0, 18), 6, async (invoiceId, i) => {
            const { payment } = await client.invoices.requestPayment(invoiceId, { paymentType: i % 2 ? 'CASH' : 'TRANSFER' });
            await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
          });
          await inParallel(invoices.slice(18, 26), 4, (invoiceId) => client.invoices.markPaid(invoiceId));
          // A stray INVOICE_PAID for an invoice the service still holds open: the deal's stage must follow the API.
          simulator.emit('INVOICE_PAID', { invoiceId: invoices[30]! });

          await simulator.idle();
          await waitFor(
            async () => {
              const now = await progress(simulator, store);
              if (now.dead > 0) throw new Error(`${now.dead} events went dead: ${JSON.stringify(crm.rejections.slice(0, 3))}`);
              return now.stored === now.expected && now.done === now.expected;
            },
            'every delivered event stored and done',
            45_000,
          );

          const records = simulator.records();
          expect(records.customers).toHaveLength(15);
          expect(records.invoices).toHaveLength(40);
          expect(crm.rejections).toEqual([]);

          const contacts = byProperty(crm.contacts(), 'payhooks_customer_id');
          expect(crm.contacts()).toHaveLength(15);
          for (const customer of records.customers) {
            const [firstname, ...rest] = (customer.name ?? '').split(' ');
            expect(contacts.get(customer.id)?.properties).toEqual({
              email: customer.email,
              firstname,
              lastname: rest.join(' '),
              phone: customer.phoneNumber,
              payhooks_customer_id: customer.id,
            });
          }

          const deals = byProperty(crm.deals(), 'payhooks_invoice_id');
          expect(crm.deals()).toHaveLength(40);
          const associations = crm.associations();
          for (const invoice of records.invoices) {
            const stage = invoice.canceledAt ? 'closedlost' : invoice.isPaid ? 'closedwon' : 'contractsent';
            const deal = deals.get(invoice.id);
            expect(deal?.properties, invoice.id).toEqual({
              dealname: `Invoice ${invoice.id}`,
              amount: (invoice.amount / 100).toFixed(2),
              deal_currency_code: 'MXN',
              pipeline: 'default',
              dealstage: stage,
              payhooks_invoice_id: invoice.id,
              ...(invoice.paidAt ? { closedate: invoice.paidAt } : {}),
            });
            const contact = contacts.get(invoice.customerId)!;
            expect(associations).toContainEqual({ dealId: deal!.id, contactId: contact.id });
          }
          expect(associations).toHaveLength(40);
          const stages = crm.deals().map((deal) => deal.properties.dealstage);
          expect(stages.filter((stage) => stage === 'closedwon')).toHaveLength(27); // 18 + 8 + the zero invoice
          expect(deals.get(invoices[30]!)?.properties.dealstage).toBe('contractsent');
          expect(deals.get(invoices[39]!)?.properties.amount).toBe('0.00');

          // Every create carried the run's idempotency key, and HubSpot's uniqueness settled the races.
          const creates = crm.requests.filter((request) => request.method === 'POST');
          expect(creates.every((request) => /^ph_[0-9a-f]{32}-(contacts|deals)$/.test(String(request.headers['idempotency-key'])))).toBe(
            true,
          );
          expect(creates.filter((request) => request.status === 201)).toHaveLength(55);
          const posts = simulator.deliveryPosts();
          expect(posts.filter((post) => post.duplicate).length).toBeGreaterThan(0);
          const now = await progress(simulator, store);
          console.info(
            `crm connector on ${backend.name}: ${now.expected} events done, ${posts.length} deliveries (${posts.filter((p) => p.duplicate).length} duplicates), ` +
              `${crm.requests.length} CRM requests (${creates.filter((r) => r.status === 409).length} create races lost), ` +
              `${crm.contacts().length} contacts, ${crm.deals().length} deals, ${Date.now() - started} ms`,
          );
        },
      );
    },
  );

  it.skipIf(!backend.available)(
    'a deal create answered 400 puts that event dead with the answer, not retried, while the contacts are written',
    { timeout: 30_000 },
    async () => {
      const refusal = {
        status: 'error',
        message: 'Property values were not valid: pipeline default is locked',
        category: 'VALIDATION_ERROR',
      };
      const crmOptions = {
        intercept: ({ method, path }: { method: string; path: string }) =>
          method === 'POST' && path === '/crm/v3/objects/deals' ? { status: 400, body: refusal } : undefined,
      };
      await withConnector(backend, { crm: crmOptions }, async ({ simulator, client, crm, store }) => {
        const ana = await client.customers.create({
          username: 'ana',
          name: 'Ana Díaz',
          email: 'ana@example.com',
          phoneNumber: '+525511110001',
        });
        const bo = await client.customers.create({ username: 'bo', name: 'Bo Li', email: 'bo@example.com', phoneNumber: '+525511110002' });
        const invoice = await client.invoices.create({
          customerId: ana.id,
          dueDate: '2026-12-01T06:00:00Z',
          items: [{ quantity: 1, concept: { displayName: 'Tuition', amount: 250_000, currency: 'MXN' } }],
        });
        await simulator.idle();
        await waitFor(async () => {
          const now = await progress(simulator, store);
          return now.stored === 3 && now.done + now.dead === 3;
        }, 'three events finished');

        const eventOf = (type: string) =>
          simulator.events().find((event) => event.eventType === type && JSON.stringify(event.data).includes(invoice.id));
        const dead = await getEvent(store, eventOf('INVOICE_CREATED')!.eventId);
        expect(dead?.status).toBe('dead');
        expect(dead?.attempts).toBe(1);
        expect(dead?.lastError).toContain(`POST ${crm.url}/crm/v3/objects/deals answered 400`);
        expect(dead?.lastError).toContain(refusal.message);
        expect(dead?.completedHandlers).toEqual([]);
        for (const event of simulator.events().filter((e) => e.eventType === 'CUSTOMER_CREATED')) {
          const stored = await getEvent(store, event.eventId);
          expect(stored?.status).toBe('done');
          expect(stored?.completedHandlers).toEqual(['connector:hubspot']);
        }
        const contacts = byProperty(crm.contacts(), 'payhooks_customer_id');
        expect(crm.contacts()).toHaveLength(2);
        expect(contacts.get(ana.id)?.properties).toMatchObject({ firstname: 'Ana', lastname: 'Díaz', email: 'ana@example.com' });
        expect(contacts.get(bo.id)?.properties).toMatchObject({ firstname: 'Bo', lastname: 'Li', email: 'bo@example.com' });
        expect(crm.deals()).toEqual([]);
        expect(crm.rejections).toEqual([
          { method: 'POST', path: '/crm/v3/objects/deals', status: 400, message: refusal.message, injected: true },
        ]);
      });
    },
  );

  it.skipIf(!backend.available)(
    "without an API key the events' own snapshots are used: a late INVOICE_CREATED does not reopen a canceled deal",
    { timeout: 30_000 },
    async () => {
      await withConnector(backend, { api: false }, async ({ simulator, crm, store }) => {
        // Emitted outside the simulator's state (it has no cancel call): the cancellation synced first, then the
        // creation it overtook arrives.
        const canceled = simulator.emit('INVOICE_CANCELED');
        const { invoiceId, invoice, customer } = canceled.data;
        const finished = (count: number) => async () => {
          const now = await progress(simulator, store);
          return now.stored === count && now.done === count;
        };
        await waitFor(finished(1), 'the cancellation done');
        simulator.emit('INVOICE_CREATED', { invoiceId, invoice, customer });
        await waitFor(finished(2), 'the late creation done');

        expect(crm.rejections).toEqual([]);
        expect(crm.deals()).toHaveLength(1);
        expect(crm.deals()[0]?.properties).toMatchObject({ payhooks_invoice_id: invoiceId, dealstage: 'closedlost' });
        const customerId = customer?.customerId ?? customer?.id;
        expect(crm.contacts().map((contact) => contact.properties.payhooks_customer_id)).toEqual([customerId]);
        expect(crm.associations()).toEqual([{ dealId: crm.deals()[0]!.id, contactId: crm.contacts()[0]!.id }]);
      });
    },
  );
});
