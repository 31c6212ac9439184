import { sql } from 'kysely';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createPayhooksMetrics } from '../../src/metrics/payhooks-metrics.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { countEventsByStatus, countEventsByTypeAndStatus, getEvent, oldestPendingEvent, storeEvent } from '../../src/store/inbox.js';
import {
  countReplayable,
  newestArrival,
  pageReplayable,
  pruneCutoff,
  pruneEvents,
  replayEvents,
  SENDER_RETRY_HORIZON_MS,
} from '../../src/store/maintenance.js';
import type { EventStatus } from '../../src/store/schema.js';
import { dropHistoryPartitions } from '../../src/store/history-partitions.js';
import { setState, statuses } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

const DAY_MS = 86_400_000;

/** Stores an event, then puts it in a state and (optionally) back in time. */
async function put(
  store: PayhooksDatabase,
  eventId: string,
  status: EventStatus,
  options: { type?: string; ageDays?: number; resourceKey?: string } = {},
) {
  const eventType = options.type ?? 'INVOICE_PAID';
  await storeEvent(store, {
    eventId,
    eventType,
    resourceKey: options.resourceKey ?? null,
    rawBody: JSON.stringify({ eventId, eventType }),
    headers: {},
  });
  await setState(store, eventId, status, {
    attempts: 3,
    received_at: sql`now() - make_interval(secs => ${((options.ageDays ?? 0) * DAY_MS) / 1000})`,
  });
}

describe.each(backends)('operator queries on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  describe.skipIf(!backend.available)('counts', () => {
    it('counts per state, with and without filters, and per type and state', async () => {
      store = await backend.open();
      expect(await countEventsByStatus(store)).toEqual({});
      expect(await countEventsByTypeAndStatus(store)).toEqual([]);
      await put(store, 'a', 'dead');
      await put(store, 'b', 'dead', { type: 'CUSTOMER_CREATED' });
      await put(store, 'c', 'done');
      await put(store, 'd', 'pending', { type: 'CUSTOMER_CREATED' });
      expect(await countEventsByStatus(store)).toEqual({ dead: 2, done: 1, pending: 1 });
      expect(await countEventsByStatus(store, { eventType: 'INVOICE_PAID' })).toEqual({ dead: 1, done: 1 });
      expect(await countEventsByStatus(store, { status: 'dead', eventType: 'CUSTOMER_CREATED' })).toEqual({ dead: 1 });
      expect(await countEventsByTypeAndStatus(store)).toEqual([
        { eventType: 'CUSTOMER_CREATED', status: 'dead', count: 1 },
        { eventType: 'CUSTOMER_CREATED', status: 'pending', count: 1 },
        { eventType: 'INVOICE_PAID', status: 'dead', count: 1 },
        { eventType: 'INVOICE_PAID', status: 'done', count: 1 },
      ]);
    });

    it('finds the oldest pending event and its age by the database clock; none when nothing is pending', async () => {
      store = await backend.open();
      await put(store, 'old_done', 'done', { ageDays: 9 });
      expect(await oldestPendingEvent(store)).toBeUndefined();
      await put(store, 'young', 'pending', { ageDays: 1 });
      await put(store, 'oldest', 'pending', { ageDays: 2 });
      const oldest = await oldestPendingEvent(store);
      expect(oldest?.eventId).toBe('oldest');
      expect(oldest?.ageMs).toBeGreaterThanOrEqual(2 * DAY_MS);
      expect(oldest?.ageMs).toBeLessThan(2 * DAY_MS + 3_600_000);
      expect(oldest?.receivedAt).toBeInstanceOf(Date);
      expect(oldest).toMatchObject({ resourceKey: null, queuedForResource: 1 });
    });

    it("says how many queued events share the oldest pending event's resource, itself included", async () => {
      store = await backend.open();
      await put(store, 'busy_1', 'pending', { ageDays: 3, resourceKey: 'invoice:inv_busy' });
      for (const n of [2, 3, 4]) await put(store, `busy_${n}`, 'pending', { ageDays: 1, resourceKey: 'invoice:inv_busy' });
      await put(store, 'busy_done', 'done', { ageDays: 1, resourceKey: 'invoice:inv_busy' });
      await put(store, 'other', 'pending', { ageDays: 1, resourceKey: 'invoice:inv_other' });
      expect(await oldestPendingEvent(store)).toMatchObject({ eventId: 'busy_1', resourceKey: 'invoice:inv_busy', queuedForResource: 4 });
      // The same read behind the /metrics gauges, as a scrape sees them.
      const registry = new Registry();
      const opened = store;
      createPayhooksMetrics(registry, { store: async () => opened });
      const scraped = await registry.metrics();
      expect(scraped).toMatch(/^payhooks_oldest_pending_resource_queued 4$/m);
      expect(Number(/^payhooks_oldest_pending_age_seconds (\S+)$/m.exec(scraped)?.[1])).toBeGreaterThanOrEqual(3 * 86_400);
    });
  });

  describe.skipIf(!backend.available)('replay in pages', () => {
    it('counts and pages what a replay would re-queue, never events being processed, each event once', async () => {
      store = await backend.open();
      expect(await newestArrival(store)).toBeNull();
      for (const id of ['d1', 'd2', 'd3', 'd4', 'd5']) await put(store, id, 'dead');
      await put(store, 'busy', 'processing');
      await put(store, 'ok', 'done');
      expect(await countReplayable(store, { status: 'dead' })).toBe(5);
      expect(await countReplayable(store, { eventIds: ['d1', 'busy', 'ok', 'missing'] })).toBe(2);
      expect(await countReplayable(store, { eventIds: [] })).toBe(0);

      const through = (await newestArrival(store)) ?? undefined;
      await put(store, 'd_late', 'dead'); // arrives after the replay started: not part of it
      const seen: string[] = [];
      let after: string | undefined;
      for (let page = 0; page < 10; page++) {
        const rows = await pageReplayable(store, { status: 'dead' }, { limit: 2, after, through });
        if (rows.length === 0) break;
        seen.push(...rows.map((r) => r.eventId));
        await replayEvents(store, { eventIds: rows.map((r) => r.eventId), status: 'dead' });
        after = rows.at(-1)!.position;
      }
      expect(seen).toEqual(['d1', 'd2', 'd3', 'd4', 'd5']);
      expect(await statuses(store)).toMatchObject({ d1: 'pending', d5: 'pending', d_late: 'dead', busy: 'processing', ok: 'done' });
      expect(await getEvent(store, 'd3')).toMatchObject({ attempts: 0 });
    });

    it('with ids and a state, re-queues only those of the ids still in that state', async () => {
      store = await backend.open();
      await put(store, 'dead1', 'dead');
      await put(store, 'done1', 'done');
      await put(store, 'busy1', 'processing');
      expect(await replayEvents(store, { eventIds: ['dead1', 'done1', 'busy1'], status: 'dead' })).toEqual(['dead1']);
      expect(await statuses(store)).toEqual({ dead1: 'pending', done1: 'done', busy1: 'processing' });
    });
  });

  describe.skipIf(!backend.available)('prune by the partition', () => {
    it('fixes a cutoff, previews what it would drop and keep, then drops only old finished events, partition by partition', async () => {
      store = await backend.open();
      for (const id of ['done1', 'done2', 'done3']) await put(store, id, 'done', { ageDays: 40 });
      await put(store, 'ignored1', 'ignored', { ageDays: 40 });
      await put(store, 'dead_old', 'dead', { ageDays: 42 });
      await put(store, 'pending_old', 'pending', { ageDays: 42 });
      await put(store, 'done_beside', 'done', { ageDays: 42 });
      await put(store, 'done_young', 'done', { ageDays: 10 });
      await expect(pruneCutoff(store, -DAY_MS)).rejects.toThrow(/at least 0/);
      const before = await pruneCutoff(store, 30 * DAY_MS);
      const preview = await dropHistoryPartitions(store, { before, dryRun: true });
      expect(preview.dropped.reduce((sum, p) => sum + p.events, 0)).toBe(4);
      expect(preview.kept.map((p) => [p.unresolved, p.compacted])).toEqual([[{ dead: 1, pending: 1, queued: 1 }, 1]]);
      expect(await statuses(store)).toHaveProperty('done1', 'done'); // the preview drops nothing

      const report = await dropHistoryPartitions(store, { before });
      expect(report.dropped.map((p) => p.name)).toEqual(preview.dropped.map((p) => p.name));
      expect(report.kept.map((p) => p.name)).toEqual(preview.kept.map((p) => p.name));
      expect(report.kept.map((p) => p.compacted)).toEqual([1]);
      expect(Object.keys(await statuses(store)).sort()).toEqual(['dead_old', 'done_young', 'pending_old']);
      // The kept partition holds its unfinished events alone now: a second pass has nothing to drop or rebuild.
      expect(await dropHistoryPartitions(store, { before })).toMatchObject({ dropped: [], kept: [{ compacted: 0 }] });
      // Rebuilt, not deleted from: no row of the history was deleted, so nothing is left for vacuum.
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(store.schema, 'inbox_events')}`.execute(store.db);
      expect(rows[0]!.n).toBe(3);
    });

    it('drops recent finished events too when the cutoff says so (the ledger keeps deduplication)', async () => {
      store = await backend.open();
      await put(store, 'done_recent', 'done', { ageDays: 2 });
      expect(await pruneEvents(store, DAY_MS)).toBe(1);
      expect(await statuses(store)).toEqual({});
      expect(SENDER_RETRY_HORIZON_MS).toBeGreaterThan(2 * DAY_MS);
      const ledger = await store.db.selectFrom('event_ledger').select('event_id').execute();
      expect(ledger).toEqual([{ event_id: 'done_recent' }]);
    });
  });
});
