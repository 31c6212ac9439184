import { createServer } from 'node:http';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createPayhooks } from '../../src/payhooks.js';
import { createReceiver } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { createGroupCommit, StorageTimeoutError } from '../../src/store/group-commit.js';
import { storeEvents } from '../../src/store/inbox.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'group-commit-secret';
const scheme = createDefaultScheme({ secrets: [SECRET] });
const logger = pino({ level: 'silent' });
const postgres = backends.find((backend) => backend.name === 'postgres')!;

/**
 * Makes every commit of a row into inbox_events wait for an advisory lock the test holds: a deferred constraint
 * trigger runs at commit time, so a batch's statement has run and its transaction is committing, but has not
 * committed, for as long as the test keeps the lock. Resolves to the lock's holder.
 */
async function holdCommits(
  store: PayhooksDatabase,
  key: number,
): Promise<{ holder: pg.Client; key: number; release: () => Promise<void> }> {
  const table = sql.id(store.schema, 'inbox_events');
  const fn = sql.id(store.schema, 'hold_commit');
  await sql`create function ${fn}() returns trigger language plpgsql as $$
    begin perform pg_advisory_xact_lock(${sql.lit(key)}); return null; end $$`.execute(store.db);
  await sql`create constraint trigger hold_commit after insert on ${table}
    deferrable initially deferred for each row execute function ${fn}()`.execute(store.db);
  const holder = new pg.Client({ connectionString: pgUrl! });
  await holder.connect();
  await holder.query('select pg_advisory_lock($1)', [key]);
  return {
    holder,
    key,
    async release() {
      await holder.query('select pg_advisory_unlock($1)', [key]).catch(() => undefined);
      await holder.end();
    },
  };
}

/**
 * Backends whose commit waits on the advisory lock `key` (not another test file's lock, which runs beside this one):
 * one per batch being committed. A key that fits in 32 bits is the lock's objid, with classid 0 and objsubid 1.
 */
const WAITING_ON_KEY = `select l.pid from pg_locks l
  where l.locktype = 'advisory' and not l.granted and l.classid = 0 and l.objid = $1 and l.objsubid = 1
    and l.database = (select oid from pg_database where datname = current_database())`;

async function committingBatches(lock: { holder: pg.Client; key: number }): Promise<number> {
  const { rows } = await lock.holder.query<{ n: number }>(`select count(*)::int as n from (${WAITING_ON_KEY}) waiting`, [lock.key]);
  return rows[0]!.n;
}

describe.skipIf(!pgUrl)('group commit on the real PostgreSQL server', () => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it('answers no delivery before the statement holding it has committed, and answers all of them once it has', {
    timeout: 30_000,
  }, async () => {
    store = await postgres.open();
    const lock = await holdCommits(store, 71_001);
    const hooks = createPayhooks({ secret: SECRET, database: store, logger, groupCommit: { maxWaitMs: 20 } });
    const { url, close } = await listen(createServer(hooks.node()));
    try {
      const answered: string[] = [];
      const ids = Array.from({ length: 40 }, (_, i) => `held_${i}`);
      const responses = Promise.all(
        ids.map(async (id) => {
          const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope(id)));
          answered.push(id);
          return response;
        }),
      );
      // Every delivery's statement has run and is committing: the rows exist, uncommitted, in at most 4 batches.
      await waitFor(
        async () =>
          (await lock.holder.query(`select count(*)::int as n from "${store!.schema}".inbox_events`)).rows[0].n === 0 &&
          (await committingBatches(lock)) > 0,
        'the batches to reach their commit',
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      const batches = await committingBatches(lock);
      expect(batches).toBeGreaterThan(0);
      expect(batches).toBeLessThanOrEqual(4);
      // Held at commit for half a second more, and not one answer has been written.
      expect(answered).toEqual([]);
      await lock.release();
      const settled = await responses;
      expect(settled.map((r) => r.status)).toEqual(ids.map(() => 200));
      expect(settled.every((r) => (r.body as { duplicate?: boolean }).duplicate === undefined)).toBe(true);
      const stored = await store.db.selectFrom('inbox_events').select('event_id').execute();
      expect(stored.map((row) => row.event_id).sort()).toEqual([...ids].sort());
    } finally {
      await lock.release().catch(() => undefined);
      await close();
      await hooks.close();
    }
  });

  it('a batch whose database connection dies at commit answers 503 to each of its deliveries, and stores none of them', {
    timeout: 30_000,
  }, async () => {
    store = await postgres.open();
    const lock = await holdCommits(store, 71_002);
    const hooks = createPayhooks({ secret: SECRET, database: store, logger, groupCommit: { maxWaitMs: 20 } });
    const { url, close } = await listen(createServer(hooks.node()));
    try {
      const ids = Array.from({ length: 30 }, (_, i) => `cut_${i}`);
      const responses = Promise.all(ids.map((id) => post(`${url}/webhooks`, signedDelivery(scheme, envelope(id)))));
      await waitFor(async () => (await committingBatches(lock)) > 0, 'the batches to reach their commit');
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The server goes away under the committing batches.
      await lock.holder.query(`select pg_terminate_backend(pid) from (${WAITING_ON_KEY}) waiting`, [lock.key]);
      const settled = await responses;
      expect(settled.map((r) => r.status)).toEqual(ids.map(() => 503));
      await lock.release();
      const stored = await store.db.selectFrom('inbox_events').select('event_id').execute();
      expect(stored).toEqual([]);
      // The sender retries, and now every delivery is stored once.
      const retried = await Promise.all(ids.map((id) => post(`${url}/webhooks`, signedDelivery(scheme, envelope(id)))));
      expect(retried.map((r) => r.status)).toEqual(ids.map(() => 200));
      expect(await store.db.selectFrom('inbox_events').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()).toEqual({
        n: 30,
      });
    } finally {
      await lock.release().catch(() => undefined);
      await close();
      await hooks.close();
    }
  });
});

describe.each(backends)('group commit on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'two deliveries of one event in one batch: the first is new, the second a duplicate, both counted',
    async () => {
      store = await backend.open();
      const event = { eventId: 'twice', eventType: 'CUSTOMER_CREATED', resourceKey: null, rawBody: '{}', headers: {} };
      const other = { ...event, eventId: 'once' };
      expect(await storeEvents(store, [event, other, event])).toEqual([
        { inserted: true, deliveries: 2 },
        { inserted: true, deliveries: 1 },
        { inserted: false, deliveries: 2 },
      ]);
      expect(await storeEvents(store, [event])).toEqual([{ inserted: false, deliveries: 3 }]);
      // Only new events are queued, once each.
      const queued = await store.db.selectFrom('inbox_queue').select('event_id').orderBy('event_id').execute();
      expect(queued).toEqual([{ event_id: 'once' }, { event_id: 'twice' }]);
    },
  );

  it.skipIf(!backend.available)(
    'a delivery that can never be stored is refused with 400 alone; the deliveries batched with it are stored',
    async () => {
      store = await backend.open();
      const receiver = createReceiver({ store, scheme, logger, groupCommit: { maxWaitMs: 50 } });
      const deliver = (id: string, extraHeaders: Record<string, string> = {}) => {
        const { body, headers } = signedDelivery(scheme, envelope(id));
        return receiver.receive({ method: 'POST', headers: { ...headers, ...extraHeaders }, rawBody: Buffer.from(body) });
      };
      const [poisoned, lone, ...good] = await Promise.all([
        // Node's HTTP parser refuses these; a framework that hands headers over as they are may not.
        deliver('bad_header', { 'user-agent': 'agent\u0000' }),
        deliver('lone_surrogate', { 'user-agent': 'agent\ud800' }),
        ...Array.from({ length: 10 }, (_, i) => deliver(`fine_${i}`)),
      ]);
      expect(poisoned!.status).toBe(400);
      expect(JSON.parse(poisoned!.body).error.message).toMatch(/header "user-agent" holds U\+0000/);
      expect(lone!.status).toBe(400);
      expect(good.map((r) => r.status)).toEqual(good.map(() => 200));
      const stored = await store.db.selectFrom('inbox_events').select('event_id').orderBy('event_id').execute();
      expect(stored.map((row) => row.event_id)).toEqual(Array.from({ length: 10 }, (_, i) => `fine_${i}`).sort());
    },
  );

  it.skipIf(!backend.available)('a delivery still waiting for its batch at the ack budget is refused and never written', async () => {
    store = await backend.open();
    const ingest = createGroupCommit(store, { maxWaitMs: 0 }, 50);
    const event = { eventId: 'too_late', eventType: 'CUSTOMER_CREATED', resourceKey: null, rawBody: '{}', headers: {} };
    const stored = ingest.store(event);
    // The process is held past the budget before the batch could start (an overloaded event loop).
    for (const until = performance.now() + 100; performance.now() < until; );
    await expect(stored).rejects.toBeInstanceOf(StorageTimeoutError);
    await ingest.drain();
    expect(await store.db.selectFrom('inbox_events').select('event_id').execute()).toEqual([]);
  });

  it.skipIf(!backend.available)('a row the database refuses for its data fails alone: the rest of its batch is stored', async () => {
    store = await backend.open();
    // Stands for any row Postgres refuses for its data (SQLSTATE class 22) that the checks before batching missed.
    await sql`create function ${sql.id(store.schema, 'refuse_poison')}() returns trigger language plpgsql as $$
      begin if new.event_id = 'poison' then raise exception 'poisoned row' using errcode = '22023'; end if; return new; end $$`.execute(
      store.db,
    );
    await sql`create trigger refuse_poison before insert on ${sql.id(store.schema, 'inbox_events')}
      for each row execute function ${sql.id(store.schema, 'refuse_poison')}()`.execute(store.db);
    const receiver = createReceiver({ store, scheme, logger, groupCommit: { maxWaitMs: 50 } });
    const responses = await Promise.all(
      ['a', 'poison', 'b', 'c'].map((id) => {
        const { body, headers } = signedDelivery(scheme, envelope(id));
        return receiver.receive({ method: 'POST', headers, rawBody: Buffer.from(body) });
      }),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 400, 200, 200]);
    expect(JSON.parse(responses[1]!.body).error.message).toMatch(/SQLSTATE 22023/);
    expect(JSON.parse(responses[1]!.body).error.message).not.toMatch(/poisoned row/);
    const stored = await store.db.selectFrom('inbox_events').select('event_id').orderBy('event_id').execute();
    expect(stored.map((row) => row.event_id)).toEqual(['a', 'b', 'c']);
  });
});
