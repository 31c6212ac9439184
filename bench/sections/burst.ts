// Burst: 100,000 deliveries as fast as the generator sends them, to `payhooks serve` with a worker.
import { benchSchema, databaseUrl, dropSchemas, withClient } from '../lib/database.js';
import { SECRET, sendDeliveries } from '../lib/load.js';
import { freePort, payhooksArgs, startServer } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { scaled, whole } from '../lib/stats.js';

const CONNECTIONS = 50;

export async function benchBurst(): Promise<Section> {
  const count = scaled(100_000);
  const schema = benchSchema('burst');
  const server = await startServer(
    payhooksArgs('serve', '--handlers', 'bench/noop-handlers.mjs'),
    { PAYHOOKS_WEBHOOK_SECRET: SECRET, DATABASE_URL: databaseUrl, PAYHOOKS_SCHEMA: schema },
    await freePort(),
    '/readyz',
  );
  try {
    const started = Date.now();
    const load = await sendDeliveries({
      url: `${server.url}/webhooks`,
      connections: CONNECTIONS,
      amount: count,
      duplicateShare: 0,
      runId: 'burst',
    });
    const sentAt = Date.now();
    const rssMb = server.peakRssMb();
    let left = Number.POSITIVE_INFINITY;
    while (left > 0 && Date.now() - sentAt < 900_000) {
      left = await withClient(async (client) =>
        Number((await client.query(`select count(*) as n from "${schema}".inbox_queue`)).rows[0].n),
      );
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const drainedAt = Date.now();
    const stored = await withClient(async (client) => {
      const { rows } = await client.query(
        `select count(*) as n, count(*) filter (where status = 'done') as done from "${schema}".inbox_events`,
      );
      return { n: Number(rows[0].n), done: Number(rows[0].done) };
    });
    console.info(
      `  burst: ${whole(load.requestsPerSecond)} req/s, ${load.non2xx} non-2xx, peak RSS ${rssMb.toFixed(0)} MB, drained after ${drainedAt - started} ms`,
    );
    const failed = load.non2xx + load.errors;
    return {
      title: 'Burst',
      about:
        `${whole(count)} signed 2,048-byte deliveries with unique ids, sent by autocannon on ${CONNECTIONS} connections as fast as they are answered, to ` +
        '`payhooks serve --handlers bench/noop-handlers.mjs` on the local PostgreSQL server (the receiver in one process, the worker in its child process). ' +
        'One run: it is not a comparison.',
      header: ['measure', 'value'],
      rows: [
        ['deliveries sent / answered 2xx', `${whole(load.sent)} / ${whole(load.sent - failed)}`],
        ['non-2xx answers, connection errors', `${whole(load.non2xx)}, ${whole(load.errors)}`],
        ['ingest rate (req/s) and p99 (ms)', `${whole(load.requestsPerSecond)}, ${load.p99Ms}`],
        ['receiver peak RSS (VmHWM)', `${rssMb.toFixed(0)} MB`],
        ['stored / done', `${whole(stored.n)} / ${whole(stored.done)}`],
        ['from the first delivery until the worker had drained them', `${((drainedAt - started) / 1000).toFixed(1)} s`],
        ['of which after the last delivery was answered', `${((drainedAt - sentAt) / 1000).toFixed(1)} s`],
      ],
      targets: [
        { text: `zero non-2xx: ${whole(failed)}`, met: failed === 0 },
        { text: `receiver peak RSS under 256 MB: ${rssMb.toFixed(0)} MB`, met: rssMb < 256 },
        {
          text: `every delivery stored once and done: ${whole(stored.done)} of ${whole(count)}`,
          met: stored.done === count && stored.n === count,
        },
      ],
    };
  } finally {
    await server.stop();
    await dropSchemas([schema]);
  }
}
