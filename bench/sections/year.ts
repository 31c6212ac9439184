// A compressed year: many "days" of deliveries through `payhooks serve`, its worker draining them, with history kept
// for 7 days and dropped a partition at a time. Each day is a partition of DAY_S seconds (the partition span is a
// setting; a real installation uses `day`): ingest, p99 and drain on the last day against the first, the schema's size
// on disk day by day, and a redelivery of a day-1 event on the last day.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.js';
import { dropHistoryPartitions, ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { migrate } from '../../src/store/migrate.js';
import { benchSchema, databaseUrl, dropSchemas, withClient } from '../lib/database.js';
import { deliveryBody, SECRET, sendDeliveries, signedHeaders } from '../lib/load.js';
import { freePort, payhooksArgs, startServer } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { scale, scaled, times, whole } from '../lib/stats.js';

const CONNECTIONS = 50;
const RETENTION_DAYS = 7;

interface Day {
  day: number;
  ingest: number;
  p99Ms: number;
  non2xx: number;
  /** Events of the day finished per second, from its first delivery until the queue was empty. */
  drain: number;
  /** The schema's tables and indexes on disk after the day, in MB. */
  sizeMb: number;
  overran: boolean;
}

async function schemaSizeMb(schema: string): Promise<number> {
  return withClient(async (client) => {
    const { rows } = await client.query(
      `select coalesce(sum(pg_total_relation_size(c.oid)), 0) as bytes from pg_class c
         join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind in ('r', 'm', 't')`,
      [schema],
    );
    return Number(rows[0].bytes) / 2 ** 20;
  });
}

async function queued(schema: string): Promise<number> {
  return withClient(async (client) => Number((await client.query(`select count(*) as n from "${schema}".inbox_queue`)).rows[0].n));
}

export async function benchYear(): Promise<Section> {
  const days = Math.max(10, Math.round(30 * Math.min(1, scale() * 3)));
  const perDay = scaled(100_000);
  // Long enough for a day's deliveries to be received and drained on a 2-core machine; a day that takes longer
  // overruns into the next partition (reported).
  const dayS = Number(process.env.BENCH_YEAR_DAY_S ?? Math.max(8, Math.round(60 * scale())));
  const schema = benchSchema('year');
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-year-'));
  const configFile = join(dir, 'payhooks.config.json');
  writeFileSync(
    configFile,
    JSON.stringify({ history: { partition: `${dayS}s`, retention: { history: `${dayS * RETENTION_DAYS}s` }, ahead: 3 } }),
  );
  const server = await startServer(
    payhooksArgs('serve', '--handlers', 'bench/noop-handlers.mjs'),
    { PAYHOOKS_WEBHOOK_SECRET: SECRET, DATABASE_URL: databaseUrl, PAYHOOKS_SCHEMA: schema, PAYHOOKS_CONFIG: configFile },
    await freePort(),
    '/readyz',
  );
  const results: Day[] = [];
  let redelivery = { status: 0, duplicate: false, storedAgain: -1, deliveries: 0 };
  let deleted = -1;
  try {
    for (let day = 1; day <= days; day++) {
      // Each day starts at a partition boundary, so that its events fill a partition of their own.
      const boundary = Math.ceil(Date.now() / (dayS * 1000)) * dayS * 1000;
      await new Promise((resolve) => setTimeout(resolve, boundary - Date.now() + 50));
      const started = Date.now();
      const load = await sendDeliveries({
        url: `${server.url}/webhooks`,
        connections: CONNECTIONS,
        amount: perDay,
        duplicateShare: 0,
        runId: `y${day}`,
      });
      while ((await queued(schema)) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      const ended = Date.now();
      const row: Day = {
        day,
        ingest: load.requestsPerSecond,
        p99Ms: load.p99Ms,
        non2xx: load.non2xx + load.errors,
        drain: perDay / ((ended - started) / 1000),
        sizeMb: await schemaSizeMb(schema),
        overran: ended > boundary + dayS * 1000,
      };
      results.push(row);
      console.info(
        `  year: day ${day}: ${whole(row.ingest)} req/s, p99 ${row.p99Ms} ms, drained ${whole(row.drain)}/s, ${row.sizeMb.toFixed(0)} MB${row.overran ? ' (overran its partition)' : ''}`,
      );
    }
    // Day 1's first event, delivered again on the last day, long after its history was dropped.
    const body = deliveryBody('y1', 0);
    const answer = await fetch(`${server.url}/webhooks`, { method: 'POST', body, headers: signedHeaders(body) });
    const answered = (await answer.json()) as { duplicate?: boolean };
    const eventId = (JSON.parse(body) as { eventId: string }).eventId;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    redelivery = await withClient(async (client) => {
      const stored = await client.query(`select count(*) as n from "${schema}".inbox_events where event_id = $1`, [eventId]);
      const ledger = await client.query(`select deliveries from "${schema}".event_ledger where event_id = $1`, [eventId]);
      return {
        status: answer.status,
        duplicate: answered.duplicate === true,
        storedAgain: Number(stored.rows[0].n),
        deliveries: ledger.rows[0]?.deliveries ?? 0,
      };
    });
    // Retention deletes no row: what it removes goes with its partition, so the history's tables count no deletion.
    deleted = await withClient(async (client) => {
      const { rows } = await client.query(
        `select coalesce(sum(n_tup_del), 0) as deleted from pg_stat_user_tables
          where schemaname = $1 and relname ~ '^(inbox_events|handler_runs|handler_attempts|effect_steps)_'`,
        [schema],
      );
      return Number(rows[0].deleted);
    });
  } finally {
    await server.stop();
    await dropSchemas([schema]);
  }
  const drop = await timeOneDrop(perDay);
  const first = results[0]!;
  const last = results.at(-1)!;
  const within = (a: number, b: number) => Math.abs(a - b) / b <= 0.2;
  // Levelled: from the day after retention starts dropping, the size stays within 25% of that day's.
  const settled = results.slice(RETENTION_DAYS + 1);
  const plateau = settled[0]?.sizeMb ?? Number.NaN;
  const levelled = settled.every((d) => d.sizeMb <= plateau * 1.25);
  const failed = results.reduce((sum, d) => sum + d.non2xx, 0);
  return {
    title: 'Compressed year',
    about:
      `${days} "days" of ${whole(perDay)} signed 2,048-byte deliveries each (unique ids), sent by autocannon on ${CONNECTIONS} connections to ` +
      '`payhooks serve --handlers bench/noop-handlers.mjs` on the local PostgreSQL server (receiver and worker child), each day a partition of ' +
      `${dayS} s (\`history: { partition: '${dayS}s', retention: { history: '${dayS * RETENTION_DAYS}s' } }\`: 7 days of history). Each day starts at a partition ` +
      'boundary; its drain rate is its events over the time from its first delivery until the queue was empty (the worker drains while deliveries ' +
      "arrive). Size: the schema's tables and indexes (`pg_total_relation_size`), since the database is shared with other schemas. One run.",
    header: ['day', 'ingest (req/s)', 'p99 (ms)', 'drain (events/s)', 'schema on disk (MB)'],
    rows: results.map((d) => [
      `${d.day}${d.overran ? ' (overran)' : ''}`,
      whole(d.ingest),
      String(d.p99Ms),
      whole(d.drain),
      d.sizeMb.toFixed(0),
    ]),
    targets: [
      { text: `zero non-2xx over the ${days} days: ${whole(failed)}`, met: failed === 0 },
      {
        text: `ingest on the last day within 20% of the first: ${times(last.ingest / first.ingest)}`,
        met: within(last.ingest, first.ingest),
      },
      {
        text: `p99 on the last day within 20% of the first: ${last.p99Ms} ms against ${first.p99Ms} ms`,
        met: last.p99Ms <= first.p99Ms * 1.2,
      },
      { text: `drain on the last day within 20% of the first: ${times(last.drain / first.drain)}`, met: within(last.drain, first.drain) },
      {
        text: `size on disk levels off after day ${RETENTION_DAYS}: from ${plateau.toFixed(0)} MB on day ${RETENTION_DAYS + 2} to ${last.sizeMb.toFixed(0)} MB on day ${last.day}`,
        met: levelled,
      },
      {
        text: `a day-1 event delivered again on day ${last.day}: ${redelivery.status}, duplicate ${redelivery.duplicate}, stored again ${redelivery.storedAgain} times, ledger deliveries ${redelivery.deliveries}`,
        met: redelivery.status === 200 && redelivery.duplicate && redelivery.storedAgain === 0 && redelivery.deliveries === 2,
      },
      {
        text: `rows deleted from the history's tables over the run (retention drops, never deletes): ${whole(deleted)}`,
        met: deleted === 0,
      },
      {
        text: `dropping one partition of ${whole(drop.events)} finished events (every history table): ${drop.ms.toFixed(0)} ms, under a second; dead tuples left in the remaining partitions: ${whole(drop.deadAfter)}`,
        met: drop.ms < 1000 && drop.deadAfter === 0 && drop.events === perDay,
      },
    ],
  };
}

/**
 * Retention of one partition of `count` finished events, timed alone: the events are written into the partition of two
 * days ago (as a worker leaves them: done, with a handler run each), then everything older than a day is dropped.
 */
async function timeOneDrop(count: number): Promise<{ ms: number; events: number; deadAfter: number }> {
  const schema = benchSchema('drop');
  const store = await openDatabase({ url: databaseUrl, schema });
  try {
    await migrate(store);
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    await ensureHistoryPartitions(store, { from: twoDaysAgo });
    const at = twoDaysAgo.toISOString();
    await sql`insert into ${sql.id(schema, 'event_ledger')} (event_id, account, first_received_at, body_sha256)
              select 'evt_' || n, 'default', ${at}::timestamptz, '\\x00' from generate_series(1, ${count}) n`.execute(store.db);
    await sql`insert into ${sql.id(schema, 'inbox_events')} (event_id, account, event_type, raw_body, received_at, status, processed_at)
              select 'evt_' || n, 'default', 'INVOICE_PAID', repeat('x', 2000), ${at}::timestamptz, 'done', now() from generate_series(1, ${count}) n`.execute(
      store.db,
    );
    await sql`delete from ${sql.id(schema, 'inbox_queue')}`.execute(store.db);
    await sql`insert into ${sql.id(schema, 'handler_runs')} (event_id, account, handler, received_at)
              select 'evt_' || n, 'default', 'noop', ${at}::timestamptz from generate_series(1, ${count}) n`.execute(store.db);
    await sql`vacuum analyze ${sql.id(schema, 'inbox_queue')}`.execute(store.db);
    const started = performance.now();
    const report = await dropHistoryPartitions(store, { before: new Date(Date.now() - 86_400_000) });
    const ms = performance.now() - started;
    const dead = await sql<{ dead: string }>`select coalesce(sum(n_dead_tup), 0) as dead from pg_stat_user_tables
      where schemaname = ${schema} and relname ~ '^(inbox_events|handler_runs|handler_attempts|effect_steps)_'`.execute(store.db);
    return { ms, events: report.dropped.reduce((sum, p) => sum + p.events, 0), deadAfter: Number(dead.rows[0]!.dead) };
  } finally {
    await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
    await store.close();
  }
}
