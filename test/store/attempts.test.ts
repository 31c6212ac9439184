import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { pruneEvents } from '../../src/store/maintenance.js';
import { migrate, readMigrations } from '../../src/store/migrate.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { backdate, putEvent } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

describe.each(backends)('every handler attempt kept, on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'events show lists each run of each handler with its attempt, outcome, error and duration',
    { timeout: 60_000 },
    async () => {
      store = await backend.open();
      const s = store;
      hooks = createPayhooks({
        database: s,
        logger: pino({ level: 'silent' }),
        worker: { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 20 }, maxAttempts: 5 },
      });
      let calls = 0;
      hooks.on(
        'INVOICE_PAID',
        async () => {
          calls++;
          await new Promise((resolve) => setTimeout(resolve, 20));
          if (calls <= 2) throw new Error(`ledger down ${calls}`);
        },
        { name: 'ledger' },
      );
      hooks.on('INVOICE_PAID', () => undefined, { name: 'mirror' });
      hooks.on(
        'INVOICE_PAID',
        () => {
          throw new DeadLetterError('not for us');
        },
        { name: 'picky' },
      );
      await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_timeline' }));
      await hooks.start();
      await waitFor(async () => (await getEvent(s, 'evt_timeline'))?.status === 'dead', 'evt_timeline settled');
      const event = await getEvent(s, 'evt_timeline');
      const timeline = event!.handlerAttempts.map((a) => [a.attempt, a.handler, a.outcome, a.error]);
      // In the order they ran: by attempt, and within one in the order the handlers ran.
      expect(event!.handlerAttempts.map((a) => a.attempt)).toEqual([1, 1, 1, 2, 3]);
      const startTimes = event!.handlerAttempts.map((a) => a.startedAt!.getTime());
      expect(startTimes).toEqual([...startTimes].sort((a, b) => a - b));
      expect(timeline.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])))).toEqual([
        [1, 'ledger', 'failed', expect.stringMatching(/ledger down 1/)],
        [1, 'mirror', 'completed', null],
        [1, 'picky', 'failed', expect.stringMatching(/not for us/)],
        [2, 'ledger', 'failed', expect.stringMatching(/ledger down 2/)],
        [3, 'ledger', 'completed', null],
      ]);
      for (const attempt of event!.handlerAttempts) {
        expect(attempt.durationMs).toBe(attempt.endedAt.getTime() - attempt.startedAt!.getTime());
        expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
      }
      expect(event!.handlerAttempts.filter((a) => a.handler === 'ledger').every((a) => a.durationMs! >= 15)).toBe(true);
      expect(event!.givenUpHandlers).toEqual(['picky']);
      // Attempts carry the event's receipt time (what time partitions will key on), and go with the event when pruned.
      const { rows } = await sql<{ same: boolean }>`
        select bool_and(a.received_at = e.received_at) as same from ${sql.id(s.schema, 'handler_attempts')} a
          join ${sql.id(s.schema, 'inbox_events')} e using (event_id)`.execute(s.db);
      expect(rows[0]?.same).toBe(true);
      await sql`update ${sql.id(s.schema, 'inbox_events')} set status = 'done'`.execute(s.db);
      await backdate(s, ['evt_timeline'], sql`now() - interval '2 days'`);
      expect(await pruneEvents(s, 86_400_000)).toBe(1);
      expect(await s.db.selectFrom('handler_attempts').selectAll().execute()).toEqual([]);
    },
  );

  it.skipIf(!backend.available)('migration 008 carries handler_runs over as attempts, without the start it never had', async () => {
    store = await backend.open({ migrated: false });
    const files = readMigrations();
    await migrate(
      store,
      files.filter((file) => file.name < '008'),
    );
    const schema = store.schema;
    await sql`insert into ${sql.id(schema, 'inbox_events')} (event_id, event_type, raw_body, status, attempts, received_at)
              values ('old_done', 'X', '{}', 'done', 2, '2025-03-01T00:00:00Z'), ('old_dead', 'X', '{}', 'dead', 10, '2025-03-02T00:00:00Z')`.execute(
      store.db,
    );
    await sql`insert into ${sql.id(schema, 'handler_runs')} (event_id, handler, completed_at, outcome, error)
              values ('old_done', 'h1', '2025-03-01T00:00:05Z', 'done', null), ('old_dead', 'h1', '2025-03-02T00:01:00Z', 'dead', 'boom')`.execute(
      store.db,
    );
    await migrate(store, files);
    const old = await getEvent(store, 'old_dead');
    expect(old!.handlerAttempts).toEqual([
      {
        handler: 'h1',
        attempt: null,
        startedAt: null,
        endedAt: new Date('2025-03-02T00:01:00Z'),
        durationMs: null,
        outcome: 'failed',
        error: 'boom',
      },
    ]);
    expect((await getEvent(store, 'old_done'))!.handlerAttempts).toMatchObject([{ handler: 'h1', outcome: 'completed' }]);
    const counts = await store.db.selectFrom('handler_attempts').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
    expect(counts.n).toBe(2);
  });
});
