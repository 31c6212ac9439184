// Measures the operator's lookups of issue 50 on a history of 100,000 events with 5,000 failures: a busy customer's
// story, an event found by its sender's id, and a replay's count over a 30-minute window for one handler. Prints each
// call's time (best of five) and the EXPLAIN (ANALYZE, BUFFERS) of the query behind it. The figures of docs/admin.md
// (#at-100000-events) come from this.
//
//   node --import tsx scripts/measure-operator-lookups.ts     (a PostgreSQL server: DATABASE_URL, or the local one)
//
// It works in a schema of its own (a random name) and drops it at the end.
import { sql } from 'kysely';
import { openDatabase, type PayhooksDatabase } from '../src/store/database.js';
import { findById } from '../src/store/find-by-id.js';
import { ensureHistoryPartitions } from '../src/store/history-partitions.js';
import { previewReplay } from '../src/store/maintenance.js';
import { migrate } from '../src/store/migrate.js';
import { resourceStory } from '../src/store/resource-story.js';

const EVENTS = 100_000;
const FAILURES = 5_000;
const BUSY = 2_000;
const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const schema = `measure_${Math.random().toString(36).slice(2, 10)}`;

/** The best of five runs of `work`, in milliseconds. */
async function best(work: () => Promise<unknown>): Promise<number> {
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await work();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

/** Runs `statements` on one connection whose search path is the store's schema (the SQL below names tables bare). */
async function inSchema(store: PayhooksDatabase, statements: ReturnType<typeof sql>[]): Promise<{ rows: unknown[] }[]> {
  return store.db.connection().execute(async (db) => {
    await sql`set search_path to ${sql.id(store.schema)}`.execute(db);
    const results: { rows: unknown[] }[] = [];
    for (const statement of statements) results.push(await statement.execute(db));
    return results;
  });
}

async function explain(store: PayhooksDatabase, title: string, query: ReturnType<typeof sql>): Promise<void> {
  const [result] = await inSchema(store, [sql`explain (analyze, buffers) ${query}`]);
  const rows = result!.rows as { 'QUERY PLAN': string }[];
  // The story's hundreds of ids, spelt out in each partition's filter, would bury the plan.
  const plan = rows.map((row) => row['QUERY PLAN'].replace(/'\{evt_[^}]*\}'/g, "'{…the story's event ids…}'"));
  console.log(`\n-- ${title}\n${plan.join('\n')}`);
}

/**
 * 100,000 events over the last 28 hours (one a second), each with the sender's id in its headers; 5,000 of them dead
 * after a failed run of `ledger`; 2,000 about one busy customer, each with a completed run of `crm`.
 */
async function seed(store: PayhooksDatabase): Promise<void> {
  await ensureHistoryPartitions(store, { from: new Date(Date.now() - 2 * 86_400_000) });
  await inSchema(store, [
    sql`insert into inbox_events (account, event_id, event_type, resource_key, raw_body, headers, received_at, status, attempts, last_error)
    select 'default', 'evt_' || i,
           case when i % 50 = 0 then 'CUSTOMER_UPDATED' else 'INVOICE_PAID' end,
           case when i % 50 = 0 then 'customer:cus_busy' else 'invoice:inv_' || (i % 20000) end,
           '{"eventId":"evt_' || i || '","eventType":"INVOICE_PAID","data":{"invoiceId":"inv_' || (i % 20000) || '"}}',
           jsonb_build_object('x-webhook-event-id', 'whevt_' || i, 'content-type', 'application/json'),
           now() - make_interval(secs => i),
           case when i % 20 = 1 then 'dead' else 'done' end,
           1,
           case when i % 20 = 1 then 'ledger answered 422' end
      from generate_series(1, ${EVENTS}) as i`,
    // Every event received is in the ledger, with what migration 025 indexes there (its story, its sender's id).
    sql`insert into event_ledger (account, event_id, first_received_at, body_sha256, resource_key, seq, sender_id)
    select account, event_id, received_at, sha256(convert_to(raw_body, 'UTF8')), resource_key, seq, headers ->> 'x-webhook-event-id'
      from inbox_events`,
    sql`insert into handler_attempts (account, event_id, received_at, handler, attempt, started_at, ended_at, outcome, error)
    select account, event_id, received_at, 'ledger', 1, received_at, received_at + interval '20 ms', 'failed', last_error
      from inbox_events where status = 'dead'`,
    sql`insert into handler_attempts (account, event_id, received_at, handler, attempt, started_at, ended_at, outcome, error)
    select account, event_id, received_at, 'crm', 1, received_at, received_at + interval '15 ms', 'completed', null
      from inbox_events where resource_key = 'customer:cus_busy'`,
    // The insert trigger queued every row; these are finished events, which the queue does not hold.
    sql`delete from inbox_queue`,
    sql`analyze`,
  ]);
  const [counted] = await inSchema(store, [
    sql`select count(*)::int as events, (count(*) filter (where status = 'dead'))::int as dead,
          (count(*) filter (where resource_key = 'customer:cus_busy'))::int as busy from inbox_events`,
  ]);
  const rows = counted!.rows as { events: number; dead: number; busy: number }[];
  console.log(
    `seeded: ${rows[0]!.events} events, ${rows[0]!.dead} dead (expected ${FAILURES}), ${rows[0]!.busy} of the busy customer (expected ${BUSY})`,
  );
}

const store = await openDatabase({ url, schema });
try {
  await migrate(store);
  await seed(store);
  const until = new Date(Date.now() - 3 * 3600_000);
  const since = new Date(until.getTime() - 30 * 60_000);
  const window = { since, until, handler: 'ledger' };

  const story = await resourceStory(store, 'customer:cus_busy');
  console.log(
    `story: ${story.events.length} events told (truncated ${story.truncated}), ${story.events[0]!.handlerAttempts.length} run each`,
  );
  console.log(
    `story of the busy customer (newest 500 of ${BUSY}): ${(await best(() => resourceStory(store, 'customer:cus_busy'))).toFixed(1)} ms`,
  );
  console.log(`story, all ${BUSY}: ${(await best(() => resourceStory(store, 'customer:cus_busy', { limit: BUSY }))).toFixed(1)} ms`);
  console.log(
    `find by the sender's id: ${(await best(() => findById(store, 'whevt_77777'))).toFixed(1)} ms`,
    await findById(store, 'whevt_77777'),
  );
  const preview = await previewReplay(store, window, 10);
  console.log(
    `replay count, 30-minute window, handler ledger: ${preview.count} events; ${(await best(() => previewReplay(store, window, 10))).toFixed(1)} ms`,
  );

  await explain(
    store,
    "the story's events (resource-story.ts)",
    sql`select e.account, e.event_id, e.event_type, e.resource_key, e.status, e.attempts, e.deliveries, e.last_error, e.received_at,
               e.next_attempt_at, e.processed_at
          from (select l.event_id, l.account, l.first_received_at, l.seq from event_ledger l
                 where l.resource_key in ('customer:cus_busy') order by l.seq desc limit 501) l
          cross join lateral (select * from inbox_event_states e
                               where e.event_id = l.event_id and e.account = l.account and e.received_at = l.first_received_at
                           offset 0) e
         order by l.seq desc`,
  );
  const ids = story.events.map((e) => e.eventId);
  await explain(
    store,
    "the story's runs (handler-timeline.ts)",
    sql`select event_id, account, handler, attempt, started_at, ended_at, outcome, error, id from handler_attempts
         where (event_id, account) in (select * from unnest(${ids}::text[], ${ids.map(() => 'default')}::text[]))`,
  );
  await explain(
    store,
    "an event by its sender's id (find-by-id.ts)",
    sql`select e.event_id, e.account, e.headers, e.seq from event_ledger l
          join inbox_events e on e.event_id = l.event_id and e.account = l.account and e.received_at = l.first_received_at
         where l.sender_id = 'whevt_77777'
         limit 100`,
  );
  await explain(
    store,
    "a replay's count: 30 minutes, failed states, handler ledger (maintenance.ts)",
    sql`select count(*)::int from inbox_events
         where inbox_events.status <> 'processing' and inbox_events.status in ('dead', 'invalid', 'needs-review')
           and inbox_events.received_at >= ${since} and inbox_events.received_at < ${until}
           and (exists (select 1 from handler_attempts a where a.event_id = inbox_events.event_id and a.account = inbox_events.account
                          and a.received_at = inbox_events.received_at and a.handler = 'ledger' and a.outcome = 'failed')
                or exists (select 1 from handler_runs r where r.event_id = inbox_events.event_id and r.account = inbox_events.account
                          and r.received_at = inbox_events.received_at and r.handler = 'ledger' and r.outcome = 'dead'))
           and not exists (select 1 from inbox_queue q where q.event_id = inbox_events.event_id and q.account = inbox_events.account
                          and q.lease_owner is not null)`,
  );
} finally {
  await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
  await store.close();
}
