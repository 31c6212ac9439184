// Ingest over loopback: payhooks' node:http and Express adapters against the hand-written baseline and the no-storage
// ceiling, same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchSchema, databaseUrl, dropSchemas } from '../lib/database.js';
import { type CpuPerRequest, cpuPerRequest, medianCpu, readCpu } from '../lib/cpu.js';
import { type LoadResult, SECRET, sendDeliveries } from '../lib/load.js';
import { freePort, payhooksArgs, type Server, startServer, tsxArgs } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { median, percent, rounds, scale, times, whole } from '../lib/stats.js';

const CONNECTIONS = 50;

interface Contender {
  name: string;
  start: () => Promise<Server>;
}

/** What the profiles of `serve` found, with their dates and machines: measured by hand, not by this run. */
const INGEST_PROFILES: readonly string[] = [
  'Profiles (by hand, 28 Nov, late evening, Intel Xeon at 2.1 GHz, the same load, after the two cuts below): ' +
    "`serve --role receiver`'s own CPU per delivery is user time (133 to 178 µs against 10 to 19 µs of system time, " +
    'read from /proc), so its profile is the place to look. `node --cpu-prof`: 22% idle, 15% in the `writev` that sends ' +
    'a batch (wall time: the woken backend takes the core), 6% `JSON.parse` of the body, 5% garbage collection, 5% the ' +
    "HMAC and the body's SHA-256, 3% Kysely, 3% the pg driver; nothing else above 1%. The two cuts, each an A/B of " +
    "rounds of 10 s in turn on that machine: the batch's bodies sent as one binary `bytea` with each one's start and " +
    "length instead of a `text[]` (the driver's escaping of every quote in them had been 5.6% of the profile): 3,253 to " +
    '3,526 req/s before, 3,495 to 3,967 after, 4 rounds of 4, the server 30 µs and PostgreSQL about 10 µs less per ' +
    "delivery; the ack budget's deadline carried by a view of the pool instead of an AsyncLocalStorage (whose promise " +
    "hooks every request paid while any batch was under way): the server's CPU per delivery 153 to 220 µs before, 146 " +
    'to 167 after, lower in 5 rounds of 5, the rate within the spread.',
  'Earlier profiles (by hand, 28 Nov, AMD EPYC at 2.6 GHz, the same load): `node --cpu-prof` of `serve --role receiver` found it 28% ' +
    'idle (waiting for its group commits); of the rest, 24% in the `writev` that sends a batch to PostgreSQL (its wall time, ' +
    'which includes the loopback and the woken backend taking the core), 14% garbage collection, 4% the pg driver writing ' +
    "the batch's arrays as text, 6% the HMAC and the body's SHA-256 (the ledger's), 5% `JSON.parse` of the body, 2 to 3% " +
    'each for zod and Kysely. `EXPLAIN (ANALYZE, BUFFERS)` of the store statement for a batch of 50: 0.6 to 1.0 ms to ' +
    'plan (it is planned for each batch: `plan_cache_mode = force_custom_plan`) and 4 to 5 ms to run, 80 to 100 µs per ' +
    'event with the instrumentation (ledger row, history row with its body compressed by pglz, queue row from the ' +
    'trigger, seven index entries; the body compressed with lz4 since migration 016).',
  "The body's compression (by hand, 28 Nov, AMD EPYC at 2.6 GHz): 1,000 of the bench's 2,048-byte bodies inserted " +
    'into a table of their own cost 97 to 99 µs a row with pglz against 78 to 83 with lz4 (50 batches each, in turn; ' +
    'reading them back: 7.1 against 6.0 to 6.4 µs a row), at 838 against 889 bytes a body, so since migration 016 the ' +
    "history's bodies are lz4. Through `serve` (7 rounds of 10 s in turn, a schema each, on a machine slower and noisier " +
    "that day) the rate moved within the spread (medians 4,340 against 4,294 req/s) while PostgreSQL's CPU per delivery " +
    'fell from 115 to 100 µs. An earlier try, timing the store statement with EXPLAIN ANALYZE, could not tell them apart.',
  'Earlier (Intel Xeon, 25 to 27 Nov): the process half idle under this load, PostgreSQL about 35 µs per stored event ' +
    'unloaded; more batches at once (8 instead of 4) or a shorter batch wait (0 or 1 ms instead of 2) did not raise the ' +
    'rate in an A/B run (8 at once: 6,500 req/s with a 2 ms wait, 6,391 with 1 ms, 6,109 with none; 4 with none: 5,964; ' +
    'the defaults: 6,583), so they stay.',
];

export async function benchIngest(): Promise<Section> {
  const schemas = { serve: benchSchema('serve'), express: benchSchema('express'), baseline: benchSchema('baseline') };
  const pgliteDir = mkdtempSync(join(tmpdir(), 'payhooks-bench-pglite-'));
  const common = { PAYHOOKS_WEBHOOK_SECRET: SECRET, DATABASE_URL: databaseUrl };
  const contenders: Contender[] = [
    {
      name: 'payhooks serve --role receiver (node:http)',
      start: async () =>
        startServer(
          payhooksArgs('serve', '--role', 'receiver'),
          { ...common, PAYHOOKS_SCHEMA: schemas.serve },
          await freePort(),
          '/readyz',
        ),
    },
    {
      name: 'Express 5 app with hooks.express()',
      start: async () =>
        startServer(tsxArgs('bench/servers/express-app.ts'), { ...common, PAYHOOKS_SCHEMA: schemas.express }, await freePort()),
    },
    {
      name: 'hand-written baseline (Express 5 + raw-body + HMAC + INSERT … ON CONFLICT DO NOTHING)',
      start: async () => startServer(tsxArgs('bench/servers/baseline.ts'), { ...common, BENCH_SCHEMA: schemas.baseline }, await freePort()),
    },
    {
      name: 'no-storage ceiling (node:http + HMAC + JSON.parse + 200, stores nothing)',
      start: async () => startServer(tsxArgs('bench/servers/ceiling.ts'), { PAYHOOKS_WEBHOOK_SECRET: SECRET }, await freePort()),
    },
    {
      name: 'payhooks serve --role receiver on PGlite (embedded)',
      start: async () =>
        startServer(
          payhooksArgs('serve', '--role', 'receiver'),
          { PAYHOOKS_WEBHOOK_SECRET: SECRET, DATABASE_URL: undefined, PAYHOOKS_DATA_DIR: pgliteDir },
          await freePort(),
          '/readyz',
        ),
    },
  ];
  const seconds = Math.max(3, Math.round(10 * scale()));
  const modes = [
    { name: 'unique ids', duplicateShare: 0 },
    { name: '50% duplicates', duplicateShare: 0.5 },
  ];
  const servers: Server[] = [];
  const results = new Map<string, LoadResult[]>();
  const cpu = new Map<string, CpuPerRequest[]>();
  const key = (contender: number, mode: number) => `${contender}/${mode}`;
  try {
    for (const contender of contenders) {
      const server = await contender.start();
      servers.push(server);
      // Warm up: JIT, pool connections, the table's first pages.
      await sendDeliveries({
        url: `${server.url}/webhooks`,
        connections: CONNECTIONS,
        durationSeconds: 2,
        duplicateShare: 0,
        runId: `w${servers.length}`,
      });
    }
    for (let round = 0; round < rounds(); round++) {
      for (const [m, mode] of modes.entries()) {
        for (const [c, contender] of contenders.entries()) {
          const before = readCpu([servers[c]!.child.pid]);
          const result = await sendDeliveries({
            url: `${servers[c]!.url}/webhooks`,
            connections: CONNECTIONS,
            durationSeconds: seconds,
            duplicateShare: mode.duplicateShare,
            runId: `r${round}${m}${c}`,
          });
          if (result.non2xx > 0 || result.errors > 0)
            console.warn(`  ${contender.name}, ${mode.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
          const used = cpuPerRequest(before, readCpu([servers[c]!.child.pid]), result.requestsPerSecond * result.seconds);
          results.set(key(c, m), [...(results.get(key(c, m)) ?? []), result]);
          cpu.set(key(c, m), [...(cpu.get(key(c, m)) ?? []), used]);
          console.info(
            `  ingest round ${round + 1}, ${mode.name}, ${contender.name}: ${whole(result.requestsPerSecond)} req/s, p99 ${result.p99Ms} ms`,
          );
        }
      }
    }
  } finally {
    for (const server of servers) await server.stop();
    rmSync(pgliteDir, { recursive: true, force: true });
    await dropSchemas(Object.values(schemas));
  }

  const stat = (c: number, m: number) => {
    const runs = results.get(key(c, m)) ?? [];
    const used = medianCpu(cpu.get(key(c, m)) ?? []);
    return {
      rps: median(runs.map((r) => r.requestsPerSecond)),
      p50: median(runs.map((r) => r.p50Ms)),
      p99: median(runs.map((r) => r.p99Ms)),
      non2xx: runs.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
      ...used,
    };
  };
  const BASELINE = 2;
  const CEILING = 3;
  const rows: string[][] = [];
  for (const [m, mode] of modes.entries()) {
    const base = stat(BASELINE, m);
    const ceiling = stat(CEILING, m);
    for (const [c, contender] of contenders.entries()) {
      const s = stat(c, m);
      rows.push([
        mode.name,
        contender.name,
        whole(s.rps),
        `${s.p50}`,
        `${s.p99}`,
        times(s.rps / ceiling.rps),
        times(s.rps / base.rps),
        whole(s.non2xx),
        whole(s.serverUs),
        whole(s.postgresUs),
        whole(s.machineUs),
        percent(s.machineBusyShare),
      ]);
    }
  }
  const node = stat(0, 0);
  const express = stat(1, 0);
  const base = stat(BASELINE, 0);
  const ceiling = stat(CEILING, 0);
  const pglite = stat(4, 0);
  const ofCeiling = (s: { rps: number }) => times(s.rps / ceiling.rps);
  return {
    title: 'Ingest',
    about:
      `Signed ${'2,048'}-byte deliveries over loopback from autocannon (${CONNECTIONS} connections, ${seconds} s per run, ${rounds()} rounds ` +
      'alternating between contenders; medians), each server in a process of its own on the local PostgreSQL server (PGlite: a ' +
      'data directory of its own). The no-storage ceiling ([servers/ceiling.ts](servers/ceiling.ts)) verifies the HMAC, parses the JSON and answers 200 ' +
      'without storing anything: no receiver that stores can pass it on this machine. Unique ids, then half of the deliveries repeating an id already sent in the run. ' +
      "The load generator shares the machine's 2 cores with the server and PostgreSQL, the same for every contender.",
    header: [
      'deliveries',
      'receiver',
      'req/s',
      'p50 ms',
      'p99 ms',
      'vs ceiling',
      'vs baseline',
      'non-2xx + errors',
      'server CPU µs/req',
      'PostgreSQL CPU µs/req',
      'machine CPU µs/req',
      'machine busy',
    ],
    rows,
    notes: [
      'CPU per answered request, medians of the rounds, read from /proc around each run: the server process (PGlite runs ' +
        "inside it), all of PostgreSQL's processes (background ones included), and the machine as a whole, whose busy share " +
        `is of both cores. The load generator (this process) spent ${whole(node.loadGeneratorUs)} µs per request on \`serve\` ` +
        `and ${whole(ceiling.loadGeneratorUs)} on the ceiling.`,
      `What bounds \`serve\` against the ceiling, measured in this run: the CPU of the machine's two cores, which the server, ` +
        `PostgreSQL and the load generator share. The machine spent ${whole(node.machineUs)} µs per stored delivery ` +
        `(${percent(node.machineBusyShare)} busy) against ${whole(ceiling.machineUs)} per ceiling request (${percent(ceiling.machineBusyShare)} busy): ` +
        `the server ${whole(node.serverUs)} µs (the ceiling's ${whole(ceiling.serverUs)}), PostgreSQL ${whole(node.postgresUs)} ` +
        `(${times(node.postgresUs / ceiling.machineUs)} a whole ceiling request). For 0.5x the ceiling at that load the machine ` +
        `could spend about ${whole((2 * ceiling.machineUs * node.machineBusyShare) / ceiling.machineBusyShare)} µs per delivery; PostgreSQL and the load ` +
        `generator alone spent ${whole(node.postgresUs + node.loadGeneratorUs)}.`,
      ...INGEST_PROFILES,
    ],
    targets: [
      { text: `node:http (\`serve\`) ≥ 0.5x the no-storage ceiling: ${ofCeiling(node)}`, met: node.rps / ceiling.rps >= 0.5 },
      { text: `Express adapter ≥ 0.35x the no-storage ceiling: ${ofCeiling(express)}`, met: express.rps / ceiling.rps >= 0.35 },
      {
        text: `\`serve\`'s p99 no higher than the baseline's (${base.p99} ms): ${node.p99} ms`,
        met: node.p99 <= base.p99,
      },
      {
        text: `the Express adapter's p99 no higher than the baseline's (${base.p99} ms; issue 10's target, not issue 27's): ${express.p99} ms`,
        met: express.p99 <= base.p99,
      },
      { text: `PGlite ≥ 1,000 req/s: ${whole(pglite.rps)}`, met: pglite.rps >= 1000 },
    ],
  };
}
