// Tracing's cost (issue 28): ingest and drain with no SDK (every span call the API's no-op) against the same with the
// OpenTelemetry SDK registered, every span sampled and batched to an exporter that drops them (bench/noop-tracing.mjs).
import { benchSchema, databaseUrl, dropSchemas } from '../lib/database.js';
import { type LoadResult, SECRET, sendDeliveries } from '../lib/load.js';
import { freePort, payhooksArgs, type Server, startServer } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { median, rounds, scale, scaled, times, whole } from '../lib/stats.js';
import { drainWithWorkers, payhooksSchema } from './drain.js';

const CONNECTIONS = 50;
const BACKLOG = scaled(20_000);
const VARIANTS = [
  { name: 'tracing off (no SDK)', nodeArgs: [] as string[] },
  { name: 'SDK on, batch processor, dropping exporter', nodeArgs: ['--import', './bench/noop-tracing.mjs'] },
];

export async function benchTracing(): Promise<Section> {
  const seconds = Math.max(3, Math.round(10 * scale()));
  const ingestSchemas = VARIANTS.map(() => benchSchema('tracing_ingest'));
  const drainSchemas: string[] = [];
  const ingest = VARIANTS.map((): LoadResult[] => []);
  const drain = VARIANTS.map((): number[] => []);
  const servers: Server[] = [];
  try {
    for (const [v, variant] of VARIANTS.entries()) {
      const server = await startServer(
        [...variant.nodeArgs, ...payhooksArgs('serve', '--role', 'receiver')],
        { PAYHOOKS_WEBHOOK_SECRET: SECRET, DATABASE_URL: databaseUrl, PAYHOOKS_SCHEMA: ingestSchemas[v] },
        await freePort(),
        '/readyz',
      );
      servers.push(server);
      await sendDeliveries({
        url: `${server.url}/webhooks`,
        connections: CONNECTIONS,
        durationSeconds: 2,
        duplicateShare: 0,
        runId: `tw${v}`,
      });
    }
    for (let round = 0; round < rounds(); round++) {
      for (const [v, variant] of VARIANTS.entries()) {
        const result = await sendDeliveries({
          url: `${servers[v]!.url}/webhooks`,
          connections: CONNECTIONS,
          durationSeconds: seconds,
          duplicateShare: 0,
          runId: `ti${round}${v}`,
        });
        ingest[v]!.push(result);
        console.info(
          `  tracing ingest round ${round + 1}, ${variant.name}: ${whole(result.requestsPerSecond)} req/s, p99 ${result.p99Ms} ms`,
        );
      }
    }
    for (const server of servers.splice(0)) await server.stop();
    for (let round = 0; round < rounds(); round++) {
      for (const [v, variant] of VARIANTS.entries()) {
        const schema = await payhooksSchema(0);
        drainSchemas.push(schema);
        const { rate } = await drainWithWorkers(schema, `tr${round}${v}`, BACKLOG, 1, { nodeArgs: variant.nodeArgs });
        drain[v]!.push(rate);
        console.info(`  tracing drain round ${round + 1}, ${variant.name}: ${whole(rate)} events/s`);
        await dropSchemas([schema]);
      }
    }
  } finally {
    for (const server of servers) await server.stop();
    await dropSchemas([...ingestSchemas, ...drainSchemas]);
  }

  const rps = ingest.map((runs) => median(runs.map((r) => r.requestsPerSecond)));
  const p99 = ingest.map((runs) => median(runs.map((r) => r.p99Ms)));
  const rates = drain.map(median);
  const rows = VARIANTS.flatMap((variant, v) => [
    ['ingest (serve --role receiver)', variant.name, `${whole(rps[v]!)} req/s`, `${p99[v]} ms`, times(rps[v]! / rps[0]!)],
    ['drain (serve --role worker, 1 process)', variant.name, `${whole(rates[v]!)} events/s`, '', times(rates[v]! / rates[0]!)],
  ]);
  const ingestCost = 1 - rps[1]! / rps[0]!;
  const drainCost = 1 - rates[1]! / rates[0]!;
  return {
    title: 'Tracing',
    about:
      `What OpenTelemetry tracing costs (issue 28). The same compiled \`serve\` without an SDK (every span call goes to the ` +
      "API's no-op) and with the SDK registered before it loads (bench/noop-tracing.mjs: every span sampled, a batch span " +
      'processor, an exporter that drops the batches, so neither the network nor a collector is counted). Ingest: autocannon, ' +
      `${CONNECTIONS} connections, signed 2,048-byte deliveries with unique ids, ${seconds} s per run; drain: a backlog of ` +
      `${whole(BACKLOG)} events through one worker process with a no-op handler (a receive and a group-commit span per ` +
      'delivery; a process and a handler span per event). Rounds alternate between the variants; medians.',
    header: ['path', 'variant', 'throughput', 'p99', 'vs off'],
    rows,
    targets: [],
    notes: [
      `Cost of the SDK on: ingest ${(ingestCost * 100).toFixed(1)}% fewer deliveries a second, drain ${(drainCost * 100).toFixed(1)}% fewer events a second. ` +
        'Without an SDK, payhooks makes no span objects of its own: each span call is one global lookup and the API no-op.',
    ],
  };
}
