// Mirror verify: `payhooks verify` (the compiled CLI, as users run it) over 10,000 customers and 10,000 invoices
// held by the simulator and mirrored in PostgreSQL, its requests taken from the shared rate budget (1,000 a minute).
import { execFile } from 'node:child_process';
import { pino } from 'pino';
import { createClient } from '../../src/client/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { benchSchema, databaseUrl, dropSchemas } from '../lib/database.js';
import { payhooksArgs, root } from '../lib/processes.js';
import type { Section } from '../lib/report.js';
import { median, rounds, scaled, whole } from '../lib/stats.js';

const CUSTOMERS = scaled(10_000);
const INVOICES = scaled(10_000);
/** The service's limit, which the budget in the payhooks database enforces for every process together. */
const BUDGET_PER_MINUTE = 1_000;

interface Run {
  seconds: number;
  requests: number;
  drifted: number;
  code: number;
}

function verifyOnce(env: Record<string, string>): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      payhooksArgs('verify', '--resource', 'customers,invoices', '--json'),
      { cwd: root, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? Number(error.code ?? 1) : 0;
        if (code !== 0 && code !== 3) {
          reject(new Error(`payhooks verify exited ${code}: ${stderr}`));
          return;
        }
        const report = JSON.parse(stdout) as { requests: number; drift: unknown[] };
        resolve({ seconds: (performance.now() - started) / 1000, requests: report.requests, drifted: report.drift.length, code });
      },
    );
  });
}

export async function benchMirrorVerify(): Promise<Section> {
  const simulator = await startSimulator({ logger: pino({ level: 'silent' }), rateLimitPerMinute: 10_000_000 });
  const schema = benchSchema('verify');
  const mirrorSchema = `${schema}_mirror`;
  const apiKey = 'sk_test_bench_verify';
  const runs: Run[] = [];
  try {
    // The organization: customers, then invoices spread over them, 50 calls at a time (setup, not measured).
    const api = createClient({ apiKey, environment: simulator.url, rateLimit: false });
    const customers: string[] = [];
    for (let first = 0; first < CUSTOMERS; first += 50) {
      const batch = Array.from({ length: Math.min(50, CUSTOMERS - first) }, (_, i) => first + i);
      customers.push(...(await Promise.all(batch.map(async (n) => (await api.customers.create({ username: `bench${n}` })).id))));
    }
    for (let first = 0; first < INVOICES; first += 50) {
      const batch = Array.from({ length: Math.min(50, INVOICES - first) }, (_, i) => first + i);
      await Promise.all(
        batch.map((n) =>
          api.invoices.create({
            customerId: customers[n % customers.length]!,
            dueDate: '2026-12-01T06:00:00Z',
            items: [{ quantity: 1, concept: { displayName: `Concept ${n}`, amount: 1_000 + n, currency: 'MXN' } }],
          }),
        ),
      );
    }
    const store = await openDatabase({ url: databaseUrl, schema });
    try {
      await migrate(store);
      await runBackfill({ store, api, mirrorSchema });
    } finally {
      await store.close();
    }
    const env = {
      DATABASE_URL: databaseUrl,
      PAYHOOKS_SCHEMA: schema,
      PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
      PAYHOOKS_API_KEY: apiKey,
      PAYHOOKS_API_URL: simulator.url,
      PAYHOOKS_LOG_LEVEL: 'silent',
    };
    for (let round = 0; round < rounds(); round++) runs.push(await verifyOnce(env));
  } finally {
    await simulator.close();
    await dropSchemas([schema, mirrorSchema]);
  }

  const seconds = median(runs.map((run) => run.seconds));
  const requests = median(runs.map((run) => run.requests));
  const allMatched = runs.every((run) => run.code === 0 && run.drifted === 0);
  // The budget is shared and per minute: a run of n requests fits it when it needs no more than n/1000 minutes' share.
  const perMinute = requests / Math.max(seconds / 60, 1);
  return {
    title: 'Mirror verify',
    about:
      `\`payhooks verify --resource customers,invoices --json\` (the compiled CLI, one process per run) over ${whole(CUSTOMERS)} customers and ` +
      `${whole(INVOICES)} invoices held by the simulator and backfilled into a PostgreSQL mirror: every record listed (100 per request) and compared ` +
      'field by field with its row. Requests come out of the rate budget in the payhooks database (1,000 a minute for every process together); ' +
      'the wall time includes the process start.',
    header: ['run', 'requests', 'seconds', 'drift found', 'exit'],
    rows: runs
      .map((run, i) => [String(i + 1), whole(run.requests), run.seconds.toFixed(1), whole(run.drifted), String(run.code)])
      .concat([['median', whole(requests), seconds.toFixed(1), '', '']]),
    targets: [
      {
        text: `verify over ${whole(CUSTOMERS)} customers and ${whole(INVOICES)} invoices finds the mirror equal (exit 0) in every round`,
        met: allMatched,
      },
      {
        text: `within the rate budget: ${whole(requests)} requests in ${seconds.toFixed(1)} s, at most ${whole(BUDGET_PER_MINUTE)} a minute`,
        met: perMinute <= BUDGET_PER_MINUTE,
      },
    ],
  };
}
