import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { putEvents, statuses } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

/** A repeatable pseudo-random sequence (mulberry32), so that a failing run can be told apart from a flaky one. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.each(backends)('order per (resource, handler) on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'with handlers failing at random, each handler settles the events of a resource in the order received, once each, and events of a resource never overlap',
    { timeout: 120_000 },
    async () => {
      store = await backend.open();
      hooks = createPayhooks({
        database: store,
        logger: silent,
        worker: { concurrency: 6, pollIntervalMs: 50, maxAttempts: 1000, backoff: { baseMs: 5, maxMs: 40 } },
      });
      const random = seeded(22);
      const customers = Array.from({ length: 6 }, (_, i) => `cus_order_${i}`);
      const events = Array.from({ length: 120 }, (_, i) => {
        const base = exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_pho_${String(i).padStart(3, '0')}` });
        return { ...base, data: { ...base.data, id: customers[Math.floor(random() * customers.length)]! } };
      });
      /** Per handler and customer: the events it settled (completed, or gave up on), in the order it did. */
      const settled: Record<string, Record<string, string[]>> = {};
      /** Every settlement, in the order they happened: `handler eventId`. */
      const timeline: string[] = [];
      const running = new Set<string>();
      const overlaps: string[] = [];
      const handlerNames = ['steady', 'flaky', 'flakier', 'picky'];
      for (const name of handlerNames) {
        settled[name] = {};
        hooks.on(
          'CUSTOMER_UPDATED',
          async (event) => {
            const key = `${name}:${event.data.id}`;
            if (running.has(event.data.id)) overlaps.push(key);
            running.add(event.data.id);
            try {
              await new Promise((resolve) => setTimeout(resolve, random() * 3));
              const roll = random();
              if (name === 'flaky' && roll < 0.3) throw new Error('flaky target down');
              if (name === 'flakier' && roll < 0.6) throw new Error('flakier target down');
              // Gives up on about one event in ten: it must not be sent that event again.
              const givesUp = name === 'picky' && roll < 0.1;
              settled[name]![event.data.id] = [...(settled[name]![event.data.id] ?? []), event.eventId];
              timeline.push(`${name} ${event.eventId}`);
              if (givesUp) throw new DeadLetterError('the target refused the document');
            } finally {
              running.delete(event.data.id);
            }
          },
          { name },
        );
      }
      await putEvents(store, events);
      await hooks.start();
      const db = store;
      await waitFor(
        async () => {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(db.schema, 'inbox_queue')}`.execute(db.db);
          return rows[0]?.n === 0;
        },
        'every event settled',
        90_000,
      );

      expect(overlaps).toEqual([]);
      const expected: Record<string, string[]> = {};
      for (const event of events) expected[event.data.id] = [...(expected[event.data.id] ?? []), event.eventId];
      for (const name of handlerNames) expect(settled[name], name).toEqual(expected);
      // The steady handler did not wait for the flakier one: it settled later events of a customer before the flakier
      // one had settled the earlier ones.
      const overtaken = Object.values(expected).some((ids) =>
        ids.some((id, i) => i > 0 && timeline.indexOf(`steady ${id}`) < timeline.indexOf(`flakier ${ids[i - 1]}`)),
      );
      expect(overtaken).toBe(true);
      // Events the picky handler gave up on are dead; every other one is done.
      const gaveUp = new Set(
        (
          await db.db.selectFrom('handler_runs').select('event_id').where('handler', '=', 'picky').where('outcome', '=', 'dead').execute()
        ).map((row) => row.event_id),
      );
      expect(gaveUp.size).toBeGreaterThan(0);
      const final = await statuses(db);
      for (const event of events) expect(final[event.eventId], event.eventId).toBe(gaveUp.has(event.eventId) ? 'dead' : 'done');
    },
  );
});
