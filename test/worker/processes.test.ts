import { dispose } from '../helpers/stores.js';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { libraryEntry } from '../helpers/cli.js';
import { putEvent, putEvents } from '../helpers/inbox.js';
import { waitFor } from '../helpers/wait.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';

const fixture = fileURLToPath(new URL('../fixtures/effect-worker.mjs', import.meta.url));

function startWorker(env: Record<string, string>): Promise<ChildProcess> {
  // The library from the fresh build (no tsx loader to pay for in each process), else the sources through tsx.
  const { execArgv, entry } = libraryEntry();
  const child = fork(fixture, [], {
    execArgv,
    env: { ...process.env, DATABASE_URL: pgUrl!, PAYHOOKS_TEST_ENTRY: entry, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // tsx sends its own IPC messages ({type: 'dependency'}) while it loads modules, so wait for the fixture's.
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (message !== 'started') return;
      child.off('message', onMessage);
      resolve(child);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

interface EffectRow {
  event_id: string;
  resource_key: string | null;
  worker: string;
  started_at: number;
  ended_at: number;
  count: number;
}

async function freshSchema(): Promise<PayhooksDatabase> {
  const store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('procs') });
  await migrate(store);
  await sql`create table ${sql.id(store.schema, 'effects')} (
    event_id text primary key, resource_key text, worker text not null,
    started_at double precision not null, ended_at double precision not null, count int not null)`.execute(store.db);
  return store;
}

async function effects(store: PayhooksDatabase): Promise<EffectRow[]> {
  const { rows } = await sql<EffectRow>`select * from ${sql.id(store.schema, 'effects')}`.execute(store.db);
  return rows.map((r) => ({ ...r, started_at: Number(r.started_at), ended_at: Number(r.ended_at) }));
}

/** How many events are done. */
async function doneCount(store: PayhooksDatabase): Promise<number> {
  const row = await store.db
    .selectFrom('inbox_event_states')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('status', '=', 'done')
    .executeTakeFirstOrThrow();
  return row.n;
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

describe.skipIf(!pgUrl)('worker processes on the real PostgreSQL server', () => {
  const stores: PayhooksDatabase[] = [];
  afterAll(async () => {
    for (const store of stores) {
      await dispose(store);
    }
  });

  it('4 processes, 5,000 events with 30% duplicate deliveries, shuffled: all done, each effect once, no overlap per resource', {
    timeout: 240_000,
  }, async () => {
    const store = await freshSchema();
    stores.push(store);
    const events = Array.from({ length: 5000 }, (_, i) => {
      const base = exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_${i}` });
      return { ...base, data: { ...base.data, id: `cus_${i % 250}` } };
    });
    const deliveries = shuffle([...events, ...events.slice(0, 1500)]);
    const workers = await Promise.all(
      [1, 2, 3, 4].map((n) => startWorker({ PAYHOOKS_SCHEMA: store.schema, WORKER_NAME: `w${n}`, CONCURRENCY: '6' })),
    );
    try {
      // 50 at a time in one statement, as the receiver's group commit writes concurrent deliveries.
      for (let i = 0; i < deliveries.length; i += 50) await putEvents(store, deliveries.slice(i, i + 50));
      await waitFor(async () => (await doneCount(store)) === 5000, 'all 5,000 events done', 200_000);
    } finally {
      for (const worker of workers) worker.kill('SIGTERM');
      expect(await Promise.all(workers.map(exited))).toEqual([0, 0, 0, 0]);
    }
    const rows = await effects(store);
    expect(rows).toHaveLength(5000);
    expect(rows.every((row) => row.count === 1)).toBe(true);
    expect(new Set(rows.map((row) => row.worker)).size).toBeGreaterThan(1);
    const byResource = new Map<string, EffectRow[]>();
    for (const row of rows) byResource.set(row.resource_key!, [...(byResource.get(row.resource_key!) ?? []), row]);
    const received = await store.db
      .selectFrom('inbox_event_states')
      .select(['event_id', sql<string>`seq::text`.as('seq')])
      .execute();
    const seqOf = new Map(received.map((row) => [row.event_id, BigInt(row.seq)]));
    for (const runs of byResource.values()) {
      runs.sort((a, b) => a.started_at - b.started_at);
      for (let i = 1; i < runs.length; i++) {
        // No overlap, and the order run is the order received.
        expect(runs[i]!.started_at).toBeGreaterThanOrEqual(runs[i - 1]!.ended_at);
        expect(seqOf.get(runs[i]!.event_id)! > seqOf.get(runs[i - 1]!.event_id)!).toBe(true);
      }
    }
    const statuses = await store.db.selectFrom('inbox_event_states').select('status').distinct().execute();
    expect(statuses).toEqual([{ status: 'done' }]);
  });

  it('kill -9 mid-batch: every event still ends done, and the held events run again only after their lease expired', {
    timeout: 120_000,
  }, async () => {
    const store = await freshSchema();
    stores.push(store);
    for (let i = 0; i < 40; i++) {
      const base = exampleEvent('CUSTOMER_UPDATED', { eventId: `kill_${i}` });
      await putEvent(store, { ...base, data: { ...base.data, id: `cus_${i}` } });
    }
    const victim = await startWorker({
      PAYHOOKS_SCHEMA: store.schema,
      WORKER_NAME: 'victim',
      HANDLER_MS: '400',
      LEASE_MS: '3000',
      CONCURRENCY: '4',
    });
    // Wait until the victim holds leases, then take them as they were at the kill.
    await waitFor(
      async () =>
        (await store.db.selectFrom('inbox_event_states').select('event_id').where('status', '=', 'processing').execute()).length > 0,
      'the victim to claim events',
    );
    victim.kill('SIGKILL');
    await exited(victim);
    const held = await store.db
      .selectFrom('inbox_event_states')
      .select(['event_id', 'lease_expires_at'])
      .where('status', '=', 'processing')
      .execute();
    expect(held.length).toBeGreaterThan(0);

    const rescuer = await startWorker({ PAYHOOKS_SCHEMA: store.schema, WORKER_NAME: 'rescuer', HANDLER_MS: '5', CONCURRENCY: '4' });
    try {
      await waitFor(async () => (await doneCount(store)) === 40, 'all 40 events done after the kill', 60_000);
    } finally {
      rescuer.kill('SIGTERM');
      await exited(rescuer);
    }
    const rows = await effects(store);
    expect(rows).toHaveLength(40);
    expect(rows.every((row) => row.count === 1)).toBe(true);
    const byId = new Map(rows.map((row) => [row.event_id, row]));
    // A held event whose effect committed just before the kill is not run again (its completion mark
    // committed with it); every other one was run by the rescuer, after the lease ran out.
    const rerun = held.filter((lease) => byId.get(lease.event_id)!.worker === 'rescuer');
    expect(rerun.length).toBeGreaterThan(0);
    for (const lease of rerun) {
      expect(byId.get(lease.event_id)!.started_at).toBeGreaterThanOrEqual(lease.lease_expires_at!.getTime());
    }
  });
});

describe.skipIf(!pgUrl)('graceful stop', () => {
  it('SIGTERM during a slow handler lets it finish and exits 0', { timeout: 60_000 }, async () => {
    const store = await freshSchema();
    try {
      const base = exampleEvent('CUSTOMER_UPDATED', { eventId: 'slow_1' });
      await putEvent(store, base);
      const worker = await startWorker({ PAYHOOKS_SCHEMA: store.schema, WORKER_NAME: 'graceful', HANDLER_MS: '1500', LEASE_MS: '10000' });
      await waitFor(
        async () =>
          (await store.db.selectFrom('inbox_event_states').select('status').where('event_id', '=', 'slow_1').executeTakeFirst())?.status ===
          'processing',
        'the slow event to start',
      );
      const signalledAt = Date.now();
      worker.kill('SIGTERM');
      expect(await exited(worker)).toBe(0);
      const row = await store.db
        .selectFrom('inbox_event_states')
        .select(['status', 'attempts'])
        .where('event_id', '=', 'slow_1')
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status: 'done', attempts: 1 });
      const [effect] = await effects(store);
      expect(effect?.ended_at).toBeGreaterThan(signalledAt);
    } finally {
      await dispose(store);
    }
  });
});
