import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { recordOutcomes } from '../../src/store/outcomes.js';
import { putEvent } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

describe.each(backends)('claims and outcomes of one resource, per handler ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'a later event runs what no earlier one owes, waits for the rest without spending attempts, and follows the earlier one’s outcomes',
    async () => {
      store = await backend.open();
      const db = store;
      for (const n of [1, 2, 3]) {
        const base = exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_ph_${n}` });
        await putEvent(db, { ...base, data: { ...base.data, id: 'cus_ph' } });
      }
      const claim = async () =>
        (await claimEvents(db, { workerId: 'w', limit: 10, leaseMs: 60_000 })).map((e) => [e.eventId, e.attempt, e.blockedHandlers]);
      const row = (id: string) =>
        db.db
          .selectFrom('inbox_queue')
          .select(['run_at', 'attempts', 'parked', 'owed'])
          .where('event_id', '=', id)
          .executeTakeFirstOrThrow();
      const dueNow = (id: string) => db.db.updateTable('inbox_queue').set({ run_at: sql`now()` }).where('event_id', '=', id).execute();

      // New events hold their resource whole: only the first is claimed.
      expect(await claim()).toEqual([['evt_ph_1', 1, []]]);
      expect(
        await recordOutcomes(db, 'w', [
          { kind: 'retry', account: 'default', eventId: 'evt_ph_1', delayMs: 60_000, lastError: 'S down', owed: ['S'] },
        ]),
      ).toEqual([true]);
      // It waits for S alone: the next event comes, told to leave S.
      expect(await claim()).toEqual([['evt_ph_2', 1, ['S']]]);
      // Events of one resource never run at once: nothing more while evt_ph_2 is leased.
      expect(await claim()).toEqual([]);
      await recordOutcomes(db, 'w', [{ kind: 'park', account: 'default', eventId: 'evt_ph_2', owed: ['S'], lastError: null }]);
      const first = await row('evt_ph_1');
      // Parked: its attempt given back, due with the event it waits for.
      expect(await row('evt_ph_2')).toEqual({ run_at: first.run_at, attempts: 0, parked: true, owed: ['S'] });
      expect(await claim()).toEqual([['evt_ph_3', 1, ['S']]]);
      await recordOutcomes(db, 'w', [{ kind: 'park', account: 'default', eventId: 'evt_ph_3', owed: ['S'], lastError: null }]);
      expect(await claim()).toEqual([]);

      // The first runs again and S fails again: the parked ones wait for its next run instead of waking for nothing.
      await dueNow('evt_ph_1');
      expect(await claim()).toEqual([['evt_ph_1', 2, []]]);
      await recordOutcomes(db, 'w', [
        { kind: 'retry', account: 'default', eventId: 'evt_ph_1', delayMs: 120_000, lastError: 'S down', owed: ['S'] },
      ]);
      const retried = await row('evt_ph_1');
      expect(retried.run_at.getTime()).toBeGreaterThan(first.run_at.getTime());
      for (const id of ['evt_ph_2', 'evt_ph_3']) expect(await row(id)).toMatchObject({ run_at: retried.run_at, parked: true });
      expect(await claim()).toEqual([]);

      // Now S goes through for it, T fails: S is settled, so the parked ones are due at once, and leave only T.
      await dueNow('evt_ph_1');
      expect(await claim()).toEqual([['evt_ph_1', 3, []]]);
      await recordOutcomes(db, 'w', [
        { kind: 'retry', account: 'default', eventId: 'evt_ph_1', delayMs: 120_000, lastError: 'T down', owed: ['T'] },
      ]);
      for (const id of ['evt_ph_2', 'evt_ph_3']) expect(await row(id)).toMatchObject({ parked: false });
      expect(await claim()).toEqual([['evt_ph_2', 1, ['T']]]);
      await recordOutcomes(db, 'w', [{ kind: 'finished', account: 'default', eventId: 'evt_ph_2', status: 'done', lastError: null }]);
      expect(await claim()).toEqual([['evt_ph_3', 1, ['T']]]);
      await recordOutcomes(db, 'w', [{ kind: 'park', account: 'default', eventId: 'evt_ph_3', owed: ['T'], lastError: null }]);

      // A failure outside any handler owes everything: the later event waits whole.
      await dueNow('evt_ph_1');
      expect(await claim()).toEqual([['evt_ph_1', 4, []]]);
      await recordOutcomes(db, 'w', [
        { kind: 'retry', account: 'default', eventId: 'evt_ph_1', delayMs: 120_000, lastError: 'worker', owed: null },
      ]);
      await dueNow('evt_ph_3');
      expect(await claim()).toEqual([]);

      // Once the first leaves the queue, the last is the head and owes what it owes.
      await dueNow('evt_ph_1');
      expect(await claim()).toEqual([['evt_ph_1', 5, []]]);
      await recordOutcomes(db, 'w', [
        { kind: 'finished', account: 'default', eventId: 'evt_ph_1', status: 'dead', lastError: 'T: gave up' },
      ]);
      expect(await claim()).toEqual([['evt_ph_3', 1, []]]);
    },
  );
});
