import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient, type ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { listEvents } from '../../src/store/inbox.js';
import { type MirrorOptions, registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { putEvents } from '../helpers/inbox.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

/** A store with its mirror schema, dropped afterwards; and a payhooks instance on it. */
async function withMirror(
  backend: (typeof backends)[number],
  api: ApiClient | undefined,
  work: (ctx: {
    store: PayhooksDatabase;
    hooks: Payhooks<ApiClient>;
    schema: string;
    rows: (table: string) => Promise<Record<string, unknown>[]>;
  }) => Promise<void>,
  eventTypes?: MirrorOptions['eventTypes'],
): Promise<void> {
  const store = await backend.open();
  const schema = `${store.schema}_mirror`;
  const hooks = createPayhooks<ApiClient>({ database: store, logger: silent, api, worker: { pollIntervalMs: 50 } });
  try {
    await registerMirror(hooks, { schema, eventTypes });
    const rows = async (table: string) =>
      (await sql<Record<string, unknown>>`select * from ${sql.id(schema, table)} order by id`.execute(store.db.withoutPlugins())).rows;
    await work({ store, hooks, schema, rows });
  } finally {
    // The instance does not close a database it was given.
    await hooks.stop();
    await dropMirrorSchema(store, schema);
    await dispose(store);
  }
}

async function allDone(store: PayhooksDatabase, count: number): Promise<void> {
  await waitFor(async () => (await listEvents(store, { status: 'done' })).length === count, `${count} events done`, 30_000);
}

/**
 * An API client on the simulator that counts the reads the service answered, by path. An attempt that never got an
 * answer is not a read: a keep-alive connection the simulator closed while the machine held the event loop (a loaded
 * machine, or PGlite's work) answers ECONNRESET, and the client sends the same GET again.
 */
function countingClient(simulator: Simulator): { client: ApiClient; gets: Map<string, number> } {
  const gets = new Map<string, number>();
  const client = createClient({
    apiKey: 'sk_test_sink',
    environment: simulator.url,
    rateLimit: false,
    fetch: async (input, init) => {
      const response = await globalThis.fetch(input, init);
      const url = new URL(input instanceof Request ? input.url : String(input));
      if ((init?.method ?? 'GET') === 'GET') gets.set(url.pathname, (gets.get(url.pathname) ?? 0) + 1);
      return response;
    },
  });
  return { client, gets };
}

describe.each(backends.filter((b) => b.available))('the mirror sink ($name)', (backend) => {
  it('several pending events of one invoice collapse into one read of its current state', { timeout: 60_000 }, async () => {
    const simulator = await startSimulator({ logger: silent });
    try {
      const { client, gets } = countingClient(simulator);
      const customer = await client.customers.create({ username: 'collapse' });
      const invoice = await client.invoices.create({
        customerId: customer.id,
        dueDate: '2026-12-01T06:00:00Z',
        items: [{ quantity: 1, concept: { displayName: 'Rent', amount: 500_000, currency: 'MXN' } }],
      });
      await client.invoices.markPaid(invoice.id);
      await withMirror(backend, client, async ({ store, hooks, rows }) => {
        // Five events of the invoice wait in the inbox before the worker starts (as after an outage).
        const events = ['INVOICE_CREATED', 'INVOICE_UPDATED', 'INVOICE_UPDATED', 'INVOICE_UPDATED', 'INVOICE_PAID_OTHER'].map((type, i) =>
          exampleEvent(type as 'INVOICE_CREATED', { eventId: `evt_collapse_${i}`, data: { invoiceId: invoice.id } }),
        );
        await putEvents(store, events);
        gets.clear();
        await hooks.start();
        await allDone(store, 5);
        expect(gets.get(`/v1/invoices/${invoice.id}`)).toBe(1);
        const [row] = await rows('invoices');
        expect(row).toMatchObject({ id: invoice.id, status: 'paid', source: 'api', customer_id: customer.id });
        // The last event to touch it is recorded even though its read was skipped.
        expect(events.map((e) => e.eventId)).toContain(row!.last_event_id);
      });
    } finally {
      await simulator.close();
    }
  });

  it("without an API key mirrors the events' own snapshots and says so in `source`", { timeout: 60_000 }, async () => {
    await withMirror(backend, undefined, async ({ store, hooks, rows }) => {
      const created = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_c1', data: { id: 'cus_snap', username: 'snap' } });
      const archived = exampleEvent('CUSTOMER_ARCHIVED', { eventId: 'evt_c2', data: { id: 'cus_snap', username: 'snap' } });
      const method = exampleEvent('PAYMENT_METHOD_CREATED', { eventId: 'evt_pm' });
      // The archive is stored first: the late CUSTOMER_CREATED must not un-archive the customer.
      await putEvents(store, [archived, created, method]);
      await hooks.start();
      await allDone(store, 3);
      expect(await rows('customers')).toEqual([
        expect.objectContaining({
          id: 'cus_snap',
          username: 'snap',
          archived: true,
          source: 'event',
          last_event_type: 'CUSTOMER_ARCHIVED',
        }),
      ]);
      expect(await rows('payment_methods')).toEqual([
        expect.objectContaining({ id: method.data.paymentMethod.id, customer_id: method.data.customer.id, source: 'event' }),
      ]);
    });
  });

  it('a resource the API does not know is mirrored from the event; an unknown event type is done with nothing written', {
    timeout: 60_000,
  }, async () => {
    const simulator = await startSimulator({ logger: silent });
    try {
      const { client } = countingClient(simulator);
      await withMirror(backend, client, async ({ store, hooks, rows }) => {
        const ghost = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_ghost', data: { id: 'cus_not_in_api', username: 'ghost' } });
        await putEvents(store, [ghost, { eventId: 'evt_future', eventType: 'LOYALTY_POINTS_GRANTED', data: { points: 5 } }]);
        await hooks.start();
        await allDone(store, 2);
        expect(await rows('customers')).toEqual([expect.objectContaining({ id: 'cus_not_in_api', source: 'event' })]);
      });
    } finally {
      await simulator.close();
    }
  });

  it('with eventTypes, mirrors only those types; the rest stay ignored for it', { timeout: 60_000 }, async () => {
    await withMirror(
      backend,
      undefined,
      async ({ store, hooks, rows }) => {
        await putEvents(store, [
          exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_in' }),
          exampleEvent('SUBSCRIPTION_CREATED', { eventId: 'evt_out' }),
        ]);
        await hooks.start();
        await waitFor(
          async () => (await listEvents(store)).every((e) => e.status === 'done' || e.status === 'ignored'),
          'both finished',
          30_000,
        );
        expect((await rows('customers')).length).toBe(1);
        expect(await rows('subscriptions')).toEqual([]);
        expect(Object.fromEntries((await listEvents(store)).map((e) => [e.eventId, e.status]))).toEqual({
          evt_in: 'done',
          evt_out: 'ignored',
        });
      },
      ['CUSTOMER_CREATED'],
    );
  });
});
