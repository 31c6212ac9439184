// Drain: a stored backlog through the full worker path (claim, run a no-op handler, record), in 1 and 2 worker
// processes, against graphile-worker (the issue's job-queue reference) draining as many no-op jobs, measured the same way.
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { storeEvents } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { readDelivery } from '../../src/receiver/read-delivery.js';
import { type CpuPerRequest, cpuPerRequest, medianCpu, readCpu } from '../lib/cpu.js';
import { benchSchema, checkpoint, databaseUrl, dropSchemas, withClient } from '../lib/database.js';
import { deliveryBody } from '../lib/load.js';
import { freePort, payhooksArgs, startServer, tsxArgs } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { median, percent, rounds, scaled, times, whole } from '../lib/stats.js';

const HISTORY = scaled(1_000_000);
const BACKLOGS = [scaled(30_000), scaled(100_000)];
const PROCESSES = [1, 2];
/**
 * The backlog of one invoice that the "one busy resource" note drains, against as many events of distinct invoices:
 * 2,000, where the claims that cost the square of it (before migration 013) drained 4 events/s.
 */
const ONE_RESOURCE_BACKLOG = scaled(2000);

/** A fresh payhooks schema, with `history` finished events in it (written in bulk, as if processed long ago). */
export async function payhooksSchema(history: number): Promise<string> {
  const schema = benchSchema('drain');
  const store = await openDatabase({ url: databaseUrl, schema });
  try {
    await migrate(store);
    // As createPayhooks does when it opens the database: the history's partitions, ready before any row arrives.
    await ensureHistoryPartitions(store);
  } finally {
    await store.close();
  }
  if (history > 0) {
    await withClient(async (client) => {
      const body = deliveryBody('history', 0);
      await client.query(
        `insert into "${schema}".inbox_events (event_id, account, event_type, resource_key, raw_body, status, attempts, processed_at)
         select 'old_' || n, 'default', 'INVOICE_PAID', 'invoice:old_' || n, $1, 'done', 1, now() from generate_series(1, $2::int) n`,
        [body, history],
      );
      // Every event received is in the ledger too (it answers duplicates long after the body is pruned).
      await client.query(
        `insert into "${schema}".event_ledger (event_id, account, first_received_at, body_sha256, resource_key, seq)
         select event_id, account, received_at, sha256(convert_to(raw_body, 'UTF8')), resource_key, seq from "${schema}".inbox_events`,
      );
      await client.query(`vacuum analyze "${schema}".inbox_events`);
      await client.query(`vacuum analyze "${schema}".event_ledger`);
    });
  }
  return schema;
}

/**
 * Stores `count` deliveries as the receiver would (1,000 per statement; the trigger queues them), in one
 * transaction, so that running workers see the whole backlog at once. The transaction's id goes into `xids` (the cost
 * section leaves its WAL out). With `oneResource`, every event is of that one invoice (the stored key; the bodies stay
 * distinct).
 */
export async function storeBacklog(
  schema: string,
  runId: string,
  count: number,
  { xids, oneResource, accounts }: { xids?: string[]; oneResource?: string; accounts?: readonly string[] } = {},
): Promise<void> {
  const opened = await openDatabase({ url: databaseUrl, schema });
  try {
    await opened.db.transaction().execute(async (trx) => {
      const store = { ...opened, db: trx };
      if (xids) {
        // The 32-bit id the WAL records carry.
        const { rows } = await sql<{ xid: string }>`select (pg_current_xact_id()::text::bigint % 4294967296)::text as xid`.execute(trx);
        xids.push(rows[0]!.xid);
      }
      for (let start = 0; start < count; start += 1000) {
        const batch = [];
        for (let n = start; n < Math.min(count, start + 1000); n++) {
          // Read as the receiver reads a delivery, so that the stored row (its resource key, its data check) is the same.
          const read = readDelivery(Buffer.from(deliveryBody(runId, n)), {});
          if (!read.ok) throw new Error(`drain: the bench's delivery ${n} is refused: ${read.message}`);
          const event = oneResource ? { ...read.event, resourceKey: `invoice:${oneResource}` } : read.event;
          // Spread over the accounts in turn, as deliveries of many organizations arrive interleaved.
          batch.push(accounts ? { ...event, account: accounts[n % accounts.length] } : event);
        }
        await storeEvents(store, batch);
      }
    });
  } finally {
    await opened.close();
  }
}

/** How often the remaining count is read while a backlog drains, as the issue measured the job queues. */
const POLL_MS = 100;

/**
 * Reads `countSql` every {@link POLL_MS} until it is 0 and resolves to when it first was (performance.now()). The
 * same measure for every contender: payhooks' queue and graphile-worker's jobs table both hold only unfinished work.
 */
async function whenDrained(countSql: string): Promise<number> {
  return withClient(async (client) => {
    const deadline = Date.now() + 900_000;
    for (;;) {
      const { rows } = await client.query(countSql);
      if (Number(rows[0].n) === 0) return performance.now();
      if (Date.now() > deadline) throw new Error(`drain: still ${rows[0].n} left after 15 minutes (${countSql})`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  });
}

/** One measured drain: its rate, and the CPU per event of the workers, PostgreSQL and the machine while it ran. */
export interface DrainRun {
  rate: number;
  cpu: CpuPerRequest;
}

/**
 * Stores the backlog with `enqueue` while workers already run, and measures as the issue does: jobs / (first finished ..
 * last finished), the remaining count read by SQL every 100 ms. The first job can finish no earlier than the commit
 * that makes the backlog visible, so the span starts there (never shorter than the true one) and ends at the first
 * poll that finds nothing left. The CPU is read over the same span: `workerPids`' processes, PostgreSQL's, the machine's.
 */
async function measureDrain(
  backlog: number,
  enqueue: () => Promise<void>,
  countSql: string,
  workerPids: readonly (number | undefined)[],
): Promise<DrainRun> {
  await enqueue();
  const committed = performance.now();
  const before = readCpu(workerPids);
  const emptied = await whenDrained(countSql);
  return { rate: (backlog / (emptied - committed)) * 1000, cpu: cpuPerRequest(before, readCpu(workerPids), backlog) };
}

/** Events each run's workers drain first, unmeasured, so that the measured drain runs warm (V8 has optimised the path). */
const WARM_UP = 5000;

/** Which handlers a drain's workers run: a `--handlers` module and the environment it reads. */
export interface DrainHandlers {
  module: string;
  env?: Record<string, string>;
}

/**
 * Drains the backlog with `processes` workers, started and warmed up beforehand; events/s measured by
 * {@link measureDrain} (with the CPU it took), after checking that every event of the backlog is done. The workers run one no-op handler
 * unless `handlers` says otherwise; `nodeArgs` go before the CLI's (`--import` of a tracing setup, say); with
 * `oneResource`, the measured backlog is all of that one invoice.
 */
export async function drainWithWorkers(
  schema: string,
  runId: string,
  backlog: number,
  processes: number,
  {
    handlers = { module: 'bench/noop-handlers.mjs' },
    nodeArgs = [],
    oneResource,
    accounts,
  }: { handlers?: DrainHandlers; nodeArgs?: readonly string[]; oneResource?: string; accounts?: readonly string[] } = {},
): Promise<DrainRun> {
  const env = { ...handlers.env, DATABASE_URL: databaseUrl, PAYHOOKS_SCHEMA: schema };
  const countSql = `select count(*) as n from "${schema}".inbox_queue`;
  const workers = await Promise.all(
    Array.from({ length: processes }, async () =>
      startServer([...nodeArgs, ...payhooksArgs('serve', '--role', 'worker', '--handlers', handlers.module)], env, await freePort()),
    ),
  );
  let run: DrainRun;
  try {
    await storeBacklog(schema, `${runId}w`, WARM_UP, { accounts });
    await whenDrained(countSql);
    await checkpoint();
    run = await measureDrain(
      backlog,
      () => storeBacklog(schema, runId, backlog, { oneResource, accounts }),
      countSql,
      workers.map((worker) => worker.child.pid),
    );
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
  await withClient(async (client) => {
    const { rows } = await client.query(
      `select count(*) as n, count(*) filter (where status = 'done') as done from "${schema}".inbox_events where event_id like $1`,
      [`evt_%${runId}-%`],
    );
    const { n, done } = rows[0] as { n: string; done: string };
    if (Number(done) !== backlog) throw new Error(`drain: ${done} of ${n} events done, expected ${backlog}`);
  });
  return run;
}

/** A schema for graphile-worker's tables (it makes them when its runner starts). */
function graphileSchema(): string {
  return benchSchema('graphile');
}

/** Adds `count` no-op jobs in one statement (graphile-worker's own add_jobs), each with a 2 KB payload like a delivery. */
async function addJobs(schema: string, count: number): Promise<void> {
  await withClient(async (client) => {
    await client.query(
      `select "${schema}".add_jobs(array(select row('noop', $1::json, null, null, null, null, null, null)::"${schema}".job_spec
                                           from generate_series(1, $2::int)))`,
      [deliveryBody('jobs', 0), count],
    );
  });
}

/** graphile-worker drains the same backlog of no-op jobs, measured the same way. */
async function drainWithGraphile(schema: string, backlog: number): Promise<DrainRun> {
  const worker = await startServer(
    tsxArgs('bench/servers/graphile-worker.ts'),
    { DATABASE_URL: databaseUrl, BENCH_SCHEMA: schema },
    await freePort(),
  );
  const countSql = `select count(*) as n from "${schema}"._private_jobs`;
  try {
    await addJobs(schema, WARM_UP);
    await whenDrained(countSql);
    await checkpoint();
    return await measureDrain(backlog, () => addJobs(schema, backlog), countSql, [worker.child.pid]);
  } finally {
    await worker.stop();
  }
}

/**
 * What bounds payhooks against graphile-worker, from the CPU profiles of `serve --role worker`, EXPLAIN (ANALYZE,
 * BUFFERS) of its two statements and the per-event cost section: said with the table, so that a miss says why. Each
 * figure names the machine and day it was measured on; the table above it is the run's own.
 */
const BOUNDS: readonly string[] = [
  'What bounds the drain (CPU profiles of `serve --role worker`, `EXPLAIN (ANALYZE, BUFFERS)` of its claim and outcome ' +
    'statements, and the [per-event cost](#per-event-cost)):',
  [
    '- **More work per event than a job.** Each event costs what a job costs graphile-worker (a statement that leases it ' +
      'and one that removes it, both in batches) and more. The claim keeps per-resource order (a probe of the ' +
      "queue's resource index per candidate) and brings the event's body and settled handlers along. The outcome " +
      "inserts the handler's completion into `handler_runs` (what replays and retries read) and rewrites the event's " +
      'history row with its final state (a new row version, body included, and three index entries: about 1,100 of ' +
      'the 2,400 WAL bytes per event). Unloaded, in batches of 1,000: about 26 µs of database time per event for the ' +
      'claim, 29 µs for the outcome.',
    "- **The worker's CPU, a third of it garbage collection.** On the Intel Xeon at 2.6 GHz (27 Nov, evening) the " +
      'worker spent about 48 µs of CPU per no-op event (graphile-worker 29 µs per job): 36% garbage collection (some ' +
      '130 young-generation collections of about 10 ms in a drain of 65,000, each keeping 4 to 5 MB alive, since ' +
      '2,000 to 3,000 finished events wait for their outcome batch and up to 1,000 claimed ones for a slot), 11% ' +
      'JSON.parse of the 2 KB body, 9% writing statements to the socket. The whole machine spent about 104 µs per ' +
      'event (worker, PostgreSQL, the poller): the two cores were about 80% busy at 16,000 events/s. An allocation ' +
      'profile on an AMD EPYC at 2.1 GHz (27 Nov, afternoon: 75 to 99 µs of worker CPU per event there, 41% of it ' +
      "collection) found about 22 KB allocated per event, spread thinly: the pg driver's row parsing with the body " +
      "2.7 KB, the outcome statement's arrays written out as text 2.2 KB, the parsed body 1.2 KB, the OpenTelemetry " +
      "API's no-op spans 1.7 KB. Those spans are gone since (no API span without a registered tracer provider: 49.7 " +
      'to 46.3 µs per event, A/B of 4 rounds on an AMD EPYC at 2.6 GHz, 27 Nov).',
    '- **Where the collections come from** (by hand, AMD EPYC at 2.1 GHz, 28 Nov; backlog 30,000, one process). ' +
      'PostgreSQL spent about as much per event as per graphile-worker job (105 to 118 µs against 94 to 139, the ' +
      "CPU columns above measure it in every run); the gap is the worker's own CPU (78 to 93 µs against 48 to 53). " +
      '`--trace-gc-nvp`: 72 young-generation collections in a drain of 35,000, 1.2 s of pauses, 545 MB copied, about ' +
      "15 KB per event: 45 to 60% of what the worker allocates is still alive when a collection comes. V8's sampling " +
      'heap profiler, keeping only what no young collection freed: the strings of the claimed rows (86% of them ' +
      'survive, the body with them) and the parsed bodies. A young generation four times larger ' +
      '(`--max-semi-space-size=64`) cut the collections to 30 but the copied bytes only to 408 MB, at the same rate ' +
      '(9,221 and 9,018 against 9,017 and 9,154 events/s); a prefetch of 100 or 250 instead of 1,000, or outcome ' +
      'batches of 100 instead of 1,000, left the surviving bytes as they were (485 to 530 MB) and cost more claims ' +
      '(6,335 and 6,558 against 7,822 and 7,820 events/s at 250). Bodies claimed as bytea (a Buffer, off the JS heap ' +
      'until their run) cut the copied bytes by a fifth (538 to 415 MB) and the pauses by 15%, at the same rate ' +
      '(7,834 and 7,873 against 7,803 and 8,501): PostgreSQL writes bytea out as hex, twice the bytes. The bytes ' +
      'live because each claim brings hundreds of events at once and runs them in one burst, whose allocation is ' +
      'what triggers the collection mid-burst: ' +
      'cutting that means claiming and running without the batches that make the database side cheap.',
    '- **Two shared cores.** The workers, PostgreSQL, graphile-worker and the poller share them: read the ratio, ' +
      'measured in the same run, rather than the rates. The ratio moves with the machine: graphile-worker gains more ' +
      'from faster cores than payhooks does (without history: 0.86x to 0.89x on the EPYC at 2.1 GHz, 0.72x to 0.81x ' +
      'on an EPYC at 2.6 GHz, both 27 Nov; 0.89x to 0.90x on the Xeon). A second process helps only where one leaves ' +
      "the cores idle: on 28 Nov, on a host 40% slower per operation than that afternoon's, one process kept the " +
      'machine 83 to 90% busy and two 94 to 98%. Two were then no faster than one in one or two cases of four, ' +
      "never the same ones: in the evening's first run both cases with history (15,946 and 16,874 against 16,051 " +
      'and 17,279 events/s), in its second only backlog 100,000 with history (16,390 against 17,051); the ' +
      "afternoon's run had them faster in 4 cases of 4.",
    '- **History.** With 1,000,000 finished events the database is the larger part and the rounds vary most (one ' +
      'process: 11,127 to 18,734 events/s on the EPYC at 2.6 GHz of 27 Nov; 11,824, 6,579 and 6,013 on the Xeon the ' +
      'same evening): each run writes WAL on top of the backlog, and checkpoints fall inside it. An A/B on fresh ' +
      'schemas with that history gave the build without prepared statements and the build with them the same rates ' +
      'within the spread (11,090 and 8,743 against 13,385 and 8,942 events/s). On 28 Nov (EPYC at 2.1 GHz) one ' +
      'schema with that history drained 30,000 at 4,794 to 6,235 events/s in four rounds just after it was made, ' +
      "and at 7,660 to 9,158 in six rounds an hour later (PostgreSQL's CPU per event 171 to 229 µs, then 104 to " +
      '131); another, just made, at 9,303 in its first round. Nothing tied the slow rounds to the history: autovacuum ' +
      'never ran on the schema (pg_stat_user_tables), the kernel had written the bulk load back within 35 s ' +
      "(/proc/meminfo), and the outcome's new row versions all went to the end of the partition (pages 126,372 to " +
      "133,735 of 133,736, by ctid), not into free space among old rows. The same statements cost PostgreSQL's " +
      'processes twice the CPU in some rounds, with nothing else running in it.',
    '- **Plans** (28 Nov, EPYC at 2.1 GHz). auto_explain (`log_analyze`, `log_buffers`, 3% of statements) in a ' +
      'draining worker, 1,000,000 of history and 26,000 queued: the claim walks the due index and reaches each row by ' +
      "key, as intended; the outcome's delete read the whole queue (given 504 ids outright, the planner chose one " +
      "pass over it: 10 to 15 ms of the statement's 43). Its ids, and the heartbeat's, now travel as an array the " +
      'planner cannot count, and the delete probes the primary key (1.4 ms). No gain in the drain came of it: ' +
      'medians of 7,736 events/s with the change and 8,287 without, all rounds within 7,591 to 8,640 (A/B, 4 ' +
      'rounds each, backlog 30,000, no history), and outcome batches of 500 unloaded at 48 to 57 µs per event ' +
      'against 54 to 58: while the queue is in shared buffers a pass over it costs little next to the per-row work. ' +
      'A second A/B, backlog 100,000, 3 rounds each: 8,065 to 8,218 events/s before, 6,935 to 8,152 with the plans ' +
      'alone, 6,782 to 7,915 with the plans and the change to the vacuum (below); the slow ones all ran together, minutes apart ' +
      'from the rest, and the worker and PostgreSQL spent the same CPU per event in the quiet rounds of all three ' +
      '(80 to 84 µs and 138 to 144). Kept for what a deeper queue would cost: the pass grows with the queue, per ' +
      'batch. ' +
      "pg_stat_activity sampled every 50 ms showed the worker's VACUUM of the queue waiting in " +
      'Timeout:VacuumTruncate in most drains (up to 0.8 s, holding one of its connections): it now runs with ' +
      '`TRUNCATE false`. A CPU profile of the worker draining 60,000: garbage collection 43% of its busy time, ' +
      'JSON.parse of the bodies 9%, writes to the socket 5%.',
    '- **History, one process** (28 Nov, EPYC at 2.6 GHz). Until e6b429e one process reached 0.64x to 0.73x of ' +
      'graphile-worker with 1,000,000 finished events. The history was not the cause: on one history schema the ' +
      'rounds were either about 21,700 events/s or about 16,600, with PostgreSQL at 45 to 48 µs per event or 62 to 65, ' +
      'the same WAL, buffers written and checkpoints in both (pg_stat_wal, pg_stat_bgwriter), and slow rounds on ' +
      'both builds of an A/B. auto_explain (a sample of the statements, 5 rounds) found the claim read the whole queue ' +
      "and sorted it in the slow rounds. The queue's statistics come from the worker's vacuum, taken at whatever size " +
      'the queue had then; near the end of a drain that was a few hundred events, fewer than a claim asks for, so the ' +
      'planner chose that plan for the next burst until the next analyze (a claim of 1,000 from 20,000: 80,000 buffers ' +
      'and 50 ms against 5,000 and 15). The claim is now a function that can only read the queue in order (migration ' +
      '015). Left as it was: each outcome rewrites the history row (a 2 KB row version in a partition of a million ' +
      'rows, and three index entries), which the final state in a table of its own would avoid; without history that ' +
      'saved about 4 µs of PostgreSQL per event and no measurable rate (A/B of 3 rounds), and every reader of an ' +
      "event's state would change.",
  ].join('\n'),
  'Cut by issue 27, in order:',
  [
    '- the claim and the outcome find their rows by primary key; claims of about 500 with outcome batches to match: ' +
      '0.32x to 0.54x of graphile-worker (A/B, 25 Nov);',
    '- nothing per event that a run does not use (no p-queue task, AbortController, timer, child logger or closure ' +
      'unless a handler asks for it), the deadline AsyncLocalStorage off when no deadline is set, zod only when a ' +
      "handler reads data a schema walk has found valid, a run's outcomes handed over as one group: the worker's CPU " +
      'per event 102 to 50 µs, 0.49x to 0.81x (A/B, 27 Nov; backlog 30,000, no history, medians of 3);',
    '- the store, claim and outcome statements prepared once per connection (parsed once, still planned for each ' +
      'batch; [docs/storage.md](../docs/storage.md)): 15,171 to 15,863 events/s, 107.3 to 104.7 µs of machine CPU per ' +
      'event (A/B of 5 rounds, Xeon);',
    "- the body's JSON parsed only when a handler reads `data`: the receiver, which parses every body anyway, marks " +
      'data it finds certainly valid with a fingerprint of the schemas (migration 014), and a worker with the same ' +
      'fingerprint skips its own parse and check (JSON.parse had been 13% of its busy time, and its garbage a share of ' +
      "the collector's 36%): the worker's CPU per event 34 to 44 µs before, 24 to 27 after, 16,692 to 19,070 events/s " +
      '(medians of 3 rounds in turn, backlog 30,000, no history; graphile-worker 23,848 in the same run; AMD EPYC at ' +
      '2.6 GHz, 28 Nov);',
    "- the claim's lease by the ids it picked, not by a join with them: the queue drains, the worker's vacuum (or " +
      'autovacuum) records it empty in a file that kept its pages, and the planner counted the next backlog as one ' +
      'row and planned that join as a loop reading the list of picked events once per row (a claim of 1,004: 131 to ' +
      "143 ms, then 40 ms per 500 until the queue was analyzed again; found by timing the worker's claims after the " +
      "backlog's commit): 18,901 to 21,791 events/s, PostgreSQL's CPU per event 57 to 46 µs (medians of 3 rounds in " +
      'turn, backlog 30,000, no history; graphile-worker 23,897; AMD EPYC at 2.6 GHz, 28 Nov);',
    "- the claim as a function whose plan reads the queue in its order whatever the queue's statistics (migration 015, " +
      'above), and a vacuum of the queue by a worker that finds it drained: with 1,000,000 events of history, ' +
      '17,780 to 21,846 events/s (medians of 5 rounds in turn, backlog 30,000; AMD EPYC at 2.6 GHz, 28 Nov); without ' +
      'history, with a first form of it (only the choice of due events in the function), 21,960 before and 21,590 ' +
      'after (4 rounds, within the spread);',
    "- the worker's periodic vacuum of the queue every 50,000 outcomes instead of 10,000 (each reads the whole queue " +
      'and its indexes, so a deep queue paid for it many times): backlog 100,000, no history, 20,868 to 21,908 events/s ' +
      "(medians of 3 rounds in turn), PostgreSQL's CPU per event 55 to 49 µs.",
  ].join('\n'),
  'Measured and not made:',
  [
    '- the final state appended to a table of its own instead of rewriting the history row: the outcome 37 to 22 µs ' +
      "per event unloaded, a drain's machine CPU 104 to 94 µs per event (15,800 to 16,300 events/s, medians of 3). " +
      "Every reader of an event's state (events list, console, replay, retention, alarms, verify) would read two " +
      'tables; it is the next step;',
    "- the lease in a column of its own, so that the claim's update can be HOT (fillfactor 70): 537 instead of 616 WAL " +
      'bytes per row, and as long (277 to 293 ms against 235 to 289 ms; 20,000 rows in batches of 500, in psql, on the ' +
      'EPYC at 2.1 GHz);',
    "- the body out of the row (toast_tuple_target 128): the outcome's WAL halved (1,073 to 540 bytes per row) in " +
      'about the same time (289 to 270 ms), but 146 WAL bytes more per insert, 2 µs more per read of a body, and ' +
      "nothing for bodies under 2 KB. The database's time per event is in its per-row work, not in the bytes;",
    '- a second claim under way beside the first, claims from a quarter of the prefetch instead of a half, or a ' +
      'prefetch of 2,000: no faster (15,130 to 16,014 events/s against 15,800 to 16,100). Every claim came back to a ' +
      'worker that had run all it held; what bounds it is the CPU the two cores share, not that wait;',
    "- the outcome's times sent as numbers and its ids once: no change beyond the spread;",
    "- `--max-semi-space-size=64` on the worker's node: about 63 to 48 µs of CPU per event on the Xeon (on the EPYC " +
      'the spread between runs hid any difference). It cannot be set from inside the process, so it is documented ' +
      'for deployments ([docs/configuration.md](../docs/configuration.md#the-worker-of-serve)) and not used here.',
  ].join('\n'),
];

/** The medians of some runs, each figure on its own. */
function medianRun(runs: readonly DrainRun[]): DrainRun {
  return { rate: median(runs.map((r) => r.rate)), cpu: medianCpu(runs.map((r) => r.cpu)) };
}

function cpuColumns({ cpu }: DrainRun): string[] {
  return [whole(cpu.serverUs), whole(cpu.postgresUs), whole(cpu.machineUs), percent(cpu.machineBusyShare)];
}

export async function benchDrain(): Promise<Section> {
  const rows: string[][] = [];
  const schemas: string[] = [];
  /** One payhooks process against graphile-worker, per backlog and history. */
  const versus: { backlog: number; history: number; ratio: number; payhooks: DrainRun; graphile: DrainRun }[] = [];
  const twoBeatOne: boolean[] = [];
  let busy: { one: number; distinct: number };
  try {
    for (const history of [0, HISTORY]) {
      // With history, one schema holds it for every run (each run adds its backlog to the history). graphile-worker
      // deletes a job once it is done, so its history is the dead rows and index entries earlier runs left behind:
      // one schema per history level too, reused by every run of it.
      const sharedPayhooks = history > 0 ? await payhooksSchema(history) : undefined;
      if (sharedPayhooks) schemas.push(sharedPayhooks);
      const graphile = graphileSchema();
      schemas.push(graphile);
      for (const backlog of BACKLOGS) {
        const runs = new Map<number, DrainRun[]>(PROCESSES.map((p) => [p, []]));
        const graphileRuns: DrainRun[] = [];
        for (let round = 0; round < rounds(); round++) {
          for (const processes of PROCESSES) {
            const schema = sharedPayhooks ?? (await payhooksSchema(0));
            if (!sharedPayhooks) schemas.push(schema);
            const runId = `d${history > 0 ? 'h' : 'n'}${backlog}p${processes}r${round}`;
            const run = await drainWithWorkers(schema, runId, backlog, processes);
            runs.get(processes)!.push(run);
            console.info(
              `  drain round ${round + 1}, backlog ${whole(backlog)}, history ${whole(history)}, payhooks ${processes} process(es): ${whole(run.rate)} events/s`,
            );
            if (!sharedPayhooks) await dropSchemas([schema]);
          }
          const graphileRun = await drainWithGraphile(graphile, backlog);
          graphileRuns.push(graphileRun);
          console.info(
            `  drain round ${round + 1}, backlog ${whole(backlog)}, history ${whole(history)}, graphile-worker: ${whole(graphileRun.rate)} jobs/s`,
          );
        }
        const reference = medianRun(graphileRuns);
        for (const processes of PROCESSES) {
          const run = medianRun(runs.get(processes)!);
          rows.push([
            whole(backlog),
            whole(history),
            `payhooks serve --role worker, ${processes} process${processes > 1 ? 'es' : ''}`,
            whole(run.rate),
            times(run.rate / reference.rate),
            ...cpuColumns(run),
          ]);
          if (processes === 1) versus.push({ backlog, history, ratio: run.rate / reference.rate, payhooks: run, graphile: reference });
        }
        rows.push([
          whole(backlog),
          whole(history),
          'graphile-worker 0.17.3, 1 process',
          whole(reference.rate),
          '1.00x',
          ...cpuColumns(reference),
        ]);
        twoBeatOne.push(medianRun(runs.get(2)!).rate > medianRun(runs.get(1)!).rate);
      }
    }
    busy = await drainOneResource(schemas);
  } finally {
    await dropSchemas(schemas);
  }
  const worst = versus.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  return {
    title: 'Drain',
    about:
      `A backlog stored as the receiver stores it (1,000 per statement) in one transaction while the workers already run, drained by \`payhooks serve --role worker --handlers bench/noop-handlers.mjs\` ` +
      '(one no-op `onAny` handler, default settings) in 1 or 2 processes; against it, in the same run, graphile-worker 0.17.3 in a process of its own ' +
      '([servers/graphile-worker.ts](servers/graphile-worker.ts)) configured by its performance guide (local queue of 500, 24 concurrent jobs, ' +
      'completions batched, prepared statements, silent logger), draining the same number of no-op jobs with a 2 KB payload added in one statement ' +
      "(its own `add_jobs`). Both measured the same way, the issue's: the remaining count (payhooks' queue, graphile-worker's jobs table) read by SQL " +
      `every ${POLL_MS} ms, rate = jobs / (first finished .. last finished), the span from the commit that made the backlog visible to the first read that ` +
      `found none left; medians of ${rounds()} runs. Every worker is started and drains ${whole(WARM_UP)} first, unmeasured (warm processes), then a CHECKPOINT. ` +
      `History: finished events already stored (${whole(HISTORY)} written in bulk before the first run; each run's backlog adds to it). ` +
      'graphile-worker deletes finished jobs, so its history is only what earlier runs in the same schema left behind.',
    header: [
      'backlog',
      'history',
      'worker',
      'events (jobs)/s',
      'vs graphile-worker',
      'worker CPU µs/event',
      'PostgreSQL CPU µs/event',
      'machine CPU µs/event',
      'machine busy',
    ],
    rows,
    notes: [
      'CPU per event over the measured span, medians of the runs, read from /proc: the worker processes (payhooks, or ' +
        "graphile-worker's), all of PostgreSQL's processes (background ones included), and the machine as a whole, whose " +
        'busy share is of both cores (the poller, this process, is part of it).',
      `What bounds one process against graphile-worker, measured in this run: ${versus
        .map(
          (v) =>
            `backlog ${whole(v.backlog)}, history ${whole(v.history)}: the worker ${whole(v.payhooks.cpu.serverUs)} µs per event against ` +
            `${whole(v.graphile.cpu.serverUs)} per job, PostgreSQL ${whole(v.payhooks.cpu.postgresUs)} against ${whole(v.graphile.cpu.postgresUs)}, ` +
            `the machine ${whole(v.payhooks.cpu.machineUs)} (${percent(v.payhooks.cpu.machineBusyShare)} busy) against ` +
            `${whole(v.graphile.cpu.machineUs)} (${percent(v.graphile.cpu.machineBusyShare)})`,
        )
        .join('; ')}.`,
      ...BOUNDS,
      `One busy resource: ${whole(ONE_RESOURCE_BACKLOG)} events of one invoice, which run one at a time, drained by one process at ` +
        `${whole(busy.one)} events/s, against ${whole(busy.distinct)} for as many events of distinct invoices (medians of ${rounds()}, ` +
        'same run; no target). Each event of one resource waits for the outcome of the one before it to be committed, then ' +
        'for its own claim: a rate bound by those round trips and commits, the same whatever the backlog, since the events ' +
        'waiting behind a running one are set aside until its outcome instead of being walked by every claim (migration 013; ' +
        'before it, 57 events/s for 500 of one invoice and 4 for 2,000, the cost growing with the square of the backlog; ' +
        '[docs/storage.md](../docs/storage.md#upkeep-of-the-queue)).',
    ],
    targets: [
      {
        text: `one process ≥ 1.0x graphile-worker at every backlog and history: lowest ${times(worst.ratio)} (backlog ${whole(worst.backlog)}, history ${whole(worst.history)})`,
        met: worst.ratio >= 1,
      },
      {
        text: `2 processes faster than 1 at every backlog and history: ${twoBeatOne.filter(Boolean).length} of ${twoBeatOne.length}`,
        met: twoBeatOne.every(Boolean),
      },
    ],
  };
}

/** One process drains a backlog of one invoice and one of as many distinct invoices, alternating: medians of each. */
async function drainOneResource(schemas: string[]): Promise<{ one: number; distinct: number }> {
  const one: number[] = [];
  const distinct: number[] = [];
  for (let round = 0; round < rounds(); round++) {
    for (const busy of round % 2 === 0 ? [true, false] : [false, true]) {
      const schema = await payhooksSchema(0);
      schemas.push(schema);
      const runId = `b${busy ? 'o' : 'd'}r${round}`;
      const { rate } = await drainWithWorkers(schema, runId, ONE_RESOURCE_BACKLOG, 1, {
        oneResource: busy ? `busy_${runId}` : undefined,
      });
      (busy ? one : distinct).push(rate);
      console.info(
        `  drain round ${round + 1}, ${whole(ONE_RESOURCE_BACKLOG)} events of ${busy ? 'one invoice' : 'distinct invoices'}: ${whole(rate)} events/s`,
      );
    }
  }
  return { one: median(one), distinct: median(distinct) };
}
