// `npx tsx bench/one-drain.ts`: one drain of a backlog by one `serve --role worker` of this checkout's build, on a
// fresh schema, printed as one JSON line (events/s and the CPU per event of the worker, PostgreSQL and the machine).
// For comparing two builds by hand: run it in each checkout (a git worktree of the other commit, built) in turn,
// several rounds, and compare medians; a single drain varies by ±20% on a shared machine.
// ONE_DRAIN_BACKLOG (30,000), ONE_DRAIN_HISTORY (0), ONE_DRAIN_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"),
// ONE_DRAIN_SETUP (SQL run in the schema before the drain, e.g. "drop index …"), ONE_DRAIN_LABEL (echoed).
import { dropSchemas, withClient } from './lib/database.js';
import { drainWithWorkers, payhooksSchema } from './sections/drain.js';

const backlog = Number(process.env.ONE_DRAIN_BACKLOG ?? 30_000);
const schema = await payhooksSchema(Number(process.env.ONE_DRAIN_HISTORY ?? 0));
try {
  const setup = process.env.ONE_DRAIN_SETUP;
  if (setup) await withClient((client) => client.query(`set search_path = "${schema}"; ${setup}`));
  const nodeArgs = process.env.ONE_DRAIN_NODE_ARGS ? process.env.ONE_DRAIN_NODE_ARGS.split(' ') : [];
  const run = await drainWithWorkers(schema, `od${Date.now() % 1e9}`, backlog, 1, { nodeArgs });
  console.log(JSON.stringify({ label: process.env.ONE_DRAIN_LABEL, rate: Math.round(run.rate), cpu: run.cpu }));
} finally {
  await dropSchemas([schema]);
}
