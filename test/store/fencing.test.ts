// Fencing (issue 49, migrations/019): a worker's outcome, heartbeat, effect steps and ctx.transaction are accepted only
// while it holds the lease it claimed with, the token compared in the statement. The event is claimed again by the SAME
// worker id after its lease ran out, the case the lease's owner alone cannot tell apart; then by a second worker while
// the first still runs its handler (its lease taken away as a partition longer than the lease would): the first one's
// late writes are dropped, told as `write:fenced`, and each effect happens once.
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { type ClaimedEvent, claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { beginStep, completeStep } from '../../src/store/effect-steps.js';
import { holdLeaseIn, LeaseFencedError } from '../../src/store/fencing.js';
import { getEvent } from '../../src/store/inbox.js';
import { eventKey } from '../../src/store/accounts.js';
import { extendLeases, recordOutcomes } from '../../src/store/outcomes.js';
import { LeaseKeeper } from '../../src/worker/lease-keeper.js';
import { type WorkerEventMap, WorkerEvents } from '../../src/worker/worker-events.js';
import { putEvent } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const WORKER = 'host:1:same';

describe.each(backends)('fencing on $name', (backend) => {
  const stores: PayhooksDatabase[] = [];
  let first: Payhooks | undefined;
  let second: Payhooks | undefined;
  afterAll(async () => {
    await second?.stop(2000);
    await first?.stop(2000);
    for (const store of stores) await dispose(store);
  });
  const open = async () => {
    const store = await backend.open();
    stores.push(store);
    return store;
  };

  /** One event, claimed with a lease of 1 ms, then claimed again by the same worker once that ran out. */
  async function claimedTwice(store: PayhooksDatabase, eventId: string): Promise<{ first: ClaimedEvent; second: ClaimedEvent }> {
    await putEvent(store, withOwnResource(exampleEvent('INVOICE_PAID', { eventId }), eventId));
    const [first] = await claimEvents(store, { workerId: WORKER, limit: 1, leaseMs: 1 });
    expect(first?.eventId).toBe(eventId);
    let second: ClaimedEvent | undefined;
    await waitFor(async () => {
      [second] = await claimEvents(store, { workerId: WORKER, limit: 1, leaseMs: 60_000 });
      return second !== undefined;
    }, 'the event to be claimed again once its lease ran out');
    expect(second!.attempt).toBe(2);
    expect(second!.leaseToken).not.toBe(first!.leaseToken);
    return { first: first!, second: second! };
  }

  describe.skipIf(!backend.available)('in the statements', () => {
    it("a late heartbeat and a late outcome under the old token change nothing; the holder's land", async () => {
      const store = await open();
      const { first, second } = await claimedTwice(store, 'evt_fenced_outcome');
      // The heartbeat of the run that lost its lease extends nothing; the holder's extends its own.
      expect([...(await extendLeases(store, WORKER, [first], 60_000))]).toEqual([]);
      expect([...(await extendLeases(store, WORKER, [second], 60_000))]).toEqual([
        [eventKey(second.account, second.eventId), second.leaseToken],
      ]);
      // Both runs' heartbeats in one statement (the lease keeper's, while the old run has not noticed): the key is
      // extended under the holder's token, which the old run's entry must not take for its own.
      const both = await extendLeases(store, WORKER, [first, second], 60_000);
      expect([...both]).toEqual([[eventKey(second.account, second.eventId), second.leaseToken]]);
      // The late run's completion mark and finish: both dropped (the owner alone, the same worker id, would pass).
      const late = await recordOutcomes(store, WORKER, [
        { kind: 'completed', account: first.account, eventId: first.eventId, handler: 'h', leaseToken: first.leaseToken },
        {
          kind: 'finished',
          account: first.account,
          eventId: first.eventId,
          status: 'dead',
          lastError: 'late',
          leaseToken: first.leaseToken,
        },
      ]);
      expect(late[1]).toBe(false);
      expect((await getEvent(store, first.eventId))?.status).toBe('processing');
      const marks = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(store.schema, 'handler_runs')}
        where event_id = ${first.eventId}`.execute(store.db);
      expect(marks.rows[0]?.n).toBe(0);
      // A late retry is dropped too.
      const retry = await recordOutcomes(store, WORKER, [
        {
          kind: 'retry',
          account: first.account,
          eventId: first.eventId,
          delayMs: 0,
          lastError: 'late',
          owed: null,
          leaseToken: first.leaseToken,
        },
      ]);
      expect(retry).toEqual([false]);
      // The holder's outcome lands.
      const held = await recordOutcomes(store, WORKER, [
        { kind: 'completed', account: second.account, eventId: second.eventId, handler: 'h', leaseToken: second.leaseToken },
        {
          kind: 'finished',
          account: second.account,
          eventId: second.eventId,
          status: 'done',
          lastError: null,
          leaseToken: second.leaseToken,
        },
      ]);
      expect(held).toEqual([true, true]);
      const stored = await getEvent(store, first.eventId);
      expect(stored?.status).toBe('done');
      expect(stored?.lastError).toBeNull();
    });

    it("the lease keeper's heartbeat keeps the re-claimed event's entry and marks the old run's entry lost", async () => {
      const store = await open();
      const { first, second } = await claimedTwice(store, 'evt_fenced_keeper');
      const events = new WorkerEvents(silent);
      const fenced: string[] = [];
      events.on('write:fenced', ({ eventId, what }) => fenced.push(`${what}:${eventId}`));
      const keeper = new LeaseKeeper({ store, workerId: WORKER, leaseMs: 60_000, logger: silent, events });
      // The old run has not noticed yet (its lease, as it counts it, still holds): both entries are in hand.
      const now = Date.now();
      const old = keeper.add(first, now);
      const current = keeper.add(second, now - 30_000);
      expect(keeper.size).toBe(2);
      await keeper.heartbeat();
      expect(old.lost).toBe(true);
      expect(current.lost).toBe(false);
      expect(current.leaseUntil).toBeGreaterThanOrEqual(now + 60_000);
      expect(fenced).toEqual(['heartbeat:evt_fenced_keeper']);
      // The old run's forget leaves the current one's entry in hand.
      keeper.forget(first);
      expect(keeper.entries()).toEqual([current]);
    });

    it('a heartbeat that misses an event whose final outcome it raced is no fence: the outcome statement is the judge', async () => {
      const store = await open();
      await putEvent(store, withOwnResource(exampleEvent('INVOICE_PAID', { eventId: 'evt_raced' }), 'evt_raced'));
      await putEvent(store, withOwnResource(exampleEvent('INVOICE_PAID', { eventId: 'evt_taken' }), 'evt_taken'));
      const claimed = await claimEvents(store, { workerId: WORKER, limit: 2, leaseMs: 60_000 });
      const raced = claimed.find((event) => event.eventId === 'evt_raced')!;
      const taken = claimed.find((event) => event.eventId === 'evt_taken')!;
      const events = new WorkerEvents(silent);
      const fenced: string[] = [];
      events.on('write:fenced', ({ eventId, what }) => fenced.push(`${what}:${eventId}`));
      const keeper = new LeaseKeeper({ store, workerId: WORKER, leaseMs: 60_000, logger: silent, events });
      const racedEntry = keeper.add(raced, Date.now());
      const takenEntry = keeper.add(taken, Date.now());
      // evt_raced: its final outcome handed over and committed before the heartbeat reads the queue, the keeper not yet
      // told (the outcome writer forgets the entry once its statement answers). evt_taken: its row given to another
      // worker, no outcome of this run's pending: a real fence.
      racedEntry.recording = Promise.resolve();
      const finished = { kind: 'finished', account: raced.account, eventId: raced.eventId, status: 'done', lastError: null } as const;
      expect(await recordOutcomes(store, WORKER, [{ ...finished, leaseToken: raced.leaseToken }])).toEqual([true]);
      await sql`update ${sql.id(store.schema, 'inbox_queue')} set lease_owner = 'host:2', lease_token = lease_token + 1000
                 where event_id = ${taken.eventId}`.execute(store.db);
      await keeper.heartbeat();
      expect(fenced).toEqual(['heartbeat:evt_taken']);
      expect(takenEntry.lost).toBe(true);
      expect(racedEntry.lost).toBe(false);
    });

    it("a late effect step is not started nor completed over the holder's; a late transaction rolls back", async () => {
      const store = await open();
      const { first, second } = await claimedTwice(store, 'evt_fenced_step');
      const step = { account: first.account, eventId: first.eventId, handler: 'fees', step: 'charge' };
      const intent = { ...step, receivedAt: first.receivedAt, idempotencyKey: 'ph_k', idempotent: false };
      const calls: string[] = [];
      // The late run may not start the step: nothing is written, and it does not call it.
      const late = await beginStep(store, { ...intent, attempt: first.attempt, leaseToken: first.leaseToken });
      expect(late).toEqual({ action: 'fenced' });
      const rows = async () =>
        (
          await sql<{ state: string; attempt: number }>`select state, attempt from ${sql.id(store.schema, 'effect_steps')}
            where event_id = ${first.eventId}`.execute(store.db)
        ).rows;
      expect(await rows()).toEqual([]);
      // The holder starts it, calls it, completes it.
      const held = await beginStep(store, { ...intent, attempt: second.attempt, leaseToken: second.leaseToken });
      expect(held).toMatchObject({ action: 'run' });
      calls.push('holder');
      // A late completion (a run that called it before losing its lease, say) does not land over the holder's start.
      expect(await completeStep(store, { ...step, leaseToken: first.leaseToken }, '"late"')).toBe(false);
      expect(await rows()).toEqual([{ state: 'started', attempt: 2 }]);
      expect(await completeStep(store, { ...step, leaseToken: second.leaseToken }, '"ok"')).toBe(true);
      expect(await rows()).toEqual([{ state: 'completed', attempt: 2 }]);
      expect(calls).toEqual(['holder']);
      // ctx.transaction's guard: under the old token the handler's transaction fails and rolls back.
      await sql`create table if not exists ${sql.id(store.schema, 'fenced_writes')} (id text primary key)`.execute(store.db);
      const lateTrx = await store.db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into ${sql.id(store.schema, 'fenced_writes')} values ('late')`.execute(trx);
          await holdLeaseIn(trx, store.schema, first);
        })
        .catch((err: unknown) => err);
      expect(lateTrx).toBeInstanceOf(LeaseFencedError);
      expect((lateTrx as LeaseFencedError).what).toBe('transaction');
      await store.db.transaction().execute(async (trx) => {
        await sql`insert into ${sql.id(store.schema, 'fenced_writes')} values ('holder')`.execute(trx);
        await holdLeaseIn(trx, store.schema, second);
      });
      const written = await sql<{ id: string }>`select id from ${sql.id(store.schema, 'fenced_writes')} order by id`.execute(store.db);
      expect(written.rows.map((row) => row.id)).toEqual(['holder']);
    });
  });

  describe.skipIf(!backend.available)('in the worker', () => {
    it('a worker whose lease passed to another has its late effect step and outcome fenced; the effect happens once', {
      timeout: 60_000,
    }, async () => {
      const store = await open();
      const eventId = 'evt_fenced_worker';
      const effects: string[] = [];
      const fenced: WorkerEventMap['write:fenced'][] = [];
      let letGo!: () => void;
      const gate = new Promise<void>((resolve) => (letGo = resolve));
      let entered = false;
      // The first worker's handler waits (as a run cut off from the database would) before its effect step.
      // One slot, nothing prefetched: while its handler waits it claims nothing more (it would take the event back).
      first = createPayhooks({
        database: store,
        logger: silent,
        worker: { pollIntervalMs: 50, leaseMs: 60_000, concurrency: 1, maxPrefetch: 0 },
      });
      first.on('INVOICE_PAID', async (_event, ctx) => {
        entered = true;
        await gate;
        await ctx.effect('charge', () => void effects.push('first'));
      });
      first.events.on('write:fenced', (payload) => fenced.push(payload));
      await first.start();
      await putEvent(store, withOwnResource(exampleEvent('INVOICE_PAID', { eventId }), eventId));
      await waitFor(() => entered, 'the first worker to run the event');
      // Its lease runs out (a partition longer than the lease, compressed): the second worker claims the event.
      await sql`update ${sql.id(store.schema, 'inbox_queue')} set run_at = now() - interval '1 second' where event_id = ${eventId}`.execute(
        store.db,
      );
      second = createPayhooks({ database: store, logger: silent, worker: { pollIntervalMs: 50 } });
      second.on('INVOICE_PAID', async (_event, ctx) => {
        await ctx.effect('charge', () => void effects.push('second'));
      });
      await second.start();
      await waitFor(async () => (await getEvent(store, eventId))?.status === 'done', 'the second worker to finish the event');
      // The first one comes back: its effect step and then its outcome are dropped, each told.
      letGo();
      await waitFor(() => fenced.some((f) => f.what === 'outcome'), 'the late outcome to be fenced');
      expect(fenced.map((f) => f.what)).toEqual(['effect-step', 'outcome']);
      expect(fenced[0]).toMatchObject({ eventId, handler: expect.any(String) });
      expect(effects).toEqual(['second']);
      const stored = await getEvent(store, eventId);
      expect(stored?.status).toBe('done');
      expect(stored?.lastError).toBeNull();
    });
  });
});
