import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { dataCheckFingerprint } from '../../src/events/parse-event.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { signedRequest } from '../../src/testing/signed-request.js';
import { putEvent } from '../helpers/inbox.js';
import { backends, dispose, emptyStore } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'data-check-secret';
const logger = pino({ level: 'silent' });

/** The receiver's mark on each stored event, by id. */
async function marks(store: PayhooksDatabase): Promise<Record<string, string | null>> {
  const rows = await store.db.selectFrom('inbox_events').select(['event_id', 'data_valid_under']).execute();
  return Object.fromEntries(rows.map((row) => [row.event_id, row.data_valid_under]));
}

describe.each(backends)('the data check at receipt on $name', (backend) => {
  let shared: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (shared) await emptyStore(shared);
  });
  afterAll(async () => {
    if (shared) await dispose(shared);
    shared = undefined;
  });

  async function setup(): Promise<{ store: PayhooksDatabase; hooks: Payhooks }> {
    shared ??= await backend.open();
    hooks = createPayhooks({
      secret: SECRET,
      database: shared,
      logger,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 50 } },
    });
    return { store: shared, hooks };
  }

  const status = (store: PayhooksDatabase, id: string, wanted: string) => async () => (await getEvent(store, id))?.status === wanted;

  describe.skipIf(!backend.available)('receiver and worker', () => {
    it('the receiver marks data it found certainly valid, and handlers read it as the full parse gives it', async () => {
      const { store, hooks } = await setup();
      const paid = exampleEvent('INVOICE_PAID', { eventId: 'evt_checked' });
      const bad = { ...exampleEvent('INVOICE_PAID', { eventId: 'evt_unchecked' }), data: { ...paid.data, amount: 'a lot' } };
      const seen: unknown[] = [];
      hooks.on('INVOICE_PAID', (event) => void seen.push(event.data));
      for (const event of [paid, bad]) expect((await hooks.receive(signedRequest(event, { secret: SECRET }))).status).toBe(200);
      expect(await marks(store)).toEqual({ evt_checked: dataCheckFingerprint(), evt_unchecked: null });
      await hooks.start();
      await waitFor(status(store, 'evt_checked', 'done'), 'evt_checked done');
      await waitFor(status(store, 'evt_unchecked', 'invalid'), 'evt_unchecked invalid');
      expect(seen).toEqual([paid.data]);
      expect((await getEvent(store, 'evt_unchecked'))?.lastError).toMatch(/data\.amount/);
    });

    it('a mark of other schemas (another build of payhooks) is not trusted: the body is checked in full', async () => {
      const { store, hooks } = await setup();
      const paid = exampleEvent('INVOICE_PAID', { eventId: 'evt_stale' });
      await putEvent(store, { ...paid, data: { ...paid.data, amount: 'a lot' } });
      await sql`update ${sql.id(store.schema, 'inbox_events')} set data_valid_under = 'schemas-of-another-build'`.execute(store.db);
      let ran = 0;
      hooks.on('INVOICE_PAID', () => void ran++);
      await hooks.start();
      await waitFor(status(store, 'evt_stale', 'invalid'), 'evt_stale invalid');
      expect(ran).toBe(0);
    });

    it('a trusted body is parsed only when a handler reads its data', async () => {
      const { store, hooks } = await setup();
      // A body no receiver would store, under the current mark: only a handler that reads data can notice.
      for (const eventId of ['evt_unread', 'evt_read']) {
        await putEvent(store, { eventId, eventType: 'CUSTOMER_CREATED', data: {} });
      }
      await sql`update ${sql.id(store.schema, 'inbox_events')} set raw_body = 'not json', data_valid_under = ${dataCheckFingerprint()}`.execute(
        store.db,
      );
      hooks.on('CUSTOMER_CREATED', (event) => {
        if (event.eventId === 'evt_read') return void event.data.id;
      });
      await hooks.start();
      await waitFor(status(store, 'evt_unread', 'done'), 'evt_unread done');
      await waitFor(async () => ((await getEvent(store, 'evt_read'))?.attempts ?? 0) >= 2, 'evt_read retried');
      expect((await getEvent(store, 'evt_read'))?.lastError).toMatch(/JSON/);
    });
  });
});
