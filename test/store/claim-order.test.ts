import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { eventKey } from '../../src/store/accounts.js';
import { claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { extendLeases, recordOutcomes } from '../../src/store/outcomes.js';
import { putEvents, setState } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

/** A customer.updated event of customer `customer`, with id `eventId`. */
function ofCustomer(eventId: string, customer: string) {
  const base = exampleEvent('CUSTOMER_UPDATED', { eventId });
  return { ...base, data: { ...base.data, id: customer } };
}

describe.each(backends)('the claim’s order per resource ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });
  const claimIds = async (db: PayhooksDatabase) =>
    (await claimEvents(db, { workerId: 'w', limit: 100, leaseMs: 60_000 })).map((event) => event.eventId);
  const finish = (db: PayhooksDatabase, ids: string[]) =>
    recordOutcomes(
      db,
      'w',
      ids.map((eventId) => ({ kind: 'finished' as const, account: 'default', eventId, status: 'done' as const, lastError: null })),
    );

  it.skipIf(!backend.available)('a backlog of one resource is handed out one event at a time, in order, beside the others', async () => {
    const db = await backend.open();
    store = db;
    // 40 events of one customer, with a few of other customers stored among them.
    const busy = Array.from({ length: 40 }, (_, n) => ofCustomer(`evt_busy_${String(n).padStart(2, '0')}`, 'cus_busy'));
    const others = Array.from({ length: 4 }, (_, n) => ofCustomer(`evt_other_${n}`, `cus_other_${n}`));
    await putEvents(db, [...busy.slice(0, 10), others[0]!, others[1]!, ...busy.slice(10, 30), others[2]!, others[3]!, ...busy.slice(30)]);

    expect(await claimIds(db)).toEqual(['evt_busy_00', 'evt_other_0', 'evt_other_1', 'evt_other_2', 'evt_other_3']);
    // While the first runs, nothing else of the customer is due.
    expect(await claimIds(db)).toEqual([]);
    const order: string[] = ['evt_busy_00'];
    await finish(db, ['evt_busy_00', ...others.map((event) => event.eventId)]);
    for (let claim = 0; claim < 45; claim++) {
      const ids = await claimIds(db);
      if (ids.length === 0) break;
      expect(ids).toHaveLength(1);
      order.push(...ids);
      await finish(db, ids);
    }
    expect(order).toEqual(busy.map((event) => event.eventId));
  });

  /** The queued events of `customer`'s key that a claim would consider now (due: waiting, or with a lease run out), in order. */
  const dueOf = async (db: PayhooksDatabase, customer: string) => {
    const { rows } = await sql<{ event_id: string }>`
      select event_id from ${sql.id(db.schema, 'inbox_queue')}
       where resource_key = ${`customer:${customer}`} and run_at <= now() order by seq`.execute(db.db);
    return rows.map((row) => row.event_id);
  };

  it.skipIf(!backend.available)(
    'the events waiting behind a running one are set aside until its outcome, which makes only the next one due',
    async () => {
      const db = await backend.open();
      store = db;
      const ids = ['evt_1', 'evt_2', 'evt_3', 'evt_4'];
      await putEvents(
        db,
        ids.map((id) => ofCustomer(id, 'cus_1')),
      );
      expect(await dueOf(db, 'cus_1')).toEqual(ids);
      expect(await claimIds(db)).toEqual(['evt_1']);
      // Set aside: no later claim walks them while evt_1 runs.
      expect(await dueOf(db, 'cus_1')).toEqual([]);
      // A delivery of the key that arrives meanwhile is due (its claim could not see it) until the next lease of the key.
      await putEvents(db, [ofCustomer('evt_5', 'cus_1')]);
      expect(await dueOf(db, 'cus_1')).toEqual(['evt_5']);
      expect(await claimIds(db)).toEqual([]);
      await finish(db, ['evt_1']);
      expect(await dueOf(db, 'cus_1')).toEqual(['evt_2', 'evt_5']);
      expect(await claimIds(db)).toEqual(['evt_2']);
      expect(await dueOf(db, 'cus_1')).toEqual([]);
      // A retry of the running one wakes the next too: it may run what the failed one does not owe.
      await recordOutcomes(db, 'w', [
        { kind: 'retry', account: 'default', eventId: 'evt_2', delayMs: 60_000, lastError: 'boom', owed: ['a'] },
      ]);
      expect(await dueOf(db, 'cus_1')).toEqual(['evt_3']);
    },
  );

  /** Three events of customer cus_1 stored, and the first claimed by worker `w` with a lease of `leaseMs`. */
  const leaseFirstOfThree = async (leaseMs: number) => {
    const db = await backend.open();
    store = db;
    await putEvents(
      db,
      ['evt_1', 'evt_2', 'evt_3'].map((id) => ofCustomer(id, 'cus_1')),
    );
    expect((await claimEvents(db, { workerId: 'w', limit: 10, leaseMs })).map((event) => event.eventId)).toEqual(['evt_1']);
    return db;
  };

  it.skipIf(!backend.available)('events set aside behind a lease are due again when it runs out, in order behind it', async () => {
    const db = await leaseFirstOfThree(300);
    expect(await dueOf(db, 'cus_1')).toEqual([]);
    // Its worker died: no outcome will wake them. They are due with the expired lease, and evt_1 still goes first.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await dueOf(db, 'cus_1')).toEqual(['evt_1', 'evt_2', 'evt_3']);
    const again = await claimEvents(db, { workerId: 'w2', limit: 10, leaseMs: 60_000 });
    expect(again.map((event) => [event.eventId, event.attempt])).toEqual([['evt_1', 2]]);
    expect(await dueOf(db, 'cus_1')).toEqual([]);
    await recordOutcomes(db, 'w2', [{ kind: 'finished', account: 'default', eventId: 'evt_1', status: 'done', lastError: null }]);
    expect(await claimIds(db)).toEqual(['evt_2']);
  });

  it.skipIf(!backend.available)(
    'events set aside behind a lease stay aside while it is extended, and the outcome wakes the next',
    async () => {
      const db = await leaseFirstOfThree(300);
      // The run outlasts its first lease: the heartbeat extends it, and the events behind it with it.
      expect([...(await extendLeases(db, 'w', [{ account: 'default', eventId: 'evt_1' }], 60_000)).keys()]).toEqual([
        eventKey('default', 'evt_1'),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await dueOf(db, 'cus_1')).toEqual([]);
      await finish(db, ['evt_1']);
      expect(await claimIds(db)).toEqual(['evt_2']);
    },
  );

  it.skipIf(!backend.available)(
    'the first queued event of a resource waits while a later one, committed before it, holds a live lease',
    async () => {
      const db = await backend.open();
      store = db;
      await putEvents(db, [ofCustomer('evt_a', 'cus_1'), ofCustomer('evt_b', 'cus_1'), ofCustomer('evt_c', 'cus_1')]);
      // evt_b was claimed elsewhere before evt_a became visible (deliveries committed out of seq order).
      await setState(db, 'evt_b', 'processing');
      expect(await claimIds(db)).toEqual([]);
      await setState(db, 'evt_b', 'done');
      expect(await claimIds(db)).toEqual(['evt_a']);
      await finish(db, ['evt_a']);
      expect(await claimIds(db)).toEqual(['evt_c']);
    },
  );
});
