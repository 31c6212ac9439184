// The upgrade to time partitions (migration 009) on an installation of 1,000,000 events: how long it takes, and that
// every event, outcome and handler run is still there (counts, and a sample compared row by row before and after).
import { sql } from 'kysely';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate, readMigrations } from '../../src/store/migrate.js';
import { benchSchema, databaseUrl } from '../lib/database.js';
import type { Section } from '../lib/report.js';
import { scaled, whole } from '../lib/stats.js';

const SAMPLE = 1000;

interface Snapshot {
  events: number;
  byStatus: Record<string, number>;
  runs: number;
  attempts: number;
  ledger: number;
  queued: number;
  /** The sample's rows, as text, in event order: event, its runs and attempts. */
  sample: string[];
}

async function snapshot(store: PayhooksDatabase, ids: string[]): Promise<Snapshot> {
  const t = (name: string) => sql.id(store.schema, name);
  const count = async (name: string) =>
    Number((await sql<{ n: string }>`select count(*) as n from ${t(name)}`.execute(store.db)).rows[0]!.n);
  const statuses = await sql<{ status: string; n: string }>`select status, count(*) as n from ${t('inbox_events')} group by status`.execute(
    store.db,
  );
  const rows = await sql<{ line: string }>`
    select concat_ws('|', e.event_id, e.event_type, e.status, e.attempts, e.received_at, e.seq, md5(e.raw_body), e.last_error,
             (select string_agg(concat_ws(':', r.handler, r.outcome, r.completed_at, r.error), ',' order by r.handler) from ${t('handler_runs')} r where r.event_id = e.event_id),
             (select string_agg(concat_ws(':', a.handler, a.outcome, a.ended_at), ',' order by a.id) from ${t('handler_attempts')} a where a.event_id = e.event_id),
             (select q.run_at from ${t('inbox_queue')} q where q.event_id = e.event_id)) as line
      from ${t('inbox_events')} e where e.event_id = any(${ids}::text[]) order by e.event_id`.execute(store.db);
  return {
    events: await count('inbox_events'),
    byStatus: Object.fromEntries(statuses.rows.map((row) => [row.status, Number(row.n)])),
    runs: await count('handler_runs'),
    attempts: await count('handler_attempts'),
    ledger: await count('event_ledger'),
    queued: await count('inbox_queue'),
    sample: rows.rows.map((row) => row.line),
  };
}

export async function benchMigration(): Promise<Section> {
  const count = scaled(1_000_000);
  const schema = benchSchema('migration');
  // Seeding a million rows takes longer than the pool's 15 s for payhooks' own short statements.
  const store = await openDatabase({ url: databaseUrl, schema, queryTimeoutMs: 3_600_000 });
  try {
    const files = readMigrations();
    await migrate(
      store,
      files.filter((file) => file.name < '009'),
    );
    const t = (name: string) => sql.id(schema, name);
    // As 008 leaves an installation: 2 KB bodies over the last 60 days, 98% done with two handler runs, the rest
    // dead (a run given up, an attempt failed) or still waiting; every event in the ledger.
    const seededAt = performance.now();
    await sql`insert into ${t('inbox_events')} (event_id, event_type, resource_key, raw_body, headers, received_at, status, attempts, processed_at, last_error)
      select 'evt_' || lpad(n::text, 8, '0'), 'INVOICE_PAID', 'invoice:inv_' || (n % 50000),
             '{"eventId":"evt_' || n || '","pad":"' || repeat('x', 1990) || '"}', '{"x-webhook-timestamp":"1"}'::jsonb,
             now() - make_interval(secs => (${count} - n) * 60.0 * 86400 / ${count}),
             case when n % 100 = 0 then 'dead' when n % 100 = 1 then 'pending' else 'done' end,
             case when n % 100 = 1 then 0 else 1 end, now(),
             case when n % 100 = 0 then 'boom' end
        from generate_series(1, ${count}) n`.execute(store.db);
    await sql`insert into ${t('event_ledger')} (event_id, first_received_at, body_sha256, deliveries)
      select event_id, received_at, '\\x00', 1 from ${t('inbox_events')}`.execute(store.db);
    await sql`delete from ${t('inbox_queue')} q using ${t('inbox_events')} e where e.event_id = q.event_id and e.status <> 'pending'`.execute(
      store.db,
    );
    await sql`insert into ${t('handler_runs')} (event_id, handler, completed_at, outcome, error)
      select event_id, h, received_at + interval '1 second', case when status = 'dead' and h = 'crm' then 'dead' else 'done' end,
             case when status = 'dead' and h = 'crm' then 'boom' end
        from ${t('inbox_events')} cross join (values ('mirror'), ('crm')) as hs(h) where status <> 'pending'`.execute(store.db);
    await sql`insert into ${t('handler_attempts')} (event_id, received_at, handler, attempt, started_at, ended_at, outcome, error)
      select event_id, received_at, 'crm', 1, received_at, received_at + interval '1 second', 'failed', 'boom'
        from ${t('inbox_events')} where status = 'dead'`.execute(store.db);
    await sql`analyze ${t('inbox_events')}`.execute(store.db);
    const seededS = (performance.now() - seededAt) / 1000;
    const ids = (
      await sql<{ event_id: string }>`select event_id from ${t('inbox_events')} tablesample bernoulli (1) limit ${SAMPLE}`.execute(store.db)
    ).rows.map((row) => row.event_id);
    const before = await snapshot(store, ids);
    const started = performance.now();
    await migrate(store, files);
    const migrationS = (performance.now() - started) / 1000;
    const after = await snapshot(store, ids);
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    const sampleSame = same(before.sample, after.sample);
    const differing = before.sample.filter((line, i) => line !== after.sample[i]).length;
    console.info(`  migration: ${whole(count)} events seeded in ${seededS.toFixed(0)} s, 009 to 011 applied in ${migrationS.toFixed(1)} s`);
    const row = (what: string, a: number, b: number) => [what, whole(a), whole(b)];
    return {
      title: 'Migration to partitions',
      about:
        `An installation as migration 008 leaves it, ${whole(count)} events of 2 KB received over 60 days (98% done with two handler runs each, ` +
        '1% dead with a given-up run and a failed attempt, 1% waiting in the queue), every event in the ledger, on the local PostgreSQL server; then ' +
        '`migrate` applies 009 to 011 (009 attaches the old tables whole as the legacy partition of each history table; 010 and 011 add small tables). The sample is ' +
        `${whole(ids.length)} events drawn at random, each compared as one line of text (event, body hash, runs, attempts, queue row) before and after.`,
      header: ['measure', 'before', 'after'],
      rows: [
        row('events', before.events, after.events),
        ...Object.keys(before.byStatus)
          .sort()
          .map((status) => row(`events ${status}`, before.byStatus[status]!, after.byStatus[status] ?? 0)),
        row('handler runs', before.runs, after.runs),
        row('handler attempts', before.attempts, after.attempts),
        row('ledger rows', before.ledger, after.ledger),
        row('queued', before.queued, after.queued),
        ['sample rows identical', `${whole(ids.length)}`, `${whole(ids.length - differing)}`],
        ['seconds', `${seededS.toFixed(0)} (seeding)`, `${migrationS.toFixed(1)} (migrations 009 to 011)`],
      ],
      targets: [
        {
          text: `every event, outcome and handler run kept: counts ${same({ ...before, sample: 0 }, { ...after, sample: 0 }) ? 'equal' : 'DIFFER'}, sample ${sampleSame ? 'identical' : `${differing} rows differ`}`,
          met: same({ ...before, sample: 0 }, { ...after, sample: 0 }) && sampleSame,
        },
      ],
    };
  } finally {
    await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
    await store.close();
  }
}
