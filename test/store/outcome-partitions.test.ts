// An outcome given with its event's receipt time (what the worker passes: the claimed event's `receivedAt`) updates
// the history in the partition that holds that time and touches no other: the planner prunes the partitioned history's
// UPDATE to the batch's times. Without them, the update probed (and locked) every partition for every event, so each
// day of history kept made the drain slower, and a lock on a partition of another day held the outcomes up.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type ClaimedEvent, claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { type FencedOutcome, recordOutcomes } from '../../src/store/outcomes.js';
import { backdate, putUnorderedEvents } from '../helpers/inbox.js';
import { pgUrl } from '../helpers/pg.js';
import { backends, dispose } from '../helpers/stores.js';

const WORKER = 'outcome-partitions';

/** Claims every due event, by id. */
async function claimAll(s: PayhooksDatabase): Promise<Map<string, ClaimedEvent>> {
  const claimed = await claimEvents(s, { workerId: WORKER, limit: 100, leaseMs: 60_000 });
  return new Map(claimed.map((event) => [event.eventId, event]));
}

/** A finish of `event` as the worker's outcome writer hands it over: with its lease token and receipt time. */
function finish(event: ClaimedEvent, withTime = true): FencedOutcome {
  return {
    kind: 'finished',
    account: event.account,
    eventId: event.eventId,
    status: 'done',
    lastError: null,
    leaseToken: event.leaseToken,
    receivedAt: withTime ? event.receivedAt : undefined,
  };
}

async function statesOf(s: PayhooksDatabase, ids: readonly string[]) {
  const { rows } = await sql<{ event_id: string; status: string; last_error: string | null }>`
    select event_id, status, last_error from ${sql.id(s.schema, 'inbox_events')} where event_id = any(${ids}::text[]) order by event_id`.execute(
    s.db,
  );
  return rows;
}

describe.each(backends)('outcomes and the history partitions ($name)', (backend) => {
  let s: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (s) await dispose(s);
    s = undefined;
  });

  it.skipIf(!backend.available)(
    'finishes and retries land with their receipt times, at a partition edge and microseconds past a millisecond',
    async () => {
      s = await backend.open();
      const ids = ['evt_edge_end', 'evt_edge_start', 'evt_now', 'evt_retry'];
      await putUnorderedEvents(s, ids);
      // The last microsecond of the day before yesterday, and 999 µs into yesterday: each received time's Date (which
      // holds milliseconds) is the stored one cut short, on either side of a partition's bound.
      const day = sql`date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'`;
      await backdate(s, ['evt_edge_end'], sql`${day} - interval '1 day' - interval '1 microsecond'`);
      await backdate(s, ['evt_edge_start', 'evt_retry'], sql`${day} - interval '1 day' + interval '999 microseconds'`);
      const claimed = await claimAll(s);
      expect([...claimed.keys()].sort()).toEqual(ids);
      const retried = claimed.get('evt_retry')!;
      const outcomes: FencedOutcome[] = [
        ...['evt_edge_end', 'evt_edge_start', 'evt_now'].map((id) => finish(claimed.get(id)!)),
        {
          kind: 'retry',
          account: retried.account,
          eventId: retried.eventId,
          delayMs: 60_000,
          lastError: 'the CRM answered 503',
          owed: null,
          leaseToken: retried.leaseToken,
          receivedAt: retried.receivedAt,
        },
      ];
      expect(await recordOutcomes(s, WORKER, outcomes)).toEqual([true, true, true, true]);
      expect(await statesOf(s, ids)).toEqual([
        { event_id: 'evt_edge_end', status: 'done', last_error: null },
        { event_id: 'evt_edge_start', status: 'done', last_error: null },
        { event_id: 'evt_now', status: 'done', last_error: null },
        { event_id: 'evt_retry', status: 'pending', last_error: 'the CRM answered 503' },
      ]);
    },
  );
});

const postgres = backends[0]!;
describe.skipIf(!postgres.available)('an outcome beside a lock on another day of the history (postgres)', () => {
  let s: PayhooksDatabase | undefined;
  const locker = new pg.Client({ connectionString: pgUrl ?? undefined });
  afterEach(async () => {
    await locker.end().catch(() => undefined);
    if (s) await dispose(s);
    s = undefined;
  });

  /**
   * Records `outcomes` while `partition` is locked by another session, and says whether the outcome's statement waited
   * for that lock (seen in pg_locks) before it answered; the lock is let go once it is seen waiting, so that it answers.
   */
  async function recordBesideLock(outcomes: FencedOutcome[], partition: string): Promise<{ waited: boolean; held: boolean[] }> {
    const store = s!;
    await locker.query('begin');
    await locker.query(`lock table "${store.schema}"."${partition}" in access exclusive mode`);
    let answered = false;
    const recording = recordOutcomes(store, WORKER, outcomes).finally(() => {
      answered = true;
    });
    let waited = false;
    while (!answered && !waited) {
      const { rows } = await locker.query<{ n: number }>(
        // A client's wait only: an autovacuum worker waiting for the partition is not the outcome.
        `select count(*)::int as n from pg_locks l join pg_stat_activity a using (pid)
          where l.relation = $1::regclass and not l.granted and a.backend_type = 'client backend'`,
        [`"${store.schema}"."${partition}"`],
      );
      waited = rows[0]!.n > 0;
      if (!waited) await sleep(10);
    }
    await locker.query('rollback');
    return { waited, held: await recording };
  }

  it('a finish with its receipt time does not wait for a partition of another day; without it, it does', async () => {
    s = await postgres.open();
    await locker.connect();
    await ensureHistoryPartitions(s, { from: new Date(Date.now() - 5 * 86_400_000) });
    await putUnorderedEvents(s, ['evt_old', 'evt_a', 'evt_b']);
    await backdate(s, ['evt_old'], sql`now() - interval '5 days'`);
    // The old event finished long ago: its partition is one the new events' outcomes have no business in.
    const claimed = await claimAll(s);
    expect([...claimed.keys()].sort()).toEqual(['evt_a', 'evt_b', 'evt_old']);
    expect(await recordOutcomes(s, WORKER, [finish(claimed.get('evt_old')!)])).toEqual([true]);
    const { rows } = await sql<{ partition: string }>`
      select tableoid::regclass::text as partition from ${sql.id(s.schema, 'inbox_events')} where event_id = 'evt_old'`.execute(s.db);
    const oldPartition = rows[0]!.partition.split('.').at(-1)!.replaceAll('"', '');
    expect(oldPartition).toMatch(/^inbox_events_p\d{8}t\d{6}$/);

    const pruned = await recordBesideLock([finish(claimed.get('evt_a')!)], oldPartition);
    expect(pruned).toEqual({ waited: false, held: [true] });
    // Not vacuous: the same finish without its time reads every partition, the locked one too.
    const unpruned = await recordBesideLock([finish(claimed.get('evt_b')!, false)], oldPartition);
    expect(unpruned).toEqual({ waited: true, held: [true] });
    expect((await statesOf(s, ['evt_a', 'evt_b'])).map((row) => row.status)).toEqual(['done', 'done']);
  });
});
