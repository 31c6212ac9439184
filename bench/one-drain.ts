// `npx tsx bench/one-drain.ts`: one drain of a backlog by one `serve --role worker` of this checkout's build, on a
// fresh schema, printed as one JSON line (events/s and the CPU per event of the worker, PostgreSQL and the machine).
// For comparing two builds by hand: run it in each checkout (a git worktree of the other commit, built) in turn,
// several rounds, and compare medians; a single drain varies by ±20% on a shared machine.
// ONE_DRAIN_BACKLOG (30,000), ONE_DRAIN_HISTORY (0), ONE_DRAIN_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"),
// ONE_DRAIN_SETUP (SQL run in the schema before the drain, e.g. "drop index …"), ONE_DRAIN_LABEL (echoed),
// ONE_DRAIN_DAYS (0) with ONE_DRAIN_PER_DAY (20,000): finished events in each of that many past days' partitions, as a
// history kept for a month leaves them.
import { openDatabase } from '../src/store/database.js';
import { ensureHistoryPartitions } from '../src/store/history-partitions.js';
import { databaseUrl, dropSchemas, withClient } from './lib/database.js';
import { drainWithWorkers, payhooksSchema } from './sections/drain.js';

/** `perDay` finished events received on each of the `days` days before today, each day in a partition of its own. */
async function pastDays(schema: string, days: number, perDay: number): Promise<void> {
  const store = await openDatabase({ url: databaseUrl, schema });
  try {
    await ensureHistoryPartitions(store, { from: new Date(Date.now() - days * 86_400_000) });
  } finally {
    await store.close();
  }
  await withClient(async (client) => {
    for (let day = 1; day <= days; day++) {
      await client.query(
        `insert into "${schema}".inbox_events (event_id, account, event_type, resource_key, raw_body, status, attempts, processed_at, received_at)
         select 'day${day}_' || n, 'default', 'INVOICE_PAID', 'invoice:day${day}_' || n, 'x', 'done', 1, now(), now() - make_interval(days => ${day})
           from generate_series(1, $1::int) n`,
        [perDay],
      );
    }
    await client.query(`vacuum analyze "${schema}".inbox_events`);
  });
}

const backlog = Number(process.env.ONE_DRAIN_BACKLOG ?? 30_000);
const schema = await payhooksSchema(Number(process.env.ONE_DRAIN_HISTORY ?? 0));
try {
  const days = Number(process.env.ONE_DRAIN_DAYS ?? 0);
  if (days > 0) await pastDays(schema, days, Number(process.env.ONE_DRAIN_PER_DAY ?? 20_000));
  const setup = process.env.ONE_DRAIN_SETUP;
  if (setup) await withClient((client) => client.query(`set search_path = "${schema}"; ${setup}`));
  const nodeArgs = process.env.ONE_DRAIN_NODE_ARGS ? process.env.ONE_DRAIN_NODE_ARGS.split(' ') : [];
  const run = await drainWithWorkers(schema, `od${Date.now() % 1e9}`, backlog, 1, { nodeArgs });
  console.log(JSON.stringify({ label: process.env.ONE_DRAIN_LABEL, days, rate: Math.round(run.rate), cpu: run.cpu }));
} finally {
  await dropSchemas([schema]);
}
