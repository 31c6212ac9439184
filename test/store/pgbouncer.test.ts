// payhooks behind a real PgBouncer (Debian's 1.18, pool_mode = transaction) with `database.pooler: 'transaction'`
// (issue 49): the receiver's contract cases, a drain of 10,000 events by two workers, replay and prune all pass
// through it, and a migration through it is refused with a message that says to run `payhooks migrate` against the
// server directly. The schema is migrated on the server itself first, as an operator would. PgBouncer is this file's
// own (a temporary ini and userlist, a free port), in front of the shared server's `test` database.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrate, migrateMirror, PoolerMigrationError } from '../../src/store/migrate.js';
import { runInProcess } from '../helpers/cli.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { putEvents } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { pgbouncerAvailable, type RunningPgBouncer, startPgBouncer } from '../helpers/pgbouncer.js';
import { waitFor } from '../helpers/wait.js';
import { POOLED_POLL_INTERVAL_MS } from '../../src/worker/defaults.js';

const SECRET = 'pooled-endpoint-secret';
const scheme = createDefaultScheme({ secrets: [SECRET] });
const silent = pino({ level: 'silent' });
const DRAIN = 10_000;

if (!pgbouncerAvailable && process.env.CI === 'true')
  throw new Error('CI needs PgBouncer at /usr/sbin/pgbouncer (apt-get install pgbouncer; .ci/run does it)');
if (!pgbouncerAvailable) {
  console.warn('[payhooks tests] PgBouncer is not installed (apt-get install pgbouncer; .ci/run does): the PgBouncer suite is SKIPPED.');
}

describe.skipIf(!pgUrl || !pgbouncerAvailable)('through PgBouncer in transaction mode', () => {
  let bouncer: RunningPgBouncer;
  const schema = uniqueSchema('pooled');
  /** The server itself, for the operator's migration and the test's own looks. */
  let direct: PayhooksDatabase;
  const stores: PayhooksDatabase[] = [];
  /** A store through PgBouncer, as serve opens it with PAYHOOKS_DATABASE_POOLER=transaction. */
  const pooled = async (poolSize = 10) => {
    const store = await openDatabase({ url: bouncer.url, schema, pooler: 'transaction', poolSize });
    stores.push(store);
    return store;
  };
  const cli = (args: string[]) =>
    runInProcess(args, { DATABASE_URL: bouncer.url, PAYHOOKS_SCHEMA: schema, PAYHOOKS_DATABASE_POOLER: 'transaction' });

  beforeAll(async () => {
    // Fewer server connections than the two workers, the receiver and the commands hold between them: transactions
    // of different clients share server connections, as they do in production.
    bouncer = await startPgBouncer({ serverUrl: pgUrl!, poolSize: 6 });
    direct = await openDatabase({ url: pgUrl!, schema });
    await migrate(direct);
  }, 60_000);
  afterAll(async () => {
    for (const store of stores) await store.close();
    await sql.raw(`drop schema if exists "${schema}" cascade`).execute(direct.db);
    await direct.close();
    await bouncer.stop();
  });

  it('refuses a migration through it, saying to run payhooks migrate against the server; a current schema passes', async () => {
    const fresh = await openDatabase({ url: bouncer.url, schema: uniqueSchema('pooled_fresh'), pooler: 'transaction' });
    stores.push(fresh);
    const refused = await migrate(fresh).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PoolerMigrationError);
    expect((refused as Error).message).toMatch(/through a transaction pooler/);
    expect((refused as Error).message).toContain('Run `payhooks migrate` against the PostgreSQL server directly');
    // Nothing was made: no schema appeared on the server.
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_namespace where nspname = ${fresh.schema}`.execute(
      direct.db,
    );
    expect(rows[0]?.n).toBe(0);
    // The command says the same and fails.
    const command = await runInProcess(['migrate'], {
      DATABASE_URL: bouncer.url,
      PAYHOOKS_SCHEMA: fresh.schema,
      PAYHOOKS_DATABASE_POOLER: 'transaction',
    });
    expect(command.code).toBe(1);
    expect(command.stderr).toContain('Run `payhooks migrate` against the PostgreSQL server directly');
    // The mirror's migrations, which serve applies as it starts the mirror, are refused too, saying so.
    const mirror = await migrateMirror(fresh, 'pooled_mirror_fresh').catch((err: unknown) => err);
    expect(mirror).toBeInstanceOf(PoolerMigrationError);
    expect((mirror as Error).message).toContain(
      'Start `payhooks serve` (or `payhooks backfill`) once, with the mirror on, against the PostgreSQL server directly',
    );
    // A schema migrated on the server: nothing pending, nothing refused.
    const current = await migrate(await pooled());
    expect(current.applied).toEqual([]);
    expect(current.alreadyApplied.length).toBeGreaterThan(10);
  });

  it('is noticed without the setting: a warning names the setting to make, and a direct connection draws none', async () => {
    const seen: string[] = [];
    const unset = await openDatabase({ url: bouncer.url, schema, onPoolerSeen: (what) => seen.push(what) });
    stores.push(unset);
    const plain = await openDatabase({ url: pgUrl!, schema, onPoolerSeen: (what) => seen.push(`direct: ${what}`) });
    stores.push(plain);
    await sql`select 1`.execute(plain.db);
    await sql`select 1`.execute(unset.db);
    await waitFor(() => seen.length > 0, 'the pooler to be noticed');
    expect(seen).toEqual([
      expect.stringMatching(/^a connection pooler is between payhooks and PostgreSQL .*set database\.pooler: 'transaction'/),
    ]);
  });

  it('an idle worker picks a new event up by polling, within its shorter default interval', { timeout: 30_000 }, async () => {
    const store = await pooled(2);
    const ran = new Map<string, number>();
    const lines: { msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const hooks = createPayhooks({ database: store, logger });
    hooks.on('CUSTOMER_CREATED', async (event) => {
      ran.set(event.eventId, performance.now());
    });
    await hooks.start();
    try {
      const pickups: number[] = [];
      for (let i = 0; i < 5; i++) {
        const id = `pooled_idle_${i}`;
        const stored = performance.now();
        await putEvents(store, [withOwnResource(exampleEvent('CUSTOMER_CREATED', { eventId: id }), id)]);
        await waitFor(() => ran.has(id), `${id} to run`, 10_000);
        pickups.push(ran.get(id)! - stored);
      }
      expect(pickups).toHaveLength(5);
      // It polls at POOLED_POLL_INTERVAL_MS and never LISTENs (its notifications would go to another client).
      expect(lines.map((line) => line.msg)).toContain(
        `through a transaction pooler: the worker polls every ${POOLED_POLL_INTERVAL_MS} ms instead of LISTENing`,
      );
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where query ilike ${`LISTEN %${schema}%`}`.execute(direct.db);
      expect(rows[0]?.n).toBe(0);
      console.info(
        `[pgbouncer] idle pickup by polling (no LISTEN through the pooler): ${pickups.map((ms) => ms.toFixed(0)).join(', ')} ms`,
      );
    } finally {
      await hooks.stop(2000);
    }
  });

  describe("the receiver's contract", () => {
    let hooks: Payhooks;
    let url: string;
    let server: ReturnType<typeof createServer>;
    beforeAll(async () => {
      hooks = createPayhooks({ secret: SECRET, database: await pooled(), logger: silent });
      server = createServer(hooks.node());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it('200 stored with its exact bytes, 200 duplicate, 200 for an unknown type', async () => {
      const delivery = signedDelivery(scheme, envelope('pooled_stored'));
      expect(await post(url, delivery)).toEqual({ status: 200, body: { received: true } });
      expect((await getEvent(direct, 'pooled_stored'))?.rawBody).toBe(delivery.body);
      expect(await post(url, signedDelivery(scheme, envelope('pooled_stored')))).toEqual({
        status: 200,
        body: { received: true, duplicate: true },
      });
      expect((await getEvent(direct, 'pooled_stored'))?.deliveries).toBe(2);
      const unknown = await post(url, signedDelivery(scheme, { eventId: 'pooled_unknown', eventType: 'SOMETHING_NEW', data: {} }));
      expect(unknown.status).toBe(200);
      expect((await getEvent(direct, 'pooled_unknown'))?.eventType).toBe('SOMETHING_NEW');
    });

    it('400 bad JSON, 401 bad signature, 405 not POST, 415 not JSON; nothing stored', async () => {
      expect((await post(url, signedDelivery(scheme, '{"eventId": '))).status).toBe(400);
      const wrong = signedDelivery(createDefaultScheme({ secrets: ['another'] }), envelope('pooled_wrong'));
      expect((await post(url, wrong)).status).toBe(401);
      expect((await fetch(url, { method: 'GET' })).status).toBe(405);
      const text = signedDelivery(scheme, envelope('pooled_text'));
      const response = await fetch(url, { method: 'POST', headers: { ...text.headers, 'content-type': 'text/plain' }, body: text.body });
      expect(response.status).toBe(415);
      expect(await getEvent(direct, 'pooled_wrong')).toBeUndefined();
      expect(await getEvent(direct, 'pooled_text')).toBeUndefined();
    });

    it('200 for each of 300 concurrent deliveries, each stored once (group commit through the pooler)', { timeout: 60_000 }, async () => {
      const ids = Array.from({ length: 300 }, (_, i) => `pooled_burst_${i}`);
      const answers = await Promise.all(ids.map((id) => post(url, signedDelivery(scheme, envelope(id)))));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(ids.length);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${schema}.inbox_events`)}
        where event_id like 'pooled_burst_%'`.execute(direct.db);
      expect(rows[0]?.n).toBe(ids.length);
    });
  });

  it(`two workers drain ${DRAIN.toLocaleString('en')} events through it, each run once, then replay and prune pass`, {
    timeout: 300_000,
  }, async () => {
    const producer = await pooled();
    const ids = Array.from({ length: DRAIN }, (_, i) => `pooled_drain_${i}`);
    // Every 500th event fails for good (maxAttempts 1): dead, for the replay below.
    const doomed = new Set(ids.filter((_, i) => i % 500 === 0));
    for (let i = 0; i < ids.length; i += 1000) {
      await putEvents(
        producer,
        ids.slice(i, i + 1000).map((id) => withOwnResource(exampleEvent('INVOICE_PAID', { eventId: id }), id)),
      );
    }
    const runs = new Map<string, number>();
    const byWorker = [0, 0];
    let healed = false;
    const workers: Payhooks[] = [];
    for (const w of [0, 1]) {
      const hooks = createPayhooks({
        database: await pooled(5),
        logger: silent,
        worker: { concurrency: 16, maxAttempts: 1, backoff: { baseMs: 10, maxMs: 50 } },
      });
      hooks.on('INVOICE_PAID', async (event) => {
        runs.set(event.eventId, (runs.get(event.eventId) ?? 0) + 1);
        byWorker[w]! += 1;
        if (doomed.has(event.eventId) && !healed) throw new Error('doomed until replayed');
      });
      workers.push(hooks);
    }
    const startedAt = performance.now();
    await Promise.all(workers.map((hooks) => hooks.start()));
    const count = async (status: string) =>
      (
        await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${schema}.inbox_event_states`)}
          where status = ${status} and event_id like 'pooled_drain_%'`.execute(direct.db)
      ).rows[0]!.n;
    await waitFor(async () => (await count('done')) + (await count('dead')) === DRAIN, 'the drain through PgBouncer', 240_000);
    const seconds = (performance.now() - startedAt) / 1000;
    expect(await count('done')).toBe(DRAIN - doomed.size);
    expect(await count('dead')).toBe(doomed.size);
    expect(runs.size).toBe(DRAIN);
    expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
    // Both took part: the claim shares the work through the pooler too.
    expect(byWorker[0]).toBeGreaterThan(0);
    expect(byWorker[1]).toBeGreaterThan(0);
    console.info(
      `[pgbouncer] ${DRAIN} events drained by two workers in ${seconds.toFixed(1)} s (${Math.round(DRAIN / seconds)}/s), split ${byWorker.join(' + ')}`,
    );

    // Replay the dead ones through the pooler: the workers, polling (no LISTEN through it), run them again.
    healed = true;
    const replayed = await cli(['replay', '--status', 'dead', '--yes']);
    expect(replayed.stderr).toBe('');
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain(`${doomed.size} events to re-queue in state dead`);
    await waitFor(async () => (await count('done')) === DRAIN, 'the replayed events to run', 60_000);
    expect([...doomed].map((id) => runs.get(id))).toEqual([...doomed].map(() => 2));
    await Promise.all(workers.map((hooks) => hooks.stop(5000)));

    // Prune through the pooler: today's partitions are not older than a day, so it has nothing to drop, but it reads
    // them, and a dry run of any age lists them.
    const pruned = await cli(['prune', '--older-than', '1d', '--yes']);
    expect(pruned.stderr).toBe('');
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(/no history partitions older than 1d|finished event/);
  });

  it('sends no named prepared statement and no session setting through it (what PgBouncer 1.18 would break)', async () => {
    // A PgBouncer with one server connection: whatever the store left on it, the next client sees.
    const single = await startPgBouncer({ serverUrl: pgUrl!, poolSize: 1 });
    const store = await openDatabase({ url: single.url, schema, pooler: 'transaction', poolSize: 2 });
    const admin = new pg.Client({ connectionString: single.url });
    try {
      // The receiver's statement, which is prepared by name on a direct connection.
      await putEvents(store, [withOwnResource(exampleEvent('INVOICE_PAID', { eventId: 'pooled_prepared' }), 'pooled_prepared')]);
      await admin.connect();
      const { rows } = await admin.query<{ n: number }>(
        "select count(*)::int as n from pg_prepared_statements where name like 'payhooks_%'",
      );
      expect(rows[0]?.n).toBe(0);
      const settingsQuery =
        "select current_setting('plan_cache_mode') as plan, current_setting('jit') as jit, current_setting('statement_timeout') as timeout";
      const settings = await admin.query(settingsQuery);
      // The server's own defaults, as a plain session sees them: payhooks' connect-time SETs were not sent (they would
      // have stayed on the one server connection).
      const plain = new pg.Client({ connectionString: pgUrl! });
      await plain.connect();
      const defaults = await plain.query(settingsQuery).finally(() => plain.end());
      expect(settings.rows[0]).toEqual(defaults.rows[0]);
      expect(settings.rows[0].plan).not.toBe('force_custom_plan');
      // The control: the same statement on a direct connection is prepared there.
      const control = await openDatabase({ url: pgUrl!, schema, poolSize: 1 });
      try {
        await putEvents(control, [withOwnResource(exampleEvent('INVOICE_PAID', { eventId: 'direct_prepared' }), 'direct_prepared')]);
        const { rows: prepared } = await sql<{
          n: number;
        }>`select count(*)::int as n from pg_prepared_statements where name like 'payhooks_%'`.execute(control.db);
        expect(prepared[0]?.n).toBeGreaterThan(0);
      } finally {
        await control.close();
      }
    } finally {
      await admin.end().catch(() => undefined);
      await store.close();
      await single.stop();
    }
  });
});
