import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { ensureHistoryPartitions, HISTORY_TABLES, listHistoryPartitions } from '../../src/store/history-partitions.js';
import { getEvent, storeEvent } from '../../src/store/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const DAY_MS = 86_400_000;

/** Every partition of `table` in the store's schema, by name. */
async function partitionsOf(store: PayhooksDatabase, table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
      join pg_namespace n on n.oid = p.relnamespace where n.nspname = ${store.schema} and p.relname = ${table} order by 1`.execute(
    store.db,
  );
  return rows.map((row) => row.name);
}

describe.each(backends)('history partitions on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)('makes the partitions ahead once, aligned to the span, with a twin in each history table', async () => {
    store = await backend.open();
    const now = new Date('2026-11-25T13:45:00Z');
    const made = await ensureHistoryPartitions(store, { span: 'day', ahead: 2, now });
    expect(made.map((p) => [p.name, p.from?.toISOString(), p.to.toISOString()])).toEqual([
      ['inbox_events_p20261125t000000', '2026-11-25T00:00:00.000Z', '2026-11-26T00:00:00.000Z'],
      ['inbox_events_p20261126t000000', '2026-11-26T00:00:00.000Z', '2026-11-27T00:00:00.000Z'],
      ['inbox_events_p20261127t000000', '2026-11-27T00:00:00.000Z', '2026-11-28T00:00:00.000Z'],
    ]);
    // Again, and twice at once: nothing more (the advisory lock lets one make them, the other finds them made).
    const [a, b] = await Promise.all([
      ensureHistoryPartitions(store, { span: 'day', ahead: 2, now }),
      ensureHistoryPartitions(store, { span: 'day', ahead: 2, now }),
    ]);
    expect([...a, ...b]).toEqual([]);
    for (const table of HISTORY_TABLES)
      expect(await partitionsOf(store, table)).toEqual(made.map((p) => p.name.replace('inbox_events', table)));
    // A week from Monday, after the days above; and back in time to an instant asked for.
    const weeks = await ensureHistoryPartitions(store, { span: 'week', ahead: 1, now: new Date('2026-12-02T00:00:00Z') });
    expect(weeks.map((p) => [p.from?.toISOString(), p.to.toISOString()])).toEqual([
      ['2026-11-28T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
      ['2026-11-30T00:00:00.000Z', '2026-12-07T00:00:00.000Z'],
      ['2026-12-07T00:00:00.000Z', '2026-12-14T00:00:00.000Z'],
    ]);
    const back = await ensureHistoryPartitions(store, { span: 'day', now, from: new Date('2026-11-23T05:00:00Z') });
    expect(back.map((p) => p.from?.toISOString())).toEqual(['2026-11-23T00:00:00.000Z', '2026-11-24T00:00:00.000Z']);
    const all = await listHistoryPartitions(store);
    for (let i = 1; i < all.length; i++) expect(all[i]!.from).toEqual(all[i - 1]!.to);
  });

  it.skipIf(!backend.available)(
    'a receiver meeting a receipt time no partition covers makes the partition and stores the delivery',
    async () => {
      // Migrated and never opened by createPayhooks: no partition at all, as after days with no payhooks process.
      store = await backend.open();
      expect(await listHistoryPartitions(store)).toEqual([]);
      const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_lone' });
      const outcome = await storeEvent(store, {
        eventId: 'evt_lone',
        eventType: event.eventType,
        resourceKey: null,
        rawBody: JSON.stringify(event),
        headers: {},
      });
      expect(outcome.inserted).toBe(true);
      expect((await getEvent(store, 'evt_lone'))?.status).toBe('pending');
      const partitions = await listHistoryPartitions(store);
      expect(partitions.length).toBeGreaterThanOrEqual(2);
      expect(partitions[0]!.from!.getTime()).toBeLessThanOrEqual(Date.now());
      expect(partitions.at(-1)!.to.getTime()).toBeGreaterThan(Date.now() + DAY_MS);
    },
  );

  it.skipIf(!backend.available)(
    'the worker keeps retention: finished events go with their partition, a partition holding a dead event stays, and redeliveries stay duplicates',
    { timeout: 60_000 },
    async () => {
      store = await backend.open();
      const s = store;
      const secret = 'whsec_partitions';
      // Partitions of a second, history kept three seconds: what a day and 30 days are in production, sped up.
      hooks = createPayhooks({
        database: s,
        secret,
        logger: pino({ level: 'silent' }),
        worker: { pollIntervalMs: 50, maxAttempts: 1 },
        history: { partition: '1s', retention: '3s' },
      });
      const runs: string[] = [];
      hooks.on('INVOICE_PAID', async (event) => {
        runs.push(event.eventId);
        if (event.eventId === 'evt_dead') throw new Error('always fails');
      });
      await hooks.start();
      const scheme = createDefaultScheme({ secrets: secret });
      const deliver = (eventId: string) => {
        const rawBody = Buffer.from(JSON.stringify(exampleEvent('INVOICE_PAID', { eventId })));
        return hooks!.receive({ method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody });
      };
      expect((await deliver('evt_dead')).status).toBe(200);
      await waitFor(async () => (await getEvent(s, 'evt_dead'))?.status === 'dead', 'evt_dead dead');
      // A second later, in a partition of its own: a finished event.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect((await deliver('evt_done')).status).toBe(200);
      await waitFor(async () => (await getEvent(s, 'evt_done'))?.status === 'done', 'evt_done done');
      await waitFor(async () => (await getEvent(s, 'evt_done')) === undefined, 'evt_done dropped with its partition', 15_000);
      // The dead event's partition is past retention too, and kept for it.
      expect((await getEvent(s, 'evt_dead'))?.status).toBe('dead');
      const again = await deliver('evt_done');
      expect(JSON.parse(again.body)).toEqual({ received: true, duplicate: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(runs).toEqual(['evt_dead', 'evt_done']);
    },
  );
});
