import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { releaseQuarantined } from '../../src/receiver/release-quarantined.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { sinksSchema } from '../../src/sync/sink-registry.js';
import { registerSinks } from '../../src/sync/sinks.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

// PostgreSQL's text holds no U+0000 and jsonb refuses `\u0000` and lone surrogates; the service may send all three
// inside a JSON string. The mirror stores each as U+FFFD (docs/mirror.md#what-the-columns-hold), whatever the backend,
// and the receiver keeps the body exactly as sent.

const silent = pino({ level: 'silent' });
const SECRET = 'mirror-nul-secret';
const scheme = createDefaultScheme({ secrets: SECRET });

type Row = Record<string, unknown>;

async function withMirror(
  backend: (typeof backends)[number],
  work: (ctx: {
    store: PayhooksDatabase;
    hooks: Payhooks<ApiClient>;
    rows: (table: string) => Promise<Row[]>;
    notices: unknown[];
  }) => Promise<void>,
): Promise<void> {
  const store = await backend.open();
  const schema = `${store.schema}_mirror`;
  const channel = `nul_${store.schema.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
  const notices: unknown[] = [];
  const unlisten = await store.listen(channel, (payload) => notices.push(JSON.parse(payload)));
  const hooks = createPayhooks<ApiClient>({ secret: SECRET, database: store, logger: silent, worker: { pollIntervalMs: 50 } });
  try {
    await registerMirror(hooks, { schema });
    await registerSinks(
      hooks,
      { forward: [], brokers: [], connectors: [], sinks: sinksSchema.parse([{ kind: 'pg-notify', channel }]) },
      { mirrorSchema: schema, logger: silent },
    );
    const rows = async (table: string) =>
      (await sql<Row>`select * from ${sql.id(schema, table)} order by id`.execute(store.db.withoutPlugins())).rows;
    await work({ store, hooks, rows, notices });
  } finally {
    await hooks.stop();
    await unlisten();
    await dropMirrorSchema(store, schema);
    await dispose(store);
  }
}

/** Posts `body` to the receiver, signed as the service signs it. */
async function deliver(hooks: Payhooks<ApiClient>, body: string) {
  const rawBody = Buffer.from(body, 'utf8');
  return hooks.receive({ method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody });
}

/** Waits until the event has finished or failed an attempt (so that a failing mirror fails fast), and returns it. */
async function settled(store: PayhooksDatabase, eventId: string) {
  await waitFor(
    async () => {
      const event = await getEvent(store, eventId);
      return event !== undefined && (!['pending', 'processing'].includes(event.status) || event.lastError !== null);
    },
    `${eventId} run once`,
    30_000,
  );
  return (await getEvent(store, eventId))!;
}

describe.each(backends.filter((b) => b.available))('U+0000 in event data ($name)', (backend) => {
  it('a signed customer event with "Ada\\u0000Lovelace" is acknowledged, kept byte for byte, mirrored with U+FFFD and ends done', {
    timeout: 60_000,
  }, async () => {
    await withMirror(backend, async ({ store, hooks, rows }) => {
      const event = exampleEvent('CUSTOMER_CREATED', {
        eventId: 'evt_nul_customer',
        // A lone surrogate is refused by jsonb as \u0000 is: the same rule stores both.
        data: { name: 'Ada\u0000Lovelace', username: 'ada\ud800', meta: { 'crm\u0000Id': 'CRM\u0000-1042' } },
      });
      const body = JSON.stringify(event);
      expect(body).toContain('"name":"Ada\\u0000Lovelace"');
      const sent = Buffer.from(body, 'utf8');

      const answer = await deliver(hooks, body);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ received: true });

      // The stored body is the sent bytes, so its signature can still be checked against it later.
      const stored = await getEvent(store, event.eventId);
      expect(Buffer.compare(Buffer.from(stored!.rawBody, 'utf8'), sent)).toBe(0);
      expect(Object.keys(stored!.headers)).toContain('x-webhook-signature');
      expect(scheme.verify({ rawBody: Buffer.from(stored!.rawBody, 'utf8'), headers: stored!.headers })).toMatchObject({
        matchedSecretIndex: 0,
      });
      const ledger = await sql<{ hash: Buffer | Uint8Array }>`
        select body_sha256 as hash from ${sql.id(store.schema, 'event_ledger')} where event_id = ${event.eventId}`.execute(store.db);
      expect(Buffer.from(ledger.rows[0]!.hash).toString('hex')).toBe(createHash('sha256').update(sent).digest('hex'));

      await hooks.start();
      const done = await settled(store, event.eventId);
      expect({ status: done.status, lastError: done.lastError }).toEqual({ status: 'done', lastError: null });
      const [customer] = await rows('customers');
      expect(customer).toMatchObject({
        id: event.data.id,
        name: 'Ada\ufffdLovelace',
        username: 'ada\ufffd',
        meta: { 'crm\ufffdId': 'CRM\ufffd-1042' },
        last_event_id: event.eventId,
      });
      expect((customer!.data as Row).name).toBe('Ada\ufffdLovelace');
      expect((customer!.data as Row).meta).toEqual({ 'crm\ufffdId': 'CRM\ufffd-1042' });
    });
  });

  it('an invoice event with U+0000 in its description and an item is mirrored, items included, and ends done', {
    timeout: 60_000,
  }, async () => {
    await withMirror(backend, async ({ store, hooks, rows }) => {
      const base = exampleEvent('INVOICE_CREATED');
      const event = exampleEvent('INVOICE_CREATED', {
        eventId: 'evt_nul_invoice',
        data: {
          description: 'Rent\u0000November',
          invoice: { ...base.data.invoice, items: [{ ...base.data.invoice.items[0]!, description: 'Tuition\u0000' }] },
        },
      });
      expect((await deliver(hooks, JSON.stringify(event))).status).toBe(200);
      await hooks.start();
      const done = await settled(store, event.eventId);
      expect({ status: done.status, lastError: done.lastError }).toEqual({ status: 'done', lastError: null });
      expect(await rows('invoices')).toMatchObject([{ id: event.data.invoiceId, description: 'Rent\ufffdNovember' }]);
      const items = await sql<Row>`select description from ${sql.id(`${store.schema}_mirror`, 'invoice_items')}`.execute(
        store.db.withoutPlugins(),
      );
      expect(items.rows).toEqual([{ description: 'Tuition\ufffd' }]);
    });
  });

  it('a quarantined delivery released --unordered with U+0000 in its data and its resource id ends done', { timeout: 60_000 }, async () => {
    await withMirror(backend, async ({ store, hooks, rows, notices }) => {
      // A resource id with U+0000 cannot be the ordering key: quarantined as unstorable_resource.
      const event = exampleEvent('CUSTOMER_UPDATED', {
        eventId: 'evt_nul_quarantined',
        data: { id: 'cus_\u0000x', name: 'Ada\u0000Lovelace' },
      });
      const sent = Buffer.from(JSON.stringify(event), 'utf8');
      const answer = await deliver(hooks, sent.toString('utf8'));
      expect(answer.status).toBe(400);
      const number = /#(\d+)\./.exec(JSON.parse(answer.body).error.message)?.[1];
      expect(number).toMatch(/^\d+$/);

      expect(await releaseQuarantined(store, number!, { unordered: true })).toEqual({
        eventId: event.eventId,
        queued: true,
        droppedHeaders: [],
      });
      const released = await getEvent(store, event.eventId);
      expect(released).toMatchObject({ resourceKey: null, status: 'pending' });
      expect(Buffer.compare(Buffer.from(released!.rawBody, 'utf8'), sent)).toBe(0);

      await hooks.start();
      const done = await settled(store, event.eventId);
      expect({ status: done.status, lastError: done.lastError }).toEqual({ status: 'done', lastError: null });
      expect(await rows('customers')).toMatchObject([{ id: 'cus_\ufffdx', name: 'Ada\ufffdLovelace', last_event_id: event.eventId }]);
      // The change notice names the row as the mirror holds it.
      await waitFor(() => notices.length === 1, 'one change notice');
      expect(notices).toEqual([{ account: 'default', kind: 'customer', id: 'cus_\ufffdx', eventId: event.eventId }]);
    });
  });
});
