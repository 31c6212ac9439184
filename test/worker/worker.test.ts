import { sql } from 'kysely';
import { pino, type Logger } from 'pino';
import { afterAll, afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { backends, dispose, emptyStore } from '../helpers/stores.js';
import { putEvent, putEvents } from '../helpers/inbox.js';
import { waitFor } from '../helpers/wait.js';
import { withOwnResource } from '../helpers/own-resource.js';

const logger = pino({ level: 'silent' });
const fast = { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 50 } };

/** A logger that keeps its JSON lines, to assert on what operators would read. */
function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }), lines };
}

/** A promise and the function that settles it, so a handler can wait for the test to let it go. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe.each(backends)('worker on $name', (backend) => {
  // One store for the file's tests on this backend, emptied after each (emptyStore): opening and migrating one
  // per test cost more than most of the tests.
  let shared: PayhooksDatabase | undefined;
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await emptyStore(store);
    store = undefined;
  });
  afterAll(async () => {
    if (shared) await dispose(shared);
    shared = undefined;
  });

  async function setup(worker: Record<string, unknown> = {}, log: Logger = logger) {
    shared ??= await backend.open();
    store = shared;
    hooks = createPayhooks({ database: store, logger: log, worker: { ...fast, ...worker } });
    return { store, hooks };
  }

  const done =
    (s: PayhooksDatabase, id: string, status = 'done') =>
    async () =>
      (await getEvent(s, id))?.status === status;

  describe.skipIf(!backend.available)('outcomes', () => {
    it('a handler that fails twice then succeeds ends done after 3 attempts, with typed data', async () => {
      const { store, hooks } = await setup();
      let calls = 0;
      const seen: string[] = [];
      hooks.on('INVOICE_PAID', async (event, ctx) => {
        calls++;
        seen.push(`${ctx.attempt}:${event.data.invoiceId}`);
        if (calls <= 2) throw new Error(`boom ${calls}`);
      });
      const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_flaky' });
      await putEvent(store, event);
      await hooks.start();
      await waitFor(done(store, 'evt_flaky'), 'evt_flaky done');
      const stored = await getEvent(store, 'evt_flaky');
      expect(stored?.attempts).toBe(3);
      expect(seen).toEqual([1, 2, 3].map((n) => `${n}:${event.data.invoiceId}`));
      expect(stored?.lastError).toBeNull();
    });

    it('an error that quotes data holding U+0000 is recorded (as U+FFFD): the event retries, then ends dead', async () => {
      const { store, hooks } = await setup({ maxAttempts: 2 });
      hooks.on(
        'CUSTOMER_CREATED',
        async (event) => {
          throw new Error(`the CRM refused the name ${event.data.name}`);
        },
        { name: 'crm' },
      );
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_nul_error', data: { name: 'Ada\u0000Lovelace' } }));
      await hooks.start();
      await waitFor(done(store, 'evt_nul_error', 'dead'), 'evt_nul_error dead', 15_000);
      const stored = await getEvent(store, 'evt_nul_error');
      expect(stored).toMatchObject({ attempts: 2, lastError: 'Error: the CRM refused the name Ada\ufffdLovelace' });
      expect(stored!.handlerAttempts.map((a) => a.error)).toEqual(Array(2).fill('Error: the CRM refused the name Ada\ufffdLovelace'));
    });

    it('a handler whose own write of U+0000 Postgres refuses gives up at once, saying what to do (text and jsonb)', async () => {
      const { store, hooks } = await setup({ maxAttempts: 5 });
      hooks.on(
        'CUSTOMER_CREATED',
        async (event, ctx) => {
          await ctx.transaction(async (trx) => {
            if (event.eventId === 'evt_nul_text') await sql`select ${event.data.name}::text`.execute(trx);
            else await sql`select ${JSON.stringify(event.data)}::jsonb`.execute(trx);
          });
        },
        { name: 'own-table' },
      );
      for (const eventId of ['evt_nul_text', 'evt_nul_jsonb']) {
        await putEvent(store, withOwnResource(exampleEvent('CUSTOMER_CREATED', { eventId, data: { name: 'Ada\u0000Lovelace' } }), eventId));
      }
      await hooks.start();
      for (const [eventId, code] of [
        ['evt_nul_text', '22021'],
        ['evt_nul_jsonb', '22P05'],
      ] as const) {
        await waitFor(async () => (await getEvent(store, eventId))?.lastError != null, `${eventId} failed once`, 15_000);
        const stored = await getEvent(store, eventId);
        expect(stored).toMatchObject({ status: 'dead', attempts: 1, givenUpHandlers: ['own-table'] });
        expect(stored!.lastError).toMatch(
          new RegExp(
            `^DeadLetterError: Postgres cannot store a U\\+0000 or lone surrogate that this handler wrote \\(SQLSTATE ${code}: .+\\)\\. ` +
              'Retrying cannot help: replace them before writing, .*then replay the event\\.$',
          ),
        );
      }
    });

    it('one that always fails is dead after the limit; replay brings it to done once fixed', async () => {
      const { store, hooks } = await setup({ maxAttempts: 3 });
      let fixed = false;
      let runs = 0;
      hooks.on(
        'CUSTOMER_CREATED',
        async () => {
          runs++;
          if (!fixed) throw new Error('downstream CRM rejected the write');
        },
        { name: 'crm' },
      );
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_dead' }));
      await hooks.start();
      await waitFor(done(store, 'evt_dead', 'dead'), 'evt_dead dead');
      const dead = await getEvent(store, 'evt_dead');
      expect(dead?.attempts).toBe(3);
      expect(dead?.lastError).toMatch(/downstream CRM rejected the write/);
      expect(runs).toBe(3);

      fixed = true;
      expect(await hooks.replay('evt_dead')).toEqual(['evt_dead']);
      await waitFor(done(store, 'evt_dead'), 'evt_dead done after replay');
      expect((await getEvent(store, 'evt_dead'))?.completedHandlers).toEqual(['crm']);
      expect(runs).toBe(4);
    });

    it('on a retry only handlers that have not completed run again', async () => {
      const { store, hooks } = await setup();
      const runs = { first: 0, second: 0 };
      hooks.on('PAYMENT_COMPLETED', () => void runs.first++, { name: 'first' });
      hooks.on(
        'PAYMENT_COMPLETED',
        () => {
          runs.second++;
          if (runs.second === 1) throw new Error('once');
        },
        { name: 'second' },
      );
      await putEvent(store, exampleEvent('PAYMENT_COMPLETED', { eventId: 'evt_partial' }));
      await hooks.start();
      await waitFor(done(store, 'evt_partial'), 'evt_partial done');
      expect(runs).toEqual({ first: 1, second: 2 });
    });

    it('data that fails its schema is invalid, with the failing paths; a type without handler is ignored', async () => {
      const { store, hooks } = await setup();
      hooks.on('INVOICE_PAID', () => undefined);
      const bad = exampleEvent('INVOICE_PAID', { eventId: 'evt_bad' });
      await putEvent(store, { ...bad, data: { ...bad.data, amount: 'a lot' } });
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_nobody' }));
      await putEvent(store, { eventId: 'evt_new_type', eventType: 'SOMETHING_NEW', data: {} });
      await hooks.start();
      await waitFor(done(store, 'evt_bad', 'invalid'), 'evt_bad invalid');
      await waitFor(done(store, 'evt_nobody', 'ignored'), 'evt_nobody ignored');
      await waitFor(done(store, 'evt_new_type', 'ignored'), 'evt_new_type ignored');
      expect((await getEvent(store, 'evt_bad'))?.lastError).toMatch(/data\.amount/);
    });

    it('each event marked ignored is logged as a warning with its type, the registered types and what to do', async () => {
      const { logger: log, lines } = capturingLogger();
      const { store, hooks } = await setup({}, log);
      hooks.on(['INVOICE_PAID', 'CUSTOMER_UPDATED'], () => undefined);
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_ign_1' }));
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_ign_2' }));
      await putEvent(store, { eventId: 'evt_ign_new', eventType: 'SOMETHING_NEW', data: {} });
      await hooks.start();
      for (const id of ['evt_ign_1', 'evt_ign_2', 'evt_ign_new']) await waitFor(done(store, id, 'ignored'), `${id} ignored`);
      const ignoredLines = () => lines.filter((l) => typeof l.msg === 'string' && l.msg.includes('marked ignored'));
      expect(ignoredLines().map((l) => [l.level, l.eventId, l.eventType, l.registeredTypes])).toEqual(
        expect.arrayContaining([
          [40, 'evt_ign_1', 'CUSTOMER_CREATED', ['CUSTOMER_UPDATED', 'INVOICE_PAID']],
          [40, 'evt_ign_2', 'CUSTOMER_CREATED', ['CUSTOMER_UPDATED', 'INVOICE_PAID']],
          [40, 'evt_ign_new', 'SOMETHING_NEW', ['CUSTOMER_UPDATED', 'INVOICE_PAID']],
        ]),
      );
      expect(ignoredLines()).toHaveLength(3);
      expect(ignoredLines().find((l) => l.eventId === 'evt_ign_1')?.msg).toBe(
        'no handler is registered for CUSTOMER_CREATED: event evt_ign_1 marked ignored. If it matters, register a handler for ' +
          'CUSTOMER_CREATED (a no-op one if the type is deliberately unused, to silence this) and replay it: payhooks replay evt_ign_1',
      );
      // A replay that ends ignored again is a new outcome, and says so again: one line per marking, never none.
      await hooks.replay('evt_ign_1');
      await waitFor(() => ignoredLines().length === 4, 'the replayed event to be logged again');
      expect(ignoredLines()[3]?.eventId).toBe('evt_ign_1');
    });

    it('onAny sees unknown types too', async () => {
      const { store, hooks } = await setup();
      const types: string[] = [];
      hooks.onAny((event) => void types.push(event.eventType));
      await putEvent(store, { eventId: 'evt_future', eventType: 'SOMETHING_NEW', data: { x: 1 } });
      await hooks.start();
      await waitFor(done(store, 'evt_future'), 'evt_future done');
      expect(types).toEqual(['SOMETHING_NEW']);
    });

    it('a handler that times out is retried, and its signal was aborted', async () => {
      const { store, hooks } = await setup({ handlerTimeoutMs: 100, leaseMs: 5000 });
      let aborted = false;
      let calls = 0;
      hooks.on('INVOICE_CREATED', async (_event, ctx) => {
        calls++;
        if (calls > 1) return;
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          }),
        );
      });
      await putEvent(store, exampleEvent('INVOICE_CREATED', { eventId: 'evt_slow' }));
      await hooks.start();
      await waitFor(done(store, 'evt_slow'), 'evt_slow done');
      expect(aborted).toBe(true);
      expect((await getEvent(store, 'evt_slow'))?.attempts).toBe(2);
    });

    it('an outcome the database refuses for a while is written again: the handler ran once, and the event ends done', async () => {
      const { logger: log, lines } = capturingLogger();
      const { store, hooks } = await setup({ leaseMs: 10_000, handlerTimeoutMs: 1000 }, log);
      // A trigger refuses every change to the inbox row while the flag table holds a row: the outcome cannot land.
      const schema = store.schema;
      await sql
        .raw(`create table "${schema}".refusing (x int);
          insert into "${schema}".refusing values (1);
          create function "${schema}".refuse_outcome() returns trigger language plpgsql as $$
          begin
            if exists (select 1 from "${schema}".refusing) then raise exception 'outcome refused by the test'; end if;
            return new;
          end $$;
          create trigger refuse before update on "${schema}".inbox_events for each row execute function "${schema}".refuse_outcome();`)
        .execute(store.db);
      // The store is shared by the file's tests (emptyStore): the trigger goes with this one, once its worker stopped.
      onTestFinished(async () => {
        await sql
          .raw(
            `drop trigger refuse on "${schema}".inbox_events; drop function "${schema}".refuse_outcome(); drop table "${schema}".refusing;`,
          )
          .execute(store.db);
      });
      let runs = 0;
      hooks.on('INVOICE_PAID', () => void runs++);
      await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_refused' }));
      await hooks.start();
      const refusedLines = () => lines.filter((line) => String(line.msg).startsWith('could not record the outcome'));
      await waitFor(() => refusedLines().length >= 1, 'the outcome to be refused');
      expect(await getEvent(store, 'evt_refused')).toMatchObject({ status: 'processing' });
      await sql.raw(`delete from "${schema}".refusing`).execute(store.db);
      await waitFor(done(store, 'evt_refused'), 'evt_refused done once the database takes the outcome');
      expect(runs).toBe(1);
      expect(refusedLines()[0]).toMatchObject({ level: 40, eventId: 'evt_refused' });
    });
  });

  describe.skipIf(!backend.available)('ctx.transaction', () => {
    it('a handler that writes and then throws leaves no write behind; the retry commits write and mark together', async () => {
      const { store, hooks } = await setup();
      await sql`create table public_effects_${sql.raw(store.schema)} (id text primary key, n int not null)`.execute(store.db);
      const table = `public_effects_${store.schema}`;
      let calls = 0;
      hooks.on(
        'INVOICE_PAID',
        async (event, ctx) => {
          calls++;
          await ctx.transaction(async (trx) => {
            await sql`insert into ${sql.table(table)} (id, n) values (${event.data.invoiceId}, 1)
                    on conflict (id) do update set n = ${sql.table(table)}.n + 1`.execute(trx);
            if (calls === 1) throw new Error('after the write');
          });
        },
        { name: 'mirror' },
      );
      await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_tx' }));
      await hooks.start();
      await waitFor(done(store, 'evt_tx'), 'evt_tx done');
      const { rows } = await sql<{ n: number }>`select n from ${sql.table(table)}`.execute(store.db);
      expect(rows).toEqual([{ n: 1 }]);
      expect(calls).toBe(2);
      expect((await getEvent(store, 'evt_tx'))?.completedHandlers).toEqual(['mirror']);
    });
  });

  describe.skipIf(!backend.available)('stopping', () => {
    it('stop lets a running handler finish, and claims nothing more', async () => {
      const { logger: log, lines } = capturingLogger();
      const { store, hooks: instance } = await setup({ concurrency: 2 }, log);
      const release = gate();
      const order: string[] = [];
      instance.on('INVOICE_CREATED', async (event) => {
        order.push(`started ${event.eventId}`);
        await release.opened;
        order.push(`finished ${event.eventId}`);
      });
      // Same invoice: evt_b waits behind evt_a, and is still waiting when the stop comes.
      await putEvent(store, exampleEvent('INVOICE_CREATED', { eventId: 'evt_a' }));
      await putEvent(store, exampleEvent('INVOICE_CREATED', { eventId: 'evt_b' }));
      await instance.start();
      await waitFor(() => order.length === 1, 'evt_a to start');
      hooks = undefined;
      const stopped = instance.stop(5000).then(() => order.push('stop resolved'));
      // Let the handler go only once stop is waiting for it (claiming has ended by then): stop must outlast it.
      await waitFor(() => lines.some((l) => l.msg === 'worker stopping: waiting for running handlers to finish'), 'stop to wait');
      release.open();
      await stopped;
      expect(order).toEqual(['started evt_a', 'finished evt_a', 'stop resolved']);
      expect(await getEvent(store, 'evt_a')).toMatchObject({ status: 'done', attempts: 1 });
      expect(await getEvent(store, 'evt_b')).toMatchObject({ status: 'pending', attempts: 0 });
    });

    it('a handler still running at the stop timeout (the worker option) is aborted and its lease given back at once', async () => {
      const { store, hooks: instance } = await setup({ leaseMs: 60_000, stopTimeoutMs: 200 });
      let aborted = false;
      let finished = false;
      // A handler that ignores its signal: it runs until the test lets it go, long after the stop.
      const release = gate();
      instance.on('CUSTOMER_CREATED', async (_event, ctx) => {
        ctx.signal.addEventListener('abort', () => (aborted = true));
        await release.opened;
        finished = true;
      });
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_stuck' }));
      await instance.start();
      await waitFor(async () => (await getEvent(store, 'evt_stuck'))?.status === 'processing', 'evt_stuck to start');
      hooks = undefined;
      const stopping = performance.now();
      await instance.stop(); // no timeout given: the worker's stopTimeoutMs
      expect(performance.now() - stopping).toBeLessThan(10_000);
      expect(aborted).toBe(true);
      const row = await store.db
        .selectFrom('inbox_event_states')
        .select(['status', 'lease_owner', 'attempts'])
        .where('event_id', '=', 'evt_stuck')
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ status: 'pending', lease_owner: null, attempts: 1 });
      // The abandoned run still ends (it is abandoned, not killed) and records that its handler completed; let it,
      // before the schema is dropped under it.
      release.open();
      await waitFor(() => finished, 'the abandoned handler to return');
      await waitFor(async () => (await getEvent(store, 'evt_stuck'))?.completedHandlers.length === 1, 'its completion mark');
    });
  });

  describe.skipIf(!backend.available)('waking', () => {
    it('an event stored by someone else wakes the worker through LISTEN/NOTIFY, with polling out of the way', async () => {
      const { store, hooks } = await setup({ pollIntervalMs: 600_000 });
      const handled: string[] = [];
      hooks.on('CUSTOMER_CREATED', (event) => void handled.push(event.eventId));
      // start() resolves after its first claim round, so nothing but a notification can find what is stored next.
      await hooks.start();
      // Stored straight into the table (not through this instance's receiver): only the insert trigger's NOTIFY can wake it.
      await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_notified' }));
      await waitFor(() => handled.length === 1, 'the notified event to run', 5000);
      expect(handled).toEqual(['evt_notified']);
    });
  });

  describe.skipIf(!backend.available)('queue upkeep', () => {
    /** The worker's vacuums of the queue so far: manual ones only (autovacuum has a counter of its own). */
    const vacuums = async (store: PayhooksDatabase) => {
      const { rows } = await sql<{ n: number }>`select vacuum_count::int as n from pg_stat_user_tables
        where schemaname = ${store.schema} and relname = 'inbox_queue'`.execute(store.db);
      return rows[0]?.n ?? 0;
    };
    const queued = async (store: PayhooksDatabase) =>
      (await store.db.selectFrom('inbox_queue').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()).n;
    /** `count` events, each of a customer of its own, so that they run side by side. */
    const burst = (prefix: string, count: number) =>
      Array.from({ length: count }, (_, i) =>
        withOwnResource(exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_${prefix}_${i}` }), `${prefix}_${i}`),
      );

    it('vacuums the work queue itself every 50,000 outcomes, mid-drain, so claims stay fast where autovacuum is off or behind', {
      timeout: 180_000,
    }, async () => {
      const { logger: log, lines } = capturingLogger();
      const { store, hooks } = await setup({ concurrency: 8 }, log);
      // The store is shared by this file's tests, and the counter outlives their truncation.
      const before = await vacuums(store);
      // 25,100 events, two outcomes each (the completion and the final state). The last 10 wait until released: the
      // worker holds them, so the vacuum it runs meanwhile is the periodic one, not the one of an idle worker.
      const events = burst('vac', 25_100);
      const gated = new Set(events.slice(-10).map((event) => event.eventId));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      hooks.onAny(async (event) => {
        if (gated.has(event.eventId)) await released;
      });
      for (let i = 0; i < events.length; i += 1000) await putEvents(store, events.slice(i, i + 1000));
      await hooks.start();
      try {
        await waitFor(async () => (await queued(store)) === gated.size, 'all but the held events drained', 120_000);
        if (backend.name === 'postgres') await waitFor(async () => (await vacuums(store)) > before, 'a vacuum of inbox_queue');
      } finally {
        release();
      }
      await waitFor(async () => (await queued(store)) === 0, 'the backlog drained');
      expect(lines.filter((line) => String(line.msg).startsWith('vacuuming the work queue failed'))).toEqual([]);
    });

    // The dead entries a drained burst leaves at the front of the queue would otherwise be walked by the next burst's
    // first claims (60 to 70 ms each instead of 8, issue 27).
    it.skipIf(backend.name !== 'postgres')(
      'vacuums the queue once it finds it drained after 1,000 outcomes, and not before',
      { timeout: 60_000 },
      async () => {
        const { store, hooks } = await setup({ concurrency: 8, pollIntervalMs: 50 });
        hooks.onAny(() => {});
        const drained = async () => (await queued(store)) === 0;
        const before = await vacuums(store);
        await hooks.start();
        // 400 events: 800 outcomes (a completion and a final state each), short of 1,000.
        await putEvents(store, burst('few', 400));
        await waitFor(drained, 'the first burst drained', 30_000);
        // Polls find it empty meanwhile; statistics reach pg_stat_user_tables within a second or so.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        expect(await vacuums(store)).toBe(before);
        await putEvents(store, burst('more', 400));
        await waitFor(drained, 'the second burst drained', 30_000);
        await waitFor(async () => (await vacuums(store)) > before, 'a vacuum of the drained queue', 10_000);
      },
    );
  });

  describe.skipIf(!backend.available)('ordering', () => {
    it('events of one resource never overlap and run in the order received', async () => {
      const { store, hooks } = await setup({ concurrency: 6 });
      const running = new Set<string>();
      const overlaps: string[] = [];
      const order: Record<string, string[]> = {};
      hooks.on(['CUSTOMER_CREATED', 'CUSTOMER_UPDATED'], async (event) => {
        const key = event.data.id;
        if (running.has(key)) overlaps.push(key);
        running.add(key);
        order[key] ??= [];
        order[key].push(event.eventId);
        await new Promise((r) => setTimeout(r, 5));
        running.delete(key);
      });
      const expected: Record<string, string[]> = {};
      for (let i = 0; i < 60; i++) {
        const customer = `cus_${i % 4}`;
        const base = exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_order_${i}` });
        await putEvent(store, { ...base, data: { ...base.data, id: customer } });
        expected[customer] ??= [];
        expected[customer].push(`evt_order_${i}`);
      }
      await hooks.start();
      await waitFor(async () => Object.values(order).flat().length === 60, 'all 60 handled');
      expect(overlaps).toEqual([]);
      expect(order).toEqual(expected);
    });
  });
});
