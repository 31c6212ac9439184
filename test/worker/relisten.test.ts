// After its LISTEN connection dies (pg_terminate_backend of every payhooks connection, a server restart, and so every
// failover), a worker LISTENs again within seconds and picks new events up by notification, not only by its poll
// timer (issue 49: found by a chaos run; before, the pickup of an idle worker went from ~25 ms to ~500 ms for good).
// The poll interval is a minute, so only a notification explains a pickup within seconds. The shared server is never
// restarted: the restart runs on a throwaway cluster of this file's own.
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { openDatabase } from '../../src/store/database.js';
import { newEventChannel } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { putEvent } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { startThrowawayCluster, type ThrowawayCluster, throwawayClusterAvailable } from '../helpers/throwaway-cluster.js';
import { waitFor } from '../helpers/wait.js';

const POLL_MS = 60_000;
/** Far below the poll interval, far above a notification's pickup (~25 ms) on a busy 2-core machine. */
const BY_NOTIFICATION_MS = 10_000;

/** `url` with an application_name, so that this file's sessions (and only they) can be found and terminated. */
function named(url: string, applicationName: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', applicationName);
  return parsed.toString();
}

/** A worker on its own schema, whose handler records when each event ran; and an admin connection beside it. */
async function startWorker(url: string) {
  const appName = uniqueSchema('relisten');
  const store = await openDatabase({ url: named(url, appName), schema: uniqueSchema('relisten') });
  await migrate(store);
  const ran = new Map<string, number>();
  const told: string[] = [];
  const hooks: Payhooks = createPayhooks({ database: store, logger: pino({ level: 'silent' }), worker: { pollIntervalMs: POLL_MS } });
  hooks.on('INVOICE_PAID', async (event) => {
    ran.set(event.eventId, performance.now());
  });
  hooks.events.on('listen:lost', () => told.push('listen:lost'));
  hooks.events.on('listen:resumed', () => told.push('listen:resumed'));
  await hooks.start();
  const admin = { client: new pg.Client({ connectionString: url }) };
  await admin.client.connect();
  const listenQuery = `LISTEN "${newEventChannel(store.schema)}"`;
  /** The sessions of this worker whose last statement was its LISTEN (pg_stat_activity, as an operator would look). */
  const listening = async (): Promise<number[]> =>
    (
      await admin.client.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1 and query = $2', [
        appName,
        listenQuery,
      ])
    ).rows.map((row) => row.pid);
  /** Stores an event through a connection of its own (as a receiver would); resolves to the ms from storing it to its run. */
  const pickup = async (eventId: string): Promise<number> => {
    const producer = await openDatabase({ url, schema: store.schema, poolSize: 1 });
    try {
      // Connected first, so that the figure is the pickup, not the producer's login.
      await sql`select 1`.execute(producer.db);
      const stored = performance.now();
      await putEvent(producer, withOwnResource(exampleEvent('INVOICE_PAID', { eventId }), eventId));
      await waitFor(() => ran.has(eventId), `${eventId} to run`, BY_NOTIFICATION_MS);
      return ran.get(eventId)! - stored;
    } finally {
      await producer.close();
    }
  };
  return {
    store,
    appName,
    told,
    listening,
    pickup,
    admin,
    async stop() {
      await hooks.stop(2000);
      await admin.client.query(`drop schema if exists "${store.schema}" cascade`).catch(() => undefined);
      await admin.client.end().catch(() => undefined);
      await store.close();
    },
  };
}

type Running = Awaited<ReturnType<typeof startWorker>>;

/** Five idle pickups one after another (each event stored once the one before ran), as `a, b, c, d, e` in ms. */
async function pickups(worker: Running, prefix: string): Promise<string> {
  const ms: number[] = [];
  for (let i = 0; i < 5; i++) ms.push(await worker.pickup(`${prefix}_${i}`));
  return ms.map((m) => m.toFixed(0)).join(', ');
}

/**
 * Waits for the worker to LISTEN again on a session other than `before`'s, and to say so; returns how long it took.
 * pg_stat_activity shows the LISTEN as soon as the server starts it, a moment before the worker has its answer and
 * tells `listen:resumed` (CI saw the one without the other).
 */
async function relistens(worker: Running, before: number[], since: number): Promise<number> {
  await waitFor(
    async () => {
      if (!worker.told.includes('listen:resumed')) return false;
      const pids = await worker.listening().catch(() => []);
      return pids.length === 1 && !before.includes(pids[0]!);
    },
    'the worker to LISTEN again on a new session',
    20_000,
  );
  return performance.now() - since;
}

describe.skipIf(!pgUrl)('a worker whose connections are all terminated', () => {
  let worker: Running | undefined;
  afterAll(async () => worker?.stop());

  it('LISTENs again within seconds and picks a new event up by notification', { timeout: 60_000 }, async () => {
    worker = await startWorker(pgUrl!);
    const listeners = await worker.listening();
    expect(listeners).toHaveLength(1);
    const before = await pickups(worker, 'evt_relisten_before');
    const { rows } = await worker.admin.client.query<{ pid: number }>(
      'select pg_terminate_backend(pid) as done, pid from pg_stat_activity where application_name = $1',
      [worker.appName],
    );
    // The pool's connections and the LISTEN connection: at least the LISTEN one and the one the claim used.
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const terminatedAt = performance.now();
    const after = await relistens(worker, listeners, terminatedAt);
    expect(worker.told.slice(0, 2)).toEqual(['listen:lost', 'listen:resumed']);
    const pickup = await pickups(worker, 'evt_relisten_after');
    console.info(
      `[relisten] terminated ${rows.length} backends: LISTEN again after ${Math.round(after)} ms; idle pickups ${before} ms before, ${pickup} ms after (poll interval ${POLL_MS} ms)`,
    );
  });
});

describe.skipIf(!throwawayClusterAvailable)('a worker whose server restarts', () => {
  let cluster: ThrowawayCluster | undefined;
  let worker: Running | undefined;
  beforeAll(async () => {
    cluster = await startThrowawayCluster({ maxConnections: 30 });
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await cluster?.stop();
  });

  it('LISTENs again within seconds of the server answering and picks a new event up by notification', { timeout: 90_000 }, async () => {
    worker = await startWorker(cluster!.url);
    const listeners = await worker.listening();
    expect(listeners).toHaveLength(1);
    const before = await pickups(worker, 'evt_restart_before');
    // The admin connection dies with the restart too: a new one after it.
    await worker.admin.client.end();
    await cluster!.restart();
    const restartedAt = performance.now();
    worker.admin.client = new pg.Client({ connectionString: cluster!.url });
    await worker.admin.client.connect();
    const after = await relistens(worker, listeners, restartedAt);
    expect(worker.told).toContain('listen:lost');
    expect(worker.told.at(-1)).toBe('listen:resumed');
    const pickup = await pickups(worker, 'evt_restart_after');
    console.info(
      `[relisten] server restarted: LISTEN again ${Math.round(after)} ms after it answered; idle pickups ${before} ms before, ${pickup} ms after (poll interval ${POLL_MS} ms)`,
    );
  });
});
