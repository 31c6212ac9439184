import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/main.js';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { EVENT_TYPES } from '../../src/events/event-types.js';
import { ALARM_CHECKS, type AlarmInputs, type AlarmThresholds } from '../../src/alarms/alarm-checks.js';
import { sweepSummary } from '../../src/alarms/health-report.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createVerifyRuns } from '../../src/service/verify-runs.js';
import { createSandboxClient, startSimulator } from '../../src/simulator/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { seedDataDir } from '../helpers/pglite-template.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

// The proof that could be vacuously true: verify named the records of events through the `payload` column,
// which is never written, so refunds, disputes, subscriptions and payment methods were "0 named, every one has its
// row" and a deleted payment went unseen. Here one mirror row of every kind is deleted after a day of traffic that
// the simulator delivered to payhooks, and `payhooks verify` (in process, as the CLI runs it) must name each one.

const silent = pino({ level: 'silent' });

interface JsonReport {
  matches: boolean;
  counts: Record<string, number>;
  repaired: number | null;
  resources: { resource: string; checked: number; events?: number }[];
  drift: { resource: string; id: string; kind: string; repaired: boolean; namedBy?: { eventId: string; eventType: string } }[];
}

/** Runs `payhooks <args>` in this process with `env` set, collecting what it prints on stdout. */
async function verify(args: string[], env: Record<string, string>): Promise<{ code: number; report: JsonReport }> {
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  let stdout = '';
  try {
    const code = await run(['verify', '--json', ...args], (text) => (stdout += `${text}\n`));
    return { code, report: JSON.parse(stdout) as JsonReport };
  } finally {
    vi.unstubAllEnvs();
  }
}

afterEach(() => vi.unstubAllEnvs());

const BACKENDS = [
  { name: 'postgres' as const, available: pgUrl !== null },
  { name: 'pglite' as const, available: true },
];

describe.each(BACKENDS)('payhooks verify with one mirror row of each kind deleted, on $name', (backend) => {
  it.skipIf(!backend.available)(
    'reports each missing row (exit 3), --repair restores all seven, the next verify exits 0',
    { timeout: 240_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      const schema = uniqueSchema('verify_kinds');
      const mirrorSchema = `${schema}_mirror`;
      const dataDir = join(mkdtempSync(join(tmpdir(), 'payhooks-verify-kinds-')), 'pgdata');
      if (backend.name === 'pglite') seedDataDir(dataDir);
      const open = () => openDatabase(backend.name === 'postgres' ? { url: pgUrl!, schema } : { dataDir, schema });
      let store: PayhooksDatabase | undefined = await open();
      let hooks: Payhooks<ApiClient> | undefined;
      const receiver = await listen(
        // payhooks' own node:http adapter, made once the instance exists (it needs the endpoint's secret).
        createServer((req, res) => void hooks!.node()(req, res)),
      );
      const apiKey = 'sk_test_verify_kinds';
      const env = {
        ...(backend.name === 'postgres' ? { DATABASE_URL: pgUrl! } : { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir }),
        PAYHOOKS_SCHEMA: schema,
        PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
        PAYHOOKS_API_KEY: apiKey,
        PAYHOOKS_API_URL: simulator.url,
        PAYHOOKS_LOG_LEVEL: 'silent',
      };
      try {
        const client = createClient({ apiKey, environment: simulator.url, rateLimit: false });
        const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey });
        const endpoint = await client.webhooks.create({
          url: `${receiver.url}/webhooks`,
          description: 'kinds',
          enabledEvents: [...EVENT_TYPES],
        });
        const { secret } = await client.webhooks.getSecret(endpoint.id);
        hooks = createPayhooks({ secret, database: store, logger: silent, api: client, worker: { pollIntervalMs: 50, concurrency: 4 } });
        await registerMirror(hooks, { schema: mirrorSchema });
        await hooks.start();

        // Two or more of each kind, so that a verify which checks nothing cannot pass for one that checks everything.
        const made: Record<string, string[]> = {
          customers: [],
          invoices: [],
          payments: [],
          payment_methods: [],
          refunds: [],
          disputes: [],
          subscriptions: [],
        };
        for (let i = 0; i < 2; i++) {
          const customer = await client.customers.create({ username: `kind${i}`, name: `Kind ${i}`, email: `kind${i}@example.com` });
          made.customers!.push(customer.id);
          made.payment_methods!.push((await sandbox.savePaymentMethod(customer.id, { type: 'CARD', brand: 'VISA', last4: '4242' })).id);
          for (const purpose of ['refund', 'dispute']) {
            const invoice = await client.invoices.create({
              customerId: customer.id,
              dueDate: '2026-12-01T06:00:00Z',
              items: [{ quantity: 1, concept: { displayName: `${purpose} ${i}`, amount: 10_000 + i, currency: 'MXN' } }],
            });
            made.invoices!.push(invoice.id);
            const { payment } = await client.invoices.requestPayment(invoice.id, { paymentType: 'CASH' });
            await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
            made.payments!.push(payment.id);
            if (purpose === 'refund') made.refunds!.push((await sandbox.refundPayment(payment.id, { reason: 'test' })).refund.id);
            else made.disputes!.push((await sandbox.openDispute(payment.id, { reason: 'NOT_RECEIVED' })).id);
          }
          const subscription = await sandbox.createSubscription({
            customerId: customer.id,
            description: `Membership ${i}`,
            items: [{ quantity: 1, concept: { displayName: 'Membership', amount: 49_900, currency: 'MXN' } }],
          });
          made.subscriptions!.push(subscription.id);
        }
        const db = () => store!.db.withoutPlugins();
        await waitFor(
          async () => {
            await simulator.idle();
            const { rows } = await sql<{ unfinished: number; stored: number }>`
              select count(*)::int as stored, count(*) filter (where status <> 'done')::int as unfinished
              from ${sql.id(schema, 'inbox_event_states')}`.execute(db());
            return rows[0]!.unfinished === 0 && rows[0]!.stored > 0;
          },
          'every delivered event mirrored',
          60_000,
        );
        // Every record the day made has its row before any is deleted.
        for (const [table, ids] of Object.entries(made)) {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(mirrorSchema, table)}
            where id in (${sql.join(ids)})`.execute(db());
          expect([table, rows[0]!.n]).toEqual([table, ids.length]);
        }
        const deleted = Object.fromEntries(Object.entries(made).map(([table, ids]) => [table, ids[1]!]));
        for (const [table, id] of Object.entries(deleted)) {
          await sql`delete from ${sql.id(mirrorSchema, table)} where id = ${id}`.execute(db());
        }
        await hooks.stop();
        hooks = undefined;

        // The console's Run verify (a whole verify, no repair) records what it found, and the mirror_drift alarm reads it.
        const runs = createVerifyRuns({ store, api: client, mirrorSchema, logger: silent });
        expect(runs.start({ sample: null, repair: false })).toMatchObject({ sample: null, repair: false });
        await waitFor(async () => (await runs.state()).running === null, 'the console verify finished', 60_000);
        const recorded = (await runs.state()).last!;
        expect(recorded.verify).toMatchObject({ drift: 7, repaired: 0 });
        expect(recorded.findings.flatMap((finding) => (finding.kind === 'drift' ? [finding.resource] : [])).sort()).toEqual(
          Object.keys(deleted).sort(),
        );
        const drift = ALARM_CHECKS.find((check) => check.name === 'mirror_drift')!;
        // mirror_drift reads only the newest sweep of its inputs.
        expect(drift.evaluate({ sweep: sweepSummary(recorded) } as AlarmInputs, {} as AlarmThresholds)).toMatchObject({
          status: 'firing',
          value: 7,
        });
        await store.close();
        store = undefined;

        const found = await verify([], env);
        expect(found.code).toBe(3);
        expect(found.report.matches).toBe(false);
        expect(found.report.drift.map((d) => [d.resource, d.id, d.kind]).sort()).toEqual(
          Object.entries(deleted)
            .map(([table, id]) => [table, id, 'missing'])
            .sort(),
        );
        // Each kind the events name was found through what they named, both of its records.
        const checked = new Map(found.report.resources.map((r) => [r.resource, r]));
        for (const table of ['payments', 'payment_methods', 'refunds', 'disputes', 'subscriptions']) {
          expect([table, checked.get(table)!.checked]).toEqual([table, made[table]!.length]);
          expect(checked.get(table)!.events).toBeGreaterThan(0);
        }
        expect(found.report.drift.find((d) => d.resource === 'refunds')?.namedBy?.eventType).toBe('PAYMENT_REFUNDED');

        const repaired = await verify(['--repair'], env);
        expect(repaired.code).toBe(3);
        expect(repaired.report.repaired).toBe(7);
        expect(repaired.report.drift.filter((d) => !d.repaired)).toEqual([]);

        const again = await verify([], env);
        expect(again.report.drift).toEqual([]);
        expect(again.code).toBe(0);
        store = await open();
        for (const [table, ids] of Object.entries(made)) {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(mirrorSchema, table)}
            where id in (${sql.join(ids)})`.execute(store.db.withoutPlugins());
          expect([table, rows[0]!.n]).toEqual([table, ids.length]);
        }
      } finally {
        await hooks?.stop();
        await receiver.close();
        await simulator.close();
        store ??= await open();
        if (backend.name === 'postgres') {
          await sql.raw(`drop schema if exists "${schema}" cascade; drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
        }
        await store.close();
      }
    },
  );
});
