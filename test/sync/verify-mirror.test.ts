import { sql } from 'kysely';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { parseSample, parseVerifyResources, verifyMirror } from '../../src/sync/verify/verify-mirror.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { exampleEvent } from '../../src/events/examples.js';
import { UnreadableEventsError } from '../../src/sync/verify/stored-names.js';
import { backends, dispose } from '../helpers/stores.js';

const silent = pino({ level: 'silent' });

describe('verify options', () => {
  it('parses --resource and --sample, and names the known resources or the bad value', () => {
    expect(parseVerifyResources(' invoices,payments,invoices,REFUNDS ')).toEqual(['invoices', 'payments', 'refunds']);
    expect(() => parseVerifyResources('charges')).toThrow(
      /"charges" cannot be verified: the known ones are customers, invoices, payments, refunds/,
    );
    expect(() => parseVerifyResources(',')).toThrow(/--resource names no resource/);
    expect(parseSample('25')).toBe(25);
    for (const bad of ['0', '-3', '2.5', 'ten', '10001']) expect(() => parseSample(bad)).toThrow(JSON.stringify(bad));
  });
});

describe.each(backends)('verifyMirror on $name', (backend) => {
  it.skipIf(!backend.available)(
    'stopped after its first page it resumes there and still reports what the first run found; extras, --since and --sample',
    { timeout: 120_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      const store = await backend.open();
      const mirrorSchema = `${store.schema}_mirror`;
      const db = store.db.withoutPlugins();
      try {
        const api = createClient({ apiKey: 'sk_test_vm', environment: simulator.url, rateLimit: false });
        const customers: string[] = [];
        for (let i = 0; i < 250; i++) customers.push((await api.customers.create({ username: `vm${i}` })).id);
        await runBackfill({ store, api, mirrorSchema, resources: ['customers'] });

        // A drift on the first page, one on the third, and a row the service never had.
        await sql`delete from ${sql.id(mirrorSchema, 'customers')} where id in (${customers[5]!}, ${customers[230]!})`.execute(db);
        await sql`insert into ${sql.id(mirrorSchema, 'customers')} (id, username, data, source, state_at, state_rank, state_hash)
          values ('cus_ghost', 'ghost', '{}', 'api', now(), 3, 'x')`.execute(db);

        const controller = new AbortController();
        const first = await verifyMirror({
          store,
          api,
          mirrorSchema,
          resources: ['customers'],
          signal: controller.signal,
          onProgress: (event) => {
            if (event.kind === 'step') controller.abort();
          },
        });
        expect(first.stopped).toBe(true);
        expect(first.resources[0]).toMatchObject({ start: 'fresh', checked: 100, finished: false });
        expect(first.drift.map((d) => [d.id, d.kind])).toEqual([[customers[5], 'missing']]);

        const resumed = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'] });
        expect(resumed.resources[0]).toMatchObject({ start: 'resumed', checked: 150, finished: true });
        // Pages 2 and 3, and the ghost read by id: the first page is not read again.
        expect(resumed.resources[0]!.requests).toBe(3);
        expect(resumed.drift.map((d) => [d.id, d.kind]).sort()).toEqual(
          [
            [customers[5], 'missing'],
            [customers[230], 'missing'],
            ['cus_ghost', 'extra'],
          ].sort(),
        );

        // Repair rewrites the missing rows, leaves the extra one alone; a finished pass makes the next a new one.
        const repaired = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'], repair: true });
        expect(repaired.resources[0]!.start).toBe('new-pass');
        expect(
          repaired.drift
            .filter((d) => d.repaired)
            .map((d) => d.id)
            .sort(),
        ).toEqual([customers[5], customers[230]].sort());
        expect(repaired.drift.find((d) => d.id === 'cus_ghost')?.repaired).toBe(false);
        await sql`delete from ${sql.id(mirrorSchema, 'customers')} where id = 'cus_ghost'`.execute(db);
        const clean = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'] });
        expect(clean.drift).toEqual([]);

        // --since: a drifted record that last changed before it is not compared.
        await sql`update ${sql.id(mirrorSchema, 'customers')} set username = 'renamed' where id = ${customers[0]!}`.execute(db);
        const later = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'], since: new Date(Date.now() + 60_000) });
        expect(later.drift).toEqual([]);
        const all = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'] });
        expect(all.drift).toEqual([
          {
            resource: 'customers',
            id: customers[0],
            kind: 'different',
            diff: [{ field: 'username', mirror: 'renamed', api: 'vm0' }],
            repaired: false,
          },
        ]);
        // A row set back in time (an older version of the record, written just now): stale, not different.
        await sql`update ${sql.id(mirrorSchema, 'customers')}
          set username = 'older', created_at = created_at - interval '1 minute', updated_at = updated_at - interval '1 minute'
          where id = ${customers[1]!}`.execute(db);
        const back = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'] });
        expect(back.drift.map((d) => [d.id, d.kind])).toEqual([
          [customers[0], 'different'],
          [customers[1], 'stale'],
        ]);
        await verifyMirror({ store, api, mirrorSchema, resources: ['customers'], repair: true });

        // A resource the API cannot read: a finished event named a refund the mirror has no row for (written by hand, into
        // the partition the store makes when it opens). Its body is all the store keeps: payload is null, as the receiver
        // stores every event now.
        await ensureHistoryPartitions(store);
        const refunded = exampleEvent('PAYMENT_REFUNDED', { eventId: 'evt_refund' });
        refunded.data.refund.id = 'ref_lost';
        await sql`insert into ${sql.id(store.schema, 'inbox_events')} (account, event_id, event_type, raw_body, status)
          values ('default', 'evt_refund', 'PAYMENT_REFUNDED', ${JSON.stringify(refunded)}, 'done')`.execute(db);
        const refunds = await verifyMirror({ store, api, mirrorSchema, resources: ['refunds'], repair: true });
        expect(refunds.resources[0]).toMatchObject({ resource: 'refunds', start: 'events', checked: 1, events: 1, requests: 0 });
        expect(refunds.drift.map(({ diff, ...drift }) => drift)).toEqual([
          {
            resource: 'refunds',
            id: 'ref_lost',
            kind: 'missing',
            repaired: true,
            namedBy: { eventId: 'evt_refund', eventType: 'PAYMENT_REFUNDED' },
          },
        ]);
        // Repaired from the event's state: the row is there, and the next verify finds nothing.
        const { rows: written } = await sql<{ amount: string; last_event_id: string }>`
          select amount, last_event_id from ${sql.id(mirrorSchema, 'refunds')} where id = 'ref_lost'`.execute(db);
        expect(written.map((row) => [Number(row.amount), row.last_event_id])).toEqual([[50_000, 'evt_refund']]);
        expect((await verifyMirror({ store, api, mirrorSchema, resources: ['refunds'] })).drift).toEqual([]);

        // A finished event whose body is not an event: what it named is unknown, so verify refuses to say "all match".
        await sql`insert into ${sql.id(store.schema, 'inbox_events')} (account, event_id, event_type, raw_body, status)
          values ('default', 'evt_broken', 'DISPUTE_CREATED', '{}', 'done')`.execute(db);
        await expect(verifyMirror({ store, api, mirrorSchema, resources: ['disputes'] })).rejects.toThrow(UnreadableEventsError);
        await sql`delete from ${sql.id(store.schema, 'inbox_events')} where event_id = 'evt_broken'`.execute(db);

        // --sample: the newest records listed and random rows, a handful of requests instead of a full pass.
        await sql`delete from ${sql.id(mirrorSchema, 'customers')} where id = ${customers[249]!}`.execute(db);
        const sampled = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'], sample: 5 });
        expect(sampled.resources[0]!.start).toBe('sample');
        expect(sampled.drift.map((d) => d.id)).toContain(customers[249]);
        expect(sampled.requests).toBeLessThanOrEqual(2 + 5);
      } finally {
        await simulator.close();
        await dropMirrorSchema(store, mirrorSchema);
        await dispose(store);
      }
    },
  );

  it.skipIf(!backend.available)(
    'a record with U+0000 in its text matches the row the mirror stored for it (U+FFFD): no drift, and none after --repair',
    { timeout: 60_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      const store = await backend.open();
      const mirrorSchema = `${store.schema}_mirror`;
      try {
        const api = createClient({ apiKey: 'sk_test_vm_nul', environment: simulator.url, rateLimit: false });
        const customer = await api.customers.create({ username: 'nul', name: 'Ada\u0000Lovelace' });
        expect(customer.name).toBe('Ada\u0000Lovelace');
        await runBackfill({ store, api, mirrorSchema, resources: ['customers'] });
        const { rows } = await sql<{ name: string }>`select name from ${sql.id(mirrorSchema, 'customers')}`.execute(
          store.db.withoutPlugins(),
        );
        expect(rows).toEqual([{ name: 'Ada\ufffdLovelace' }]);

        const verified = await verifyMirror({ store, api, mirrorSchema, resources: ['customers'], repair: true });
        expect(verified.resources[0]).toMatchObject({ checked: 1, finished: true });
        expect(verified.drift).toEqual([]);
      } finally {
        await simulator.close();
        await dropMirrorSchema(store, mirrorSchema);
        await dispose(store);
      }
    },
  );
});
