// The gap sweeper and the console's verify with several accounts (issue 48, item 6): each account is reconciled and
// verified through its own API client, against its own events and mirror rows, and recorded as a run of its own
// (migrations/023), so that one account's drift is neither compared with another's records nor hidden by another's
// clean run after it. Two simulators stand for two organizations. On the real server and on PGlite.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DeliveryWatch } from '../../src/alarms/delivery-watch.js';
import { createClient } from '../../src/client/index.js';
import { createAdminApi } from '../../src/console/admin-api.js';
import { startAlarmMonitor } from '../../src/service/alarm-monitor.js';
import { defineServiceConfig } from '../../src/service/service-config.js';
import { createVerifyRuns } from '../../src/service/verify-runs.js';
import { startSimulator } from '../../src/simulator/index.js';
import { ensureAccounts } from '../../src/store/accounts.js';
import { migrateMirror } from '../../src/store/migrate.js';
import { lastSweeperRuns } from '../../src/store/sweeper-runs.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { startGapSweeper, sweepGaps } from '../../src/sync/gap-sweep.js';
import { ensureMirrorAccounts } from '../../src/sync/mirror/accounts.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const TOKEN = randomBytes(32).toString('hex');
const ACCOUNTS = ['gym-north', 'gym-south'];

describe.each(backends)('the gap sweeper and the console verify per account on $name', (backend) => {
  it.skipIf(!backend.available)(
    "each account through its own client, each run recorded with its account; health reads each account's newest",
    { timeout: 180_000 },
    async () => {
      const [northSim, southSim] = await Promise.all([
        startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 }),
        startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 }),
      ]);
      const store = await backend.open();
      const mirrorSchema = `${store.schema}_mirror`;
      const db = store.db.withoutPlugins();
      try {
        const north = createClient({ apiKey: 'sk_test_north', environment: northSim.url, rateLimit: false });
        const south = createClient({ apiKey: 'sk_test_south', environment: southSim.url, rateLimit: false });
        await ensureAccounts(store, [{ id: 'default' }, ...ACCOUNTS.map((id) => ({ id }))]);
        await migrateMirror(store, mirrorSchema);
        await ensureMirrorAccounts(db, mirrorSchema, ACCOUNTS);
        // Each organization delivers to a port where nothing listens: its events never reach the inbox. North has
        // two customers, south one; each account's mirror is backfilled through its own client.
        const ids: Record<string, string[]> = { 'gym-north': [], 'gym-south': [] };
        for (const [account, api, count] of [
          ['gym-north', north, 2],
          ['gym-south', south, 1],
        ] as const) {
          await api.webhooks.create({ url: 'http://127.0.0.1:9/webhooks', description: 'nowhere', enabledEvents: ['CUSTOMER_CREATED'] });
          for (let i = 0; i < count; i++)
            ids[account]!.push((await api.customers.create({ username: `${account}${i}`, name: `${account} ${i}` })).id);
          await runBackfill({ store, api, account, mirrorSchema, resources: ['customers'] });
        }
        // South's mirror row lost: only south's verify, through south's client, may find it.
        const lose = (account: string, id: string) =>
          sql`delete from ${sql.id(mirrorSchema, 'customers')} where account = ${account} and id = ${id}`.execute(db);
        await lose('gym-south', ids['gym-south']![0]!);

        const accounts = [
          { id: 'gym-north', api: north },
          { id: 'gym-south', api: south },
        ];
        const sweeper = startGapSweeper({ store, api: undefined, accounts, mirrorSchema, sample: 5, repair: true }, 200, silent);
        try {
          await waitFor(async () => (await lastSweeperRuns(store, ACCOUNTS)).length === 2, 'a run of each account', 60_000);
        } finally {
          await sweeper.stop();
        }
        const firstRuns = await sql<{ account: string; reconcile_listed: number; verify_drift: number; verify_repaired: number }>`
          select account, reconcile_listed, verify_drift, verify_repaired from ${sql.id(store.schema, 'sweeper_runs')}
           where trigger = 'sweeper' order by id limit 2`.execute(db);
        // One run per account, in turn, each with its own findings: north's two delivery records read through north's
        // client and its mirror whole; south's one record through south's, and its lost row found and repaired. (Listed,
        // not missing: a record whose delivery is under way at that moment is not counted missing.)
        expect(firstRuns.rows).toEqual([
          { account: 'gym-north', reconcile_listed: 2, verify_drift: 0, verify_repaired: 0 },
          { account: 'gym-south', reconcile_listed: 1, verify_drift: 1, verify_repaired: 1 },
        ]);
        expect(
          (
            await sql<{
              count: number;
            }>`select count(*)::int as count from ${sql.id(mirrorSchema, 'customers')} where account = 'gym-south'`.execute(db)
          ).rows[0]!.count,
        ).toBe(1);

        // The console's verify: of the account filtered on, or of each in turn; each recorded as its own run.
        const verify = createVerifyRuns({ store, api: undefined, accounts, mirrorSchema, logger: silent });
        try {
          expect(verify.start({ sample: null, repair: false, account: 'gym-west' })).toBe(
            'this service has no account gym-west (its accounts: gym-north, gym-south).',
          );
          await lose('gym-north', ids['gym-north']![1]!);
          const one = verify.start({ sample: null, repair: false, account: 'gym-south' });
          expect(one).toMatchObject({ account: 'gym-south', sample: null, repair: false });
          await waitFor(async () => (await verify.state()).running === null, 'the south verify done');
          const southState = await verify.state('gym-south');
          expect(southState.runs.map((r) => [r.account, r.trigger, r.verify?.drift])).toEqual([['gym-south', 'console', 0]]);
          expect(southState.last?.id).toBe(southState.runs[0]!.id);

          expect(verify.start({ sample: null, repair: false })).toMatchObject({ account: null });
          await waitFor(async () => (await verify.state()).running === null, 'the verify of each account done');
          const each = await verify.state();
          expect(each.runs.map((r) => [r.account, r.trigger, r.verify?.drift, r.verify?.repaired]).sort()).toEqual([
            ['gym-north', 'console', 1, 0],
            ['gym-south', 'console', 0, 0],
          ]);

          // The console's routes carry the account: GET /verify?account= reads that account's runs, POST names it.
          const admin = createAdminApi({ store, token: TOKEN, verify });
          const headers = { authorization: `Bearer ${TOKEN}` };
          const read = await admin.handle({ method: 'GET', url: '/admin/api/verify?account=gym-north', headers });
          expect(read.status).toBe(200);
          const north = JSON.parse(read.body) as { running: null; last: { account: string }; runs: { account: string }[] };
          expect([north.running, north.last.account, north.runs.map((r) => r.account)]).toEqual([null, 'gym-north', ['gym-north']]);
          const unknown = await admin.handle({ method: 'POST', url: '/admin/api/verify', headers, body: '{"account":"gym-west"}' });
          expect(unknown.status).toBe(409);
          expect(JSON.parse(unknown.body).error.message).toBe(
            'No verify was started: this service has no account gym-west (its accounts: gym-north, gym-south).',
          );
          const started = await admin.handle({
            method: 'POST',
            url: '/admin/api/verify',
            headers,
            body: '{"account":"gym-north","sample":5}',
          });
          expect([started.status, JSON.parse(started.body).running.account]).toEqual([202, 'gym-north']);
          await waitFor(async () => (await verify.state()).running === null, 'the north verify done');
          expect((await admin.handle({ method: 'POST', url: '/admin/api/verify', headers, body: '{"account":"Gym"}' })).status).toBe(400);
        } finally {
          await verify.stop();
        }

        // Health: north's drift, left unrepaired, is not hidden by a clean run of south's that finished after it.
        await sweepGaps({ store, api: south, account: 'gym-south', mirrorSchema, reconcile: false, sample: null, repair: false });
        const config = defineServiceConfig({ alarms: { evaluateEveryMs: 100 } });
        const monitor = startAlarmMonitor({
          store,
          watch: new DeliveryWatch(),
          receiving: true,
          api: undefined,
          accounts: ['default', ...ACCOUNTS],
          thresholds: config.alarms,
          logger: silent,
        });
        try {
          const health = await monitor.evaluate();
          const drift = health.checks.find((c) => c.name === 'mirror_drift');
          expect(drift).toMatchObject({ status: 'firing', value: 1 });
          expect(health.sweeper?.account).toBe('gym-south');
          expect(health.sweeps.map((r) => r.account)).toEqual(['gym-south', 'gym-north']);
        } finally {
          await monitor.stop();
        }
      } finally {
        await dropMirrorSchema(store, mirrorSchema).catch(() => undefined);
        await dispose(store);
        await Promise.all([northSim.close(), southSim.close()]);
      }
    },
  );
});
