// Two operator commands at once: `payhooks prune` drops the partition of old finished events while a bulk replay of
// `done` events (the CLI's batches, or the console's single statement) re-queues the same rows. Whichever reaches the
// partition first wins (a partition with a re-queued event is kept whole); what must never happen is an event reported
// re-queued and then dropped, queue row included.
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { newestArrival, pageReplayable, pruneEvents, replayEvents } from '../../src/store/maintenance.js';
import { oldDoneEvents } from '../helpers/old-events.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const DAY_MS = 86_400_000;
// PGlite is one connection, so statements of the two commands take turns whole there: the race is PostgreSQL's,
// and two rounds (one of each kind of replay) show that the statements work on PGlite too.
const ROUNDS = { postgres: 10, pglite: 2 } as const;
const EVENTS_PER_ROUND = 2000;
const REPLAY_BATCH = 100;

/** `payhooks prune --older-than 30d --yes`: the partitions past the age, each dropped unless it holds unfinished events. */
async function prune(store: PayhooksDatabase): Promise<number> {
  return pruneEvents(store, 30 * DAY_MS);
}

/** `payhooks replay --status done --yes`: pages by position, each batch re-checked as it is written. */
async function replayInBatches(store: PayhooksDatabase): Promise<string[]> {
  const through = (await newestArrival(store)) ?? undefined;
  const requeued: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await pageReplayable(store, { status: 'done' }, { limit: REPLAY_BATCH, after, through });
    if (page.length === 0) return requeued;
    requeued.push(...(await replayEvents(store, { eventIds: page.map((e) => e.eventId), status: 'done' })));
    after = page[page.length - 1]!.position;
  }
}

/** What is left of `ids`: status and whether a queue row exists. */
async function stateOf(store: PayhooksDatabase, ids: readonly string[]) {
  const rows = await store.db
    .selectFrom('inbox_events as e')
    .leftJoin('inbox_queue as q', 'q.event_id', 'e.event_id')
    .select(['e.event_id', 'e.status', sql<boolean>`q.event_id is not null`.as('queued')])
    .where(sql<boolean>`e.event_id = any(${ids}::text[])`)
    .execute();
  return new Map(rows.map((row) => [row.event_id, row]));
}

describe.each(backends)('prune and a bulk replay at the same time on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    `${ROUNDS[backend.name]} rounds over ${EVENTS_PER_ROUND} old done events: every event reported re-queued is still there, queued, and ends done`,
    { timeout: 300_000 },
    async () => {
      store = await backend.open();
      const s = store;
      const requeued: string[] = [];
      const losses: string[] = [];
      for (let round = 0; round < ROUNDS[backend.name]; round++) {
        // A partition (a day) of its own each round.
        const ids = await oldDoneEvents(s, `evt_r${round}`, EVENTS_PER_ROUND, 40 + round);
        // Even rounds replay as the CLI does (batches), odd ones as the console does (one statement for the state).
        const replay = round % 2 === 0 ? replayInBatches(s) : replayEvents(s, { status: 'done' });
        const [deleted, replayed] = await Promise.all([prune(s), replay]);
        const state = await stateOf(s, ids);
        const lost = replayed.filter((id) => state.get(id)?.status !== 'pending' || !state.get(id)?.queued);
        if (lost.length > 0)
          losses.push(`round ${round}: ${lost.length} of ${replayed.length} re-queued events lost (${lost.slice(0, 3).join(', ')}…)`);
        // Each event went one way or the other: re-queued (and its partition kept), or dropped with it; never both.
        if (deleted + replayed.length !== EVENTS_PER_ROUND)
          losses.push(`round ${round}: ${deleted} pruned + ${replayed.length} re-queued of ${EVENTS_PER_ROUND}`);
        requeued.push(...replayed);
      }
      expect(losses).toEqual([]);

      // The queue rows are real: a worker with a no-op handler takes every re-queued event to done.
      hooks = createPayhooks({ database: s, logger: pino({ level: 'silent' }), worker: { pollIntervalMs: 50, concurrency: 16 } });
      hooks.on('INVOICE_PAID', async () => {});
      await hooks.start();
      await waitFor(
        async () => {
          const row = await s.db
            .selectFrom('inbox_events')
            .select(sql<number>`count(*)::int`.as('done'))
            .where('status', '=', 'done')
            .where(sql<boolean>`event_id = any(${requeued}::text[])`)
            .executeTakeFirstOrThrow();
          return row.done === requeued.length;
        },
        `the ${requeued.length} re-queued events done`,
        120_000,
      );
    },
  );
});
