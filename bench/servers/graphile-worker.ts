// The job-queue reference of issue 27: graphile-worker 0.17.3 as its performance guide configures it (a local queue of
// 500 jobs, 24 concurrent jobs, completions batched, prepared statements, a silent logger), running one no-op task.
// A process of its own, like `payhooks serve --role worker`; GET /healthz answers 200 once the runner is up.
import { createServer } from 'node:http';
import { Logger, run } from 'graphile-worker';

const schema = process.env.BENCH_SCHEMA!;
const silent = new Logger(() => () => undefined);
const runner = await run({
  preset: {
    worker: {
      connectionString: process.env.DATABASE_URL,
      schema,
      concurrentJobs: 24,
      maxPoolSize: 26,
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
      pollInterval: 1000,
      preparedStatements: true,
      logger: silent,
    },
  },
  noHandleSignals: true,
  taskList: { noop: async () => undefined },
});

const health = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
});
health.listen(Number(process.env.PORT), '127.0.0.1');

process.once('SIGTERM', () => {
  health.close();
  void runner.stop().finally(() => process.exit(0));
});
