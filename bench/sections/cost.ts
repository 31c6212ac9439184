// Per-event cost of each path, counted rather than timed: statements (each one round trip), transactions, rows and
// index entries written, and WAL bytes. Statements are counted inside the payhooks process (a preloaded counter, see
// lib/count-queries.mjs); everything written is read back from the WAL itself (pg_walinspect), keeping only the
// records of this run's schema, so that other users of the server do not count.
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchSchema, databaseUrl, dropSchemas, withClient } from '../lib/database.js';
import { SECRET, sendDeliveries } from '../lib/load.js';
import { freePort, payhooksArgs, type Server, startServer } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { scaled, whole } from '../lib/stats.js';
import { payhooksSchema, storeBacklog } from './drain.js';

const EVENTS = scaled(20_000);
/** Statements a process makes on its own while idle (polls, upkeep): read off before the measured part starts. */
const SETTLE_MS = 1500;

interface QueryLog {
  counts: Record<string, number>;
}

function readQueryLog(path: string): QueryLog {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as QueryLog;
  } catch {
    return { counts: {} };
  }
}

/** Statements by kind between two readings of a process's counter. */
function statementsBetween(before: QueryLog, after: QueryLog): Map<string, number> {
  const made = new Map<string, number>();
  for (const [kind, n] of Object.entries(after.counts)) {
    const more = n - (before.counts[kind] ?? 0);
    if (more > 0) made.set(kind, more);
  }
  return made;
}

/** What the WAL holds for one schema between two positions, by relation and record type. */
interface WalTally {
  bytes: number;
  fpiBytes: number;
  commits: number;
  /** Heap row versions written (insert, update, HOT update, delete, lock) and index entries, by relation. */
  records: Map<string, number>;
  /** WAL bytes by table, its heap and its indexes apart. */
  byRelation: Map<string, number>;
}

async function walInspect(schema: string): Promise<string> {
  const inspect = `${schema}_wal`;
  await withClient(async (client) => {
    await client.query(`create schema "${inspect}"`);
    await client.query(`create extension if not exists pg_walinspect with schema "${inspect}"`);
  });
  return inspect;
}

async function currentLsn(): Promise<string> {
  return withClient(async (client) => String((await client.query('select pg_current_wal_lsn() as lsn')).rows[0].lsn));
}

/**
 * The WAL records between `from` and `to` that touch a relation of `schema` (heap, index or TOAST), plus the commit
 * records of their transactions, less those of `excludeXids` (the bench's own loading).
 */
async function tallyWal(inspect: string, schema: string, from: string, to: string, excludeXids: string[]): Promise<WalTally> {
  return withClient(async (client) => {
    const { rows } = await client.query<{ name: string; rmgr: string; type: string; n: string; bytes: string; fpi: string }>(
      `with rels as (
         select c.relfilenode, c.relname::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = $1 and c.relfilenode <> 0
         union all
         select t.relfilenode, c.relname || ' (toast)' from pg_class c join pg_namespace n on n.oid = c.relnamespace
           join pg_class t on t.oid = c.reltoastrelid where n.nspname = $1
       ),
       recs as (
         select w.xid, w.resource_manager as rmgr, split_part(w.record_type, ' ', 1) as type, w.record_length, w.fpi_length,
                (regexp_match(w.block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid as relfilenode
           from "${inspect}".pg_get_wal_records_info($2::pg_lsn, $3::pg_lsn) w
       ),
       ours as (
         select r.*, rels.name from recs r join rels on rels.relfilenode = r.relfilenode
          where r.xid::text <> all($4::text[])
       ),
       xids as (select distinct xid from ours where xid::text <> '0')
       select name, rmgr, type, count(*) as n, sum(record_length) as bytes, sum(fpi_length) as fpi from ours group by 1, 2, 3
       union all
       select 'commit', 'Transaction', 'COMMIT', count(*), coalesce(sum(r.record_length), 0), 0
         from recs r join xids x on x.xid = r.xid where r.rmgr = 'Transaction' and r.type like 'COMMIT%'`,
      [schema, from, to, excludeXids],
    );
    const tally: WalTally = { bytes: 0, fpiBytes: 0, commits: 0, records: new Map(), byRelation: new Map() };
    for (const row of rows) {
      tally.bytes += Number(row.bytes);
      tally.fpiBytes += Number(row.fpi);
      if (row.name === 'commit') tally.commits += Number(row.n);
      else {
        // Partitions are named after their table with a suffix: one line per table.
        const table = row.name.replace(/_p\d{8}t\d{6}/, '').replace(/_legacy/, '');
        const key = `${table} ${row.rmgr === 'Btree' ? 'index' : row.rmgr.toLowerCase()} ${row.type.toLowerCase()}`;
        tally.records.set(key, (tally.records.get(key) ?? 0) + Number(row.n));
        const where = row.rmgr === 'Btree' ? `${table} (index)` : table.replace(/_pkey$/, '');
        tally.byRelation.set(where, (tally.byRelation.get(where) ?? 0) + Number(row.bytes));
      }
    }
    return tally;
  });
}

interface PathCost {
  path: string;
  events: number;
  statements: Map<string, number>;
  wal: WalTally;
}

/** The worker: a backlog stored beforehand (its WAL left out), drained by one `serve --role worker` process. */
async function workerCost(inspect: string, logPath: string): Promise<PathCost> {
  const schema = await payhooksSchema(0);
  let worker: Server | undefined;
  try {
    worker = await startServer(
      ['--import', './bench/lib/count-queries.mjs', ...payhooksArgs('serve', '--role', 'worker', '--handlers', 'bench/noop-handlers.mjs')],
      { DATABASE_URL: databaseUrl, PAYHOOKS_SCHEMA: schema, BENCH_QUERY_LOG: logPath },
      await freePort(),
    );
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const before = readQueryLog(logPath);
    const from = await currentLsn();
    const xids: string[] = [];
    await storeBacklog(schema, 'cost', EVENTS, { xids });
    await withClient(async (client) => {
      for (;;) {
        const { rows } = await client.query(`select count(*) as n from "${schema}".inbox_queue`);
        if (Number(rows[0].n) === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const after = readQueryLog(logPath);
    const to = await currentLsn();
    return {
      path: 'worker (claim, no-op handler, outcome)',
      events: EVENTS,
      statements: statementsBetween(before, after),
      wal: await tallyWal(inspect, schema, from, to, xids),
    };
  } finally {
    await worker?.stop();
    await dropSchemas([schema]);
  }
}

/** The receiver: `serve --role receiver`, unique signed deliveries from autocannon (50 connections). */
async function receiverCost(inspect: string, logPath: string): Promise<PathCost> {
  const schema = benchSchema('costrecv');
  let server: Server | undefined;
  try {
    server = await startServer(
      ['--import', './bench/lib/count-queries.mjs', ...payhooksArgs('serve', '--role', 'receiver')],
      { PAYHOOKS_WEBHOOK_SECRET: SECRET, DATABASE_URL: databaseUrl, PAYHOOKS_SCHEMA: schema, BENCH_QUERY_LOG: logPath },
      await freePort(),
      '/readyz',
    );
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const before = readQueryLog(logPath);
    const from = await currentLsn();
    const load = await sendDeliveries({ url: `${server.url}/webhooks`, connections: 50, amount: EVENTS, duplicateShare: 0, runId: 'cost' });
    if (load.non2xx + load.errors > 0) throw new Error(`cost: ${load.non2xx} non-2xx answers and ${load.errors} errors from the receiver`);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const after = readQueryLog(logPath);
    const to = await currentLsn();
    return {
      path: 'receiver (verify, store, 200)',
      events: EVENTS,
      statements: statementsBetween(before, after),
      wal: await tallyWal(inspect, schema, from, to, []),
    };
  } finally {
    await server?.stop();
    await dropSchemas([schema]);
  }
}

const per = (n: number, events: number) => (n / events).toFixed(n / events >= 10 ? 0 : 3);

export async function benchCost(): Promise<Section> {
  const logPath = join(tmpdir(), `payhooks-bench-queries-${process.pid}.json`);
  const inspect = await walInspect(benchSchema('cost'));
  const costs: PathCost[] = [];
  try {
    costs.push(await workerCost(inspect, logPath));
    rmSync(logPath, { force: true });
    costs.push(await receiverCost(inspect, logPath));
  } finally {
    rmSync(logPath, { force: true });
    await dropSchemas([inspect]);
  }
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const cost of costs) {
    const statements = [...cost.statements.values()].reduce((a, b) => a + b, 0);
    const heap = [...cost.wal.records].filter(([key]) => / heap2? /.test(key)).reduce((a, [, n]) => a + n, 0);
    const index = [...cost.wal.records].filter(([key]) => key.includes(' index ')).reduce((a, [, n]) => a + n, 0);
    rows.push([
      cost.path,
      whole(cost.events),
      per(statements, cost.events),
      per(cost.wal.commits, cost.events),
      per(heap, cost.events),
      per(index, cost.events),
      whole(cost.wal.bytes / cost.events),
      whole(cost.wal.fpiBytes / cost.events),
    ]);
    const kinds = [...cost.statements]
      .sort((a, b) => b[1] - a[1])
      .map(([kind, n]) => `\`${kind.slice(0, 40).replaceAll('`', "'")}…\` ${per(n, cost.events)}`);
    // Page splits, vacuum and the like are a few hundredths of a record per event: left out of the note.
    const records = [...cost.wal.records]
      .filter(([, n]) => n / cost.events >= 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([key, n]) => `${key} ${per(n, cost.events)}`);
    const bytes = [...cost.wal.byRelation]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([where, n]) => `${where} ${whole(n / cost.events)}`);
    notes.push(
      `${cost.path}, per event: statements ${kinds.join(', ')}; WAL bytes ${bytes.join(', ')}; WAL records ${records.join(', ')}.`,
    );
  }
  notes.push(
    'Against the section before issue 27 below: the worker makes a quarter of the statements and commits per event (0.004 against ' +
      '0.018: claims of about 500 and outcome batches to match, instead of about 100), and each of them no longer scans the queue or ' +
      'the ledger; the rows, index entries and WAL bytes per event are the same, since issue 27 changed no table. Where they go: the ' +
      'outcome rewrites the history row of the event with its final state (a new row version, body included, about 1,100 of the ' +
      "2,460 bytes, and three index entries, since `status` is indexed), and the claim's lease is a non-HOT update of the queue row " +
      '(its indexed `run_at` carries the lease, so three more index entries). Those are the next cuts, and both need a migration: ' +
      'keeping the final state apart from the row that holds the body (or the body out of line), and the lease in a column of its own.',
  );
  return {
    title: 'Per-event cost',
    about:
      `What one event costs each path, counted over ${whole(EVENTS)} events, not timed. The worker: a backlog stored first (its own WAL left out), ` +
      'drained by one `payhooks serve --role worker --handlers bench/noop-handlers.mjs`; the receiver: `payhooks serve --role receiver` answering ' +
      `${whole(EVENTS)} unique signed 2,048-byte deliveries from autocannon on 50 connections. Statements (each one round trip) are counted in the ` +
      'process by a preloaded counter ([lib/count-queries.mjs](lib/count-queries.mjs)); transactions, heap rows, index entries and WAL bytes are ' +
      "read back from the WAL with pg_walinspect, only the records of the run's own schema (other users of the server do not count). " +
      'A heap row is a row version written (insert, update, HOT update, delete, or lock); FPI: full-page images, paid on the first change to a page ' +
      'after a checkpoint.',
    header: [
      'path',
      'events',
      'statements / event',
      'commits / event',
      'heap rows / event',
      'index entries / event',
      'WAL bytes / event',
      'of which FPI',
    ],
    rows,
    notes,
    targets: [],
  };
}
