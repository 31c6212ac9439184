import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent, storeEvent } from '../../src/store/inbox.js';
import { pruneCutoff, pruneEvents, SENDER_RETRY_HORIZON_MS } from '../../src/store/maintenance.js';
import { dropHistoryPartitions } from '../../src/store/history-partitions.js';
import { migrate, readMigrations } from '../../src/store/migrate.js';
import { backends, dispose } from '../helpers/stores.js';
import { backdate, setState } from '../helpers/inbox.js';
import { waitFor } from '../helpers/wait.js';

const secret = 'ledger-secret';
const scheme = createDefaultScheme({ secrets: secret });
const DAY_MS = 86_400_000;

function signed(body: string) {
  const rawBody = Buffer.from(body, 'utf8');
  return { method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody };
}

describe.each(backends)('deduplication ledger on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'history pruned well inside the retry horizon: a redelivery of a pruned event is a duplicate and its handlers do not run',
    { timeout: 60_000 },
    async () => {
      store = await backend.open();
      const s = store;
      hooks = createPayhooks({ database: s, secret, logger: pino({ level: 'silent' }), worker: { pollIntervalMs: 50 } });
      const runs: string[] = [];
      hooks.on('INVOICE_PAID', async (event) => void runs.push(event.eventId));
      await hooks.start();

      const body = JSON.stringify(exampleEvent('INVOICE_PAID', { eventId: 'evt_pruned' }));
      const first = await hooks.receive(signed(body));
      expect(first.status).toBe(200);
      expect(JSON.parse(first.body)).toEqual({ received: true });
      await waitFor(async () => (await getEvent(s, 'evt_pruned'))?.status === 'done', 'evt_pruned done');

      // Two days old, inside the sender's 4 d 7 h: retention of a day drops its partition.
      await backdate(s, ['evt_pruned'], sql`now() - interval '2 days'`);
      expect(2 * DAY_MS).toBeLessThan(SENDER_RETRY_HORIZON_MS);
      expect(await pruneEvents(s, DAY_MS)).toBe(1);
      expect(await getEvent(s, 'evt_pruned')).toBeUndefined();

      const again = await hooks.receive(signed(body));
      expect(again.status).toBe(200);
      expect(JSON.parse(again.body)).toEqual({ received: true, duplicate: true });
      // Given every chance to run it again: another event after it is handled, the pruned one is not.
      const later = JSON.stringify(exampleEvent('INVOICE_PAID', { eventId: 'evt_later' }));
      expect((await hooks.receive(signed(later))).status).toBe(200);
      await waitFor(async () => (await getEvent(s, 'evt_later'))?.status === 'done', 'evt_later done');
      expect(runs).toEqual(['evt_pruned', 'evt_later']);
      expect(await getEvent(s, 'evt_pruned')).toBeUndefined();
      const ledger = await s.db.selectFrom('event_ledger').selectAll().where('event_id', '=', 'evt_pruned').executeTakeFirstOrThrow();
      expect(ledger.deliveries).toBe(2);
    },
  );

  it.skipIf(!backend.available)("counts deliveries in the ledger, shown as the event's deliveries, and hashes the body", async () => {
    store = await backend.open();
    const rawBody = '\ufeff{"eventId":"evt_h","eventType":"X","data":{}}';
    const event = { eventId: 'evt_h', eventType: 'X', resourceKey: null, rawBody, headers: {} };
    await storeEvent(store, event);
    expect(await storeEvent(store, event)).toEqual({ inserted: false, deliveries: 2 });
    expect((await getEvent(store, 'evt_h'))?.deliveries).toBe(2);
    const { rows } = await sql<{ matches: boolean }>`
      select body_sha256 = sha256(convert_to(${rawBody}, 'UTF8')) as matches from ${sql.id(store.schema, 'event_ledger')}`.execute(
      store.db,
    );
    expect(rows).toEqual([{ matches: true }]);
  });

  it.skipIf(!backend.available)('prune accepts any age of 0 or more and refuses a negative one', async () => {
    store = await backend.open();
    await expect(pruneCutoff(store, -1)).rejects.toThrow(/at least 0/);
    await storeEvent(store, { eventId: 'evt_0', eventType: 'X', resourceKey: null, rawBody: '{}', headers: {} });
    await setState(store, 'evt_0', 'done', { received_at: sql`now() - interval '1 day'` });
    const preview = await dropHistoryPartitions(store, { before: await pruneCutoff(store, 0), dryRun: true });
    expect(preview.dropped.reduce((sum, p) => sum + p.events, 0)).toBe(1);
  });

  it.skipIf(!backend.available)(
    'migration 006 fills the ledger from the existing inbox; a row an earlier receiver wrote without one is still a duplicate',
    async () => {
      store = await backend.open({ migrated: false });
      const files = readMigrations();
      const before = files.filter((file) => file.name < '006');
      await migrate(store, before);
      const inbox = sql.id(store.schema, 'inbox_events');
      await sql`insert into ${inbox} (event_id, event_type, raw_body, deliveries, received_at)
                values ('old_1', 'X', '{"a":1}', 3, '2025-01-01T00:00:00Z'), ('old_2', 'X', '{"a":2}', 1, '2025-01-02T00:00:00Z')`.execute(
        store.db,
      );
      await migrate(store, files);
      const ledger = await store.db
        .selectFrom('event_ledger')
        .select(['event_id', 'deliveries', 'first_received_at'])
        .orderBy('event_id')
        .execute();
      expect(ledger.map((row) => [row.event_id, row.deliveries, row.first_received_at.toISOString()])).toEqual([
        ['old_1', 3, '2025-01-01T00:00:00.000Z'],
        ['old_2', 1, '2025-01-02T00:00:00.000Z'],
      ]);
      // A receiver of a version before migration 009 names a unique eventId the partitioned history no longer has: its
      // insert is refused (the sender gets a 503 and retries), so it cannot store a second copy beside the ledger.
      await expect(
        sql`insert into ${inbox} (event_id, event_type, raw_body) values ('old_1', 'X', '{}') on conflict (event_id) do nothing`.execute(
          store.db,
        ),
      ).rejects.toThrow(/no unique or exclusion constraint/);
      const repeat = await storeEvent(store, { eventId: 'old_1', eventType: 'X', resourceKey: null, rawBody: '{"a":1}', headers: {} });
      expect(repeat.inserted).toBe(false);
    },
  );
});

describe.skipIf(!backends[0]!.available)('a long migration on the real server', () => {
  it("is not cut short by the pool's query timeout, nor by the server's statement timeout that follows it", {
    timeout: 60_000,
  }, async () => {
    const { openDatabase } = await import('../../src/store/database.js');
    const { migrateApp } = await import('../../src/store/migrate.js');
    const { pgUrl, uniqueSchema } = await import('../helpers/pg.js');
    const store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('slow'), queryTimeoutMs: 300 });
    try {
      await expect(sql`select pg_sleep(1)`.execute(store.db)).rejects.toThrow(/Query read timeout/);
      const report = await migrateApp(store, [{ name: '001_slow.sql', sql: 'select pg_sleep(2);', checksum: 'slow' }], {
        appSchema: store.schema,
      });
      expect(report.applied).toEqual(['001_slow.sql']);
    } finally {
      await dispose(store);
    }
  });
});
