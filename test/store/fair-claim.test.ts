// The claim shares the worker between accounts (migrations/018, claim_events): each account with due work is offered
// its share of a claim (by worker_share), in turns round a ring when there are more accounts than room, and room left
// over is filled from every account's due events, so one account's backlog neither starves another nor idles a worker.
// Per-resource order is per account: one resource key in two accounts is two resources.
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { type AccountRecord, ensureAccounts } from '../../src/store/accounts.js';
import { type ClaimedEvent, claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { type IncomingEvent, storeEvents } from '../../src/store/inbox.js';
import { recordOutcomes } from '../../src/store/outcomes.js';
import { backends, dispose } from '../helpers/stores.js';

/** An INVOICE_PAID of `account`, with its own resource key unless `resourceKey` is given. */
function incoming(account: string, eventId: string, resourceKey: string | null = null): IncomingEvent {
  return {
    account,
    eventId,
    eventType: 'INVOICE_PAID',
    resourceKey,
    rawBody: JSON.stringify({ ...exampleEvent('INVOICE_PAID'), eventId }),
    headers: {},
  };
}

/**
 * `count` events of `account` named `<account>_00000`…, stored in batches of 1,000 as the receiver's group commit stores
 * them (a batch in the order of its ids, which the padding makes the order of their numbers).
 */
async function queue(store: PayhooksDatabase, account: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - start) }, (_, n) =>
      incoming(account, `${account}_${String(start + n).padStart(5, '0')}`),
    );
    await storeEvents(store, batch);
  }
}

const claim = (store: PayhooksDatabase, limit: number, workerId = 'w'): Promise<ClaimedEvent[]> =>
  claimEvents(store, { workerId, limit, leaseMs: 60_000 });

/** How many events of each account a claim returned. */
function perAccount(claimed: readonly ClaimedEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const event of claimed) counts[event.account] = (counts[event.account] ?? 0) + 1;
  return counts;
}

describe.each(backends)('the fair claim ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });
  const open = async (accounts: AccountRecord[]) => {
    store = await backend.open();
    await ensureAccounts(store, accounts);
    return store;
  };

  it.skipIf(!backend.available)(
    "an account's one event behind 10,000 of another's is in the first claim of 10",
    { timeout: 180_000 },
    async () => {
      const db = await open([{ id: 'x' }, { id: 'y' }]);
      await queue(db, 'x', 10_000);
      await storeEvents(db, [incoming('y', 'y_only')]);
      const first = await claim(db, 10);
      expect(first).toHaveLength(10);
      expect(first.filter((event) => event.account === 'y').map((event) => event.eventId)).toEqual(['y_only']);
      // The rest of the claim is x's, oldest first.
      expect(first.filter((event) => event.account === 'x').map((event) => event.eventId)).toEqual(
        Array.from({ length: 9 }, (_, n) => `x_0000${n}`),
      );
    },
  );

  it.skipIf(!backend.available)(
    "200 accounts with due work and claims of 10: every account's turn comes within ceil(200 / 10) = 20 claims",
    { timeout: 180_000 },
    async () => {
      const ids = Array.from({ length: 200 }, (_, n) => `acct-${String(n).padStart(3, '0')}`);
      const db = await open(ids.map((id) => ({ id })));
      // Each has more due events than the claims below can take of it, so it has work at every turn.
      await storeEvents(
        db,
        ids.flatMap((id) => [incoming(id, `${id}_0`), incoming(id, `${id}_1`)]),
      );
      const unseen = new Set(ids);
      let claims = 0;
      while (unseen.size > 0 && claims < 40) {
        const claimed = await claim(db, 10);
        claims++;
        // Every claim is full, one event per account: 200 accounts share it equally, a share of at least 1 each.
        expect(claimed).toHaveLength(10);
        expect(new Set(claimed.map((event) => event.account)).size).toBe(10);
        for (const event of claimed) unseen.delete(event.account);
      }
      expect([...unseen]).toEqual([]);
      // Not fewer either: at most 10 accounts a claim, so 200 cannot all be served in fewer than 20.
      expect(claims).toBe(20);
    },
  );

  it.skipIf(!backend.available)('worker shares of 3 and 1 split a claim 3:1 while both have work', { timeout: 120_000 }, async () => {
    const db = await open([
      { id: 'big', workerShare: 3 },
      { id: 'small', workerShare: 1 },
    ]);
    // small's events queued first: the split is the shares', not the queue's order.
    await queue(db, 'small', 100);
    await queue(db, 'big', 100);
    expect(perAccount(await claim(db, 12))).toEqual({ big: 9, small: 3 });
    expect(perAccount(await claim(db, 12))).toEqual({ big: 9, small: 3 });
    expect(perAccount(await claim(db, 8))).toEqual({ big: 6, small: 2 });
  });

  it.skipIf(!backend.available)(
    "a large share takes no other account's turn: with 30 accounts and claims of 10, each is served within 3 claims",
    { timeout: 180_000 },
    async () => {
      // a00 weighs 100 against 1 each and has a backlog queued before everyone's; its share alone would fill the
      // claim. Before the fix, the accounts after it in its turn were cut from the claim, at the same place of the
      // ring every time round: a09 waited 19 claims.
      const ids = Array.from({ length: 30 }, (_, n) => `a${String(n).padStart(2, '0')}`);
      const db = await open(ids.map((id) => ({ id, workerShare: id === 'a00' ? 100 : 1 })));
      await queue(db, 'a00', 1000);
      await storeEvents(
        db,
        ids.slice(1).flatMap((id) => [incoming(id, `${id}_0`), incoming(id, `${id}_1`)]),
      );
      const unseen = new Set(ids);
      let claims = 0;
      while (unseen.size > 0 && claims < 30) {
        const claimed = await claim(db, 10);
        claims++;
        expect(claimed).toHaveLength(10);
        for (const event of claimed) unseen.delete(event.account);
      }
      expect([...unseen]).toEqual([]);
      expect(claims).toBeLessThanOrEqual(Math.ceil(30 / 10));
    },
  );

  it.skipIf(!backend.available)(
    'as many accounts as the claim has room for, one of them weighing 1,000: every one is in every claim',
    async () => {
      // Ten accounts and claims of 10: every claim starts at the same place of the ring, so an account cut once was
      // cut every time.
      const ids = Array.from({ length: 10 }, (_, n) => `b${n}`);
      const db = await open(ids.map((id) => ({ id, workerShare: id === 'b0' ? 1000 : 1 })));
      await queue(db, 'b0', 100);
      for (const id of ids.slice(1)) await queue(db, id, 5);
      for (let n = 0; n < 3; n++) {
        const claimed = perAccount(await claim(db, 10));
        expect(Object.keys(claimed).sort()).toEqual(ids);
        expect(Object.values(claimed).reduce((sum, count) => sum + count, 0)).toBe(10);
      }
    },
  );

  it.skipIf(!backend.available)(
    'work-conserving: room an account leaves unused goes to the others, and a claim comes back full',
    async () => {
      const db = await open([{ id: 'few' }, { id: 'many' }]);
      await queue(db, 'many', 50);
      await queue(db, 'few', 2);
      const first = await claim(db, 10);
      expect(first).toHaveLength(10);
      expect(perAccount(first)).toEqual({ few: 2, many: 8 });
      // few has nothing left: many takes whole claims.
      expect(perAccount(await claim(db, 10))).toEqual({ many: 10 });
      // And a claim larger than what is due takes all of it.
      expect(await claim(db, 100)).toHaveLength(50 - 18);
      expect(await claim(db, 10)).toEqual([]);
    },
  );

  it.skipIf(!backend.available)(
    'one resource key in two accounts runs in both at once; within one account, one event at a time in order',
    async () => {
      const db = await open([{ id: 'a' }, { id: 'b' }]);
      const key = 'invoice:inv_shared';
      await storeEvents(db, [
        incoming('a', 'evt_1', key),
        incoming('b', 'evt_1', key),
        incoming('a', 'evt_2', key),
        incoming('b', 'evt_2', key),
      ]);
      const first = await claim(db, 10);
      // Two leases on the same key at once, one per account.
      expect(first.map((event) => [event.account, event.eventId]).sort()).toEqual([
        ['a', 'evt_1'],
        ['b', 'evt_1'],
      ]);
      // While they run, neither account's next event of the key is due (another worker's claim included).
      expect(await claim(db, 10, 'w2')).toEqual([]);
      await recordOutcomes(db, 'w', [{ kind: 'finished', account: 'a', eventId: 'evt_1', status: 'done', lastError: null }]);
      // a's outcome frees a's next one only: b's first still runs.
      expect((await claim(db, 10, 'w2')).map((event) => [event.account, event.eventId])).toEqual([['a', 'evt_2']]);
      await recordOutcomes(db, 'w', [{ kind: 'finished', account: 'b', eventId: 'evt_1', status: 'done', lastError: null }]);
      expect((await claim(db, 10, 'w2')).map((event) => [event.account, event.eventId])).toEqual([['b', 'evt_2']]);
    },
  );
});
