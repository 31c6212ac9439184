// The gap sweeper records each run (migrations/010): what reconciliation found missing and re-sent, what the
// sampled verify found drifted and repaired; the newest run is what /metrics and GET /admin/api/health show, read
// through the alarm monitor as serve composes it. On the real server and on PGlite.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DeliveryWatch } from '../../src/alarms/delivery-watch.js';
import { createClient } from '../../src/client/index.js';
import { createAdminApi } from '../../src/console/admin-api.js';
import { registerHealthMetrics } from '../../src/metrics/health-metrics.js';
import { startAlarmMonitor } from '../../src/service/alarm-monitor.js';
import { defineServiceConfig } from '../../src/service/service-config.js';
import { startSimulator } from '../../src/simulator/index.js';
import { lastSweeperRun } from '../../src/store/sweeper-runs.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { startGapSweeper, sweepGaps } from '../../src/sync/gap-sweep.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const TOKEN = randomBytes(32).toString('hex');

describe.each(backends)('the gap sweeper on $name', (backend) => {
  it.skipIf(!backend.available)(
    'records each run, and its last run shows in /metrics and /admin/api/health',
    { timeout: 120_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      const store = await backend.open();
      const mirrorSchema = `${store.schema}_mirror`;
      try {
        const api = createClient({ apiKey: 'sk_test_sweep', environment: simulator.url, rateLimit: false });
        // The sender delivers to a port where nothing listens: its events never reach the inbox.
        await api.webhooks.create({ url: 'http://127.0.0.1:9/webhooks', description: 'nowhere', enabledEvents: ['CUSTOMER_CREATED'] });
        const customers: string[] = [];
        for (let i = 0; i < 3; i++) customers.push((await api.customers.create({ username: `sweep${i}`, name: `Sweep ${i}` })).id);
        await runBackfill({ store, api, mirrorSchema, resources: ['customers'] });
        // A mirror row lost: the sampled verify (the newest records listed) finds it and writes it again.
        await sql`delete from ${sql.id(mirrorSchema, 'customers')} where id = ${customers[2]!}`.execute(store.db.withoutPlugins());

        const run = await sweepGaps({ store, api, mirrorSchema, sample: 5, repair: true });
        expect(run).toMatchObject({ trigger: 'sweeper', outcome: 'found', error: null });
        expect(run.reconcile).toMatchObject({ missing: 3, resent: 3, unrecovered: 0 });
        expect(run.verify).toMatchObject({ sample: 5, drift: 1, repaired: 1 });
        expect(run.findings).toContainEqual({ kind: 'drift', resource: 'customers', id: customers[2], drift: 'missing', repaired: true });
        expect(run.findings.filter((f) => f.kind === 'missing_event')).toHaveLength(3);
        expect(await lastSweeperRun(store)).toEqual(run);

        // The periodic sweeper records one run after another; the mirror is whole again, so they find no drift.
        const sweeper = startGapSweeper({ store, api, mirrorSchema, sample: 5, repair: true }, 200, silent);
        try {
          await waitFor(async () => Number((await lastSweeperRun(store))?.id) >= Number(run.id) + 2, 'two more recorded runs', 60_000);
        } finally {
          await sweeper.stop();
        }
        // stop() aborts the run in flight, which is recorded as far as it got (on a loaded machine, often part of its
        // reconciliation and no verify): one more run, whole, is the newest, the one /metrics and the console show.
        const last = await sweepGaps({ store, api, mirrorSchema, sample: 5, repair: true });
        expect(await lastSweeperRun(store)).toEqual(last);
        expect(last.verify).toMatchObject({ drift: 0, repaired: 0 });
        expect(last.reconcile?.missing).toBe(3);

        // Read as serve reads it: the alarm monitor's one report, through /metrics and the console's API.
        const config = defineServiceConfig({ alarms: { evaluateEveryMs: 100 } });
        const monitor = startAlarmMonitor({
          store,
          watch: new DeliveryWatch(),
          receiving: true,
          api: undefined,
          thresholds: config.alarms,
          logger: silent,
        });
        try {
          await monitor.evaluate();
          const registry = new Registry();
          registerHealthMetrics(registry, () => monitor.health());
          const metrics = await registry.metrics();
          expect(metrics).toContain(`payhooks_sweeper_last_run_timestamp_seconds ${last.finishedAt.getTime() / 1000}`);
          expect(metrics).toContain('payhooks_sweeper_last_run_findings{finding="missing",account="default"} 3');
          expect(metrics).toContain('payhooks_sweeper_last_run_findings{finding="drift",account="default"} 0');
          expect(metrics).toContain('payhooks_sweeper_last_run_failed 0');
          expect(metrics).toContain('payhooks_alarm_firing{alarm="mirror_drift"} 0');

          const admin = createAdminApi({ store, token: TOKEN, health: () => monitor.health() });
          const refused = await admin.handle({ method: 'GET', url: '/admin/api/health', headers: {} });
          expect(refused.status).toBe(401);
          const answer = await admin.handle({ method: 'GET', url: '/admin/api/health', headers: { authorization: `Bearer ${TOKEN}` } });
          expect(answer.status).toBe(200);
          const health = JSON.parse(answer.body) as {
            sweeper: { id: string; reconcile: unknown };
            checks: { name: string; status: string }[];
          };
          expect(health.sweeper).toMatchObject({ id: last.id, reconcile: { missing: 3, resent: 3 } });
          expect(health.checks.find((c) => c.name === 'mirror_drift')?.status).toBe('ok');
          // Without an API the API's checks are unknown, not ok.
          expect(health.checks.find((c) => c.name === 'sender_failures')?.status).toBe('unknown');
        } finally {
          await monitor.stop();
        }
      } finally {
        await dropMirrorSchema(store, mirrorSchema).catch(() => undefined);
        await dispose(store);
        await simulator.close();
      }
    },
  );
});
