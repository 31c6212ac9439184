import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent, storeEvent } from '../../src/store/inbox.js';
import { resourceKeyOf } from '../../src/events/index.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { MIRROR_MIGRATIONS_DIR, migrateMirror, readMigrations } from '../../src/store/migrate.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { ensureMirrorAccounts } from '../../src/sync/mirror/accounts.js';
import { customerFromEvent, STATE_RANK } from '../../src/sync/mirror/states.js';
import { writeMirrorState } from '../../src/sync/mirror/write.js';
import { verifyMirror } from '../../src/sync/verify/verify-mirror.js';
import { reconcile } from '../../src/sync/reconcile.js';
import { ensureAccounts } from '../../src/store/accounts.js';
import { freePort } from '../helpers/servers.js';
import { putEvent } from '../helpers/inbox.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

// Issue 48: the mirror keyed by (account, id), its own accounts table that the database enforces, and backfill and
// verify per account, each with that account's API client. Two simulators stand for two organizations.

const silent = pino({ level: 'silent' });

const customer = (id: string, username: string, rank: (typeof STATE_RANK)[keyof typeof STATE_RANK] = STATE_RANK.created) =>
  customerFromEvent({ ...exampleEvent('CUSTOMER_CREATED').data, id, username }, rank, false);

describe.each(backends.filter((b) => b.available))('the mirror per account ($name)', (backend) => {
  let store: PayhooksDatabase;
  let schema: string;
  let mirrors = 0;
  beforeAll(async () => {
    store = await backend.open();
  });
  afterAll(async () => {
    await dispose(store);
  });
  const db = () => store.db.withoutPlugins();

  /** A fresh mirror schema for one test, dropped afterwards. */
  async function withMirror(work: () => Promise<void>, files = readMigrations(MIRROR_MIGRATIONS_DIR)): Promise<void> {
    schema = `${store.schema}_mirror${++mirrors}`;
    await migrateMirror(store, schema, files);
    try {
      await work();
    } finally {
      await dropMirrorSchema(store, schema);
    }
  }

  async function rows(table: string): Promise<Record<string, unknown>[]> {
    const { rows } = await sql<Record<string, unknown>>`
      select account, id, username from ${sql.id(schema, table)} order by account, id`.execute(db());
    return rows;
  }

  it('two accounts with the same resource id get two rows, each written and guarded on its own', async () => {
    await withMirror(async () => {
      expect(await ensureMirrorAccounts(db(), schema, ['gym-north', 'gym-south'])).toEqual({
        added: ['gym-north', 'gym-south'],
        removed: ['default'],
        kept: [],
      });
      expect(await writeMirrorState(db(), schema, 'gym-north', customer('cus_same', 'north'), null)).toBe(true);
      expect(await writeMirrorState(db(), schema, 'gym-south', customer('cus_same', 'south'), null)).toBe(true);
      expect(await rows('customers')).toEqual([
        { account: 'gym-north', id: 'cus_same', username: 'north' },
        { account: 'gym-south', id: 'cus_same', username: 'south' },
      ]);
      // The guard compares with the row of the same account only: a later step of south's replaces south's row alone,
      // and an earlier one of north's does not reach it.
      await writeMirrorState(db(), schema, 'gym-north', customer('cus_same', 'north2', STATE_RANK.final), null);
      expect(await writeMirrorState(db(), schema, 'gym-south', customer('cus_same', 'south2', STATE_RANK.changed), null)).toBe(true);
      expect((await rows('customers')).map((row) => row.username)).toEqual(['north2', 'south2']);
    });
  });

  it('the database refuses a row for an account not in the mirror accounts table, and keeps an account that holds rows', async () => {
    await withMirror(async () => {
      await ensureMirrorAccounts(db(), schema, ['gym-north']);
      // A direct SQL insert, as any code that skipped the application's checks would write it.
      const insert = sql`insert into ${sql.id(schema, 'customers')} (account, id, data, source, state_at, state_rank, state_hash)
        values ('gym-west', 'cus_1', '{}', 'api', now(), 3, 'x')`;
      await expect(insert.execute(db())).rejects.toMatchObject({ code: '23503' });
      await expect(writeMirrorState(db(), schema, 'gym-west', customer('cus_1', 'w'), null)).rejects.toMatchObject({ code: '23503' });
      // Without an account, the column default: 'default', removed above since unconfigured and empty.
      await expect(
        sql`insert into ${sql.id(schema, 'payments')} (id, amount, currency, data, source, state_at, state_rank, state_hash)
          values ('pay_1', 1, 'MXN', '{}', 'api', now(), 3, 'x')`.execute(db()),
      ).rejects.toMatchObject({ code: '23503' });
      expect(await rows('customers')).toEqual([]);

      await writeMirrorState(db(), schema, 'gym-north', customer('cus_1', 'n'), null);
      // gym-north leaves the configuration: its rows keep it (and stay readable); an empty one would go.
      expect(await ensureMirrorAccounts(db(), schema, ['gym-south'])).toEqual({ added: ['gym-south'], removed: [], kept: ['gym-north'] });
      await expect(ensureMirrorAccounts(db(), schema, ['Gym North'])).rejects.toThrow(/"Gym North" are not valid/);
    });
  });

  it('existing rows of a mirror at migration 002 belong to the default account after 003, items and cursors included', async () => {
    const all = readMigrations(MIRROR_MIGRATIONS_DIR);
    await withMirror(
      async () => {
        const invoice = exampleEvent('INVOICE_CREATED').data;
        await sql`insert into ${sql.id(schema, 'invoices')} (id, status, amount, currency, is_paid, data, source, state_at, state_rank, state_hash)
          values ('inv_old', 'open', 10, 'MXN', false, ${JSON.stringify(invoice)}, 'event', now(), 1, 'h')`.execute(db());
        await sql`insert into ${sql.id(schema, 'invoice_items')} (invoice_id, position, amount, currency, quantity)
          values ('inv_old', 0, 10, 'MXN', 1)`.execute(db());
        await sql`insert into ${sql.id(schema, 'backfill_cursors')} (resource, since_key, next_skip) values ('customers', '', 300)`.execute(
          db(),
        );
        const report = await migrateMirror(store, schema, all);
        expect(report.applied).toEqual(['003_accounts.sql']);
        const { rows: found } = await sql<{ t: string; account: string }>`
          select 'invoices' as t, account from ${sql.id(schema, 'invoices')}
          union all select 'items', account from ${sql.id(schema, 'invoice_items')}
          union all select 'cursors', account from ${sql.id(schema, 'backfill_cursors')} order by 1`.execute(db());
        expect(found).toEqual([
          { t: 'cursors', account: 'default' },
          { t: 'invoices', account: 'default' },
          { t: 'items', account: 'default' },
        ]);
        // The items follow their invoice of the same account (the foreign key is (account, invoice_id) now).
        await sql`delete from ${sql.id(schema, 'invoices')} where account = 'default' and id = 'inv_old'`.execute(db());
        const { rows: items } = await sql`select 1 from ${sql.id(schema, 'invoice_items')}`.execute(db());
        expect(items).toEqual([]);
      },
      all.filter((file) => file.name < '003'),
    );
  });

  it('a handler limited to other accounts is not due: it does not run, and events show lists no run of it', async () => {
    const hooks = createPayhooks({ database: store, logger: silent, worker: { pollIntervalMs: 50 } });
    const ran: string[] = [];
    // Until the claim carries the account (migration 018), every stored event is the default account's.
    hooks.on('CUSTOMER_CREATED', () => void ran.push('north-only'), { name: 'forward:north-only', accounts: ['north'] });
    hooks.on('CUSTOMER_CREATED', () => void ran.push('default'), { name: 'forward:default', accounts: ['default'] });
    hooks.on('CUSTOMER_CREATED', () => void ran.push('every'), { name: 'forward:every' });
    const event = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_filtered_sink', data: { id: 'cus_f', username: 'f' } });
    await putEvent(store, event);
    await hooks.start();
    try {
      await waitFor(async () => (await getEvent(store, event.eventId))?.status === 'done', 'the event done');
    } finally {
      await hooks.stop();
    }
    expect(ran).toEqual(['default', 'every']);
    const shown = await getEvent(store, event.eventId);
    expect(shown?.handlerAttempts.map((run) => run.handler)).toEqual(['forward:default', 'forward:every']);
  });

  it('the mirror sink writes each event under its account: one customer id in two accounts is two rows', async () => {
    const hooks = createPayhooks<ApiClient>({
      database: store,
      logger: silent,
      worker: { pollIntervalMs: 50 },
      accounts: [
        { id: 'north', secret: 'whsec_north' },
        { id: 'south', secret: 'whsec_south' },
      ],
    });
    schema = `${store.schema}_mirror${++mirrors}`;
    try {
      await registerMirror(hooks, { schema });
      const { rows: accounts } = await sql`select id from ${sql.id(schema, 'accounts')} order by id`.execute(db());
      expect(accounts).toEqual([{ id: 'north' }, { id: 'south' }]);
      for (const [account, username] of [
        ['north', 'in-north'],
        ['south', 'in-south'],
      ] as const) {
        const envelope = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_same_id', data: { id: 'cus_twice', username } });
        const rawBody = JSON.stringify(envelope);
        await storeEvent(store, {
          account,
          eventId: envelope.eventId,
          eventType: envelope.eventType,
          resourceKey: resourceKeyOf(envelope.eventType, envelope.data),
          rawBody,
          headers: {},
        });
      }
      await hooks.start();
      await waitFor(async () => (await rows('customers')).length === 2, 'two mirror rows');
      expect(await rows('customers')).toEqual([
        { account: 'north', id: 'cus_twice', username: 'in-north' },
        { account: 'south', id: 'cus_twice', username: 'in-south' },
      ]);
    } finally {
      await hooks.stop();
      await dropMirrorSchema(store, schema);
    }
  });

  describe('backfill and verify per account, each through its own API client', () => {
    let north: Simulator;
    let south: Simulator;
    let northApi: ApiClient;
    let southApi: ApiClient;
    const northIds: string[] = [];
    const southIds: string[] = [];
    beforeAll(async () => {
      north = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      south = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      northApi = createClient({ apiKey: 'sk_test_north', environment: north.url, rateLimit: false });
      southApi = createClient({ apiKey: 'sk_test_south', environment: south.url, rateLimit: false });
      for (let i = 0; i < 3; i++) northIds.push((await northApi.customers.create({ username: `north${i}` })).id);
      for (let i = 0; i < 2; i++) southIds.push((await southApi.customers.create({ username: `south${i}` })).id);
    }, 60_000);
    afterAll(async () => {
      await north?.close();
      await south?.close();
    });

    it('backfill writes each account the records of its own client; verify --account finds a row missing in that account only', {
      timeout: 120_000,
    }, async () => {
      await withMirror(async () => {
        await ensureMirrorAccounts(db(), schema, ['north', 'south']);
        const a = await runBackfill({ store, api: northApi, account: 'north', mirrorSchema: schema, resources: ['customers'] });
        const b = await runBackfill({ store, api: southApi, account: 'south', mirrorSchema: schema, resources: ['customers'] });
        expect([a.account, a.resources[0]!.written, b.account, b.resources[0]!.written]).toEqual(['north', 3, 'south', 2]);
        const { rows: mirrored } = await sql<{ account: string; id: string }>`
          select account, id from ${sql.id(schema, 'customers')} order by account, id`.execute(db());
        expect(mirrored).toEqual([
          ...[...northIds].sort().map((id) => ({ account: 'north', id })),
          ...[...southIds].sort().map((id) => ({ account: 'south', id })),
        ]);
        const { rows: cursors } = await sql`select account, resource, next_skip from ${sql.id(schema, 'backfill_cursors')}
          order by account`.execute(db());
        expect(cursors).toEqual([
          { account: 'north', resource: 'customers', next_skip: 3 },
          { account: 'south', resource: 'customers', next_skip: 2 },
        ]);

        // north loses a row while south holds a row of the same id: north's pass must not take south's for its own.
        const gone = northIds[1]!;
        await sql`update ${sql.id(schema, 'customers')} set account = 'south' where account = 'north' and id = ${gone}`.execute(db());
        const verifyNorth = await verifyMirror({ store, api: northApi, account: 'north', mirrorSchema: schema, resources: ['customers'] });
        expect(verifyNorth.account).toBe('north');
        expect(verifyNorth.resources[0]).toMatchObject({ checked: 3, finished: true });
        expect(verifyNorth.drift.map((d) => [d.id, d.kind])).toEqual([[gone, 'missing']]);
        // south's pass reads south's service: the moved row is extra there, and nothing of north's is missing.
        const verifySouth = await verifyMirror({ store, api: southApi, account: 'south', mirrorSchema: schema, resources: ['customers'] });
        expect(verifySouth.resources[0]).toMatchObject({ checked: 2, finished: true });
        expect(verifySouth.drift.map((d) => [d.id, d.kind])).toEqual([[gone, 'extra']]);
        // Findings are kept per account.
        const { rows: findings } = await sql`select account, id, kind from ${sql.id(schema, 'verify_findings')}
          order by account`.execute(db());
        expect(findings).toEqual([
          { account: 'north', id: gone, kind: 'missing' },
          { account: 'south', id: gone, kind: 'extra' },
        ]);

        // Repair for north reads north's API and writes north's row back.
        const repaired = await verifyMirror({
          store,
          api: northApi,
          account: 'north',
          mirrorSchema: schema,
          resources: ['customers'],
          repair: true,
        });
        expect(repaired.drift.map((d) => [d.id, d.kind, d.repaired])).toEqual([[gone, 'missing', true]]);
        const { rows: both } = await sql`select account from ${sql.id(schema, 'customers')} where id = ${gone} order by account`.execute(
          db(),
        );
        expect(both).toEqual([{ account: 'north' }, { account: 'south' }]);
      });
    });

    it('reconcile of an account counts an event as stored only when that account holds it', { timeout: 60_000 }, async () => {
      const port = await freePort();
      const sender = await startSimulator({ logger: silent, timeScale: 1_000_000, rateLimitPerMinute: 1_000_000 });
      try {
        const api = createClient({ apiKey: 'sk_test_north_history', environment: sender.url, rateLimit: false });
        await api.webhooks.create({
          url: `http://127.0.0.1:${port}/webhooks/north`,
          description: 'north, down',
          enabledEvents: ['CUSTOMER_CREATED'],
        });
        await api.customers.create({ username: 'missed' });
        await waitFor(() => sender.webhookEvents().some((record) => record.status === 'failed'), 'the sender to give up');
        const [record] = sender.webhookEvents();
        // The same eventId reached the inbox, but as south's: north's event is still missing.
        await ensureAccounts(store, [{ id: 'default' }, { id: 'north' }, { id: 'south' }]);
        const envelope = exampleEvent('CUSTOMER_CREATED', { eventId: record!.eventId, data: { id: 'cus_x', username: 'x' } });
        await storeEvent(store, {
          account: 'south',
          eventId: envelope.eventId,
          eventType: envelope.eventType,
          resourceKey: resourceKeyOf(envelope.eventType, envelope.data),
          rawBody: JSON.stringify(envelope),
          headers: {},
        });
        const north = await reconcile({ store, api, account: 'north', dryRun: true });
        expect([north.account, north.listed, north.missing.map((m) => m.eventId)]).toEqual(['north', 1, [record!.eventId]]);
        const south = await reconcile({ store, api, account: 'south', dryRun: true });
        expect([south.account, south.listed, south.missing]).toEqual(['south', 1, []]);
      } finally {
        await sender.close();
      }
    });

    it('an account missing from the mirror accounts table is refused with a message naming it', async () => {
      await withMirror(async () => {
        await ensureMirrorAccounts(db(), schema, ['north']);
        await expect(
          runBackfill({ store, api: southApi, account: 'south', mirrorSchema: schema, resources: ['customers'] }),
        ).rejects.toThrow(/account "south" is not among the mirror's accounts/);
      });
    });
  });
});
