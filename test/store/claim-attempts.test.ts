import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { type ClaimedEvent, claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { putEvent } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

/** Claims until something is claimed (a lease has to run out first), for at most 5 s. */
async function claimWhenDue(claim: () => Promise<ClaimedEvent[]>): Promise<ClaimedEvent[]> {
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    const claimed = await claim();
    if (claimed.length > 0) return claimed;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('nothing became due within 5 s');
}

describe.each(backends)('attempts counted at claim ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)('an event whose process dies at every attempt is buried as dead after maxAttempts claims', async () => {
    store = await backend.open();
    const db = store;
    await putEvent(db, exampleEvent('INVOICE_PAID', { eventId: 'evt_killer' }));
    const buried: { eventId: string; attempts: number }[] = [];
    const claim = () => claimEvents(db, { workerId: 'doomed', limit: 5, leaseMs: 50, maxAttempts: 3, onBuried: (e) => buried.push(e) });
    const row = () => db.db.selectFrom('inbox_event_states').selectAll().where('event_id', '=', 'evt_killer').executeTakeFirstOrThrow();

    for (let attempt = 1; attempt <= 3; attempt++) {
      // The lease of the previous claim must expire first: the process "died" without recording anything.
      const claimed = await claimWhenDue(claim);
      expect(claimed.map((e) => [e.eventId, e.attempt])).toEqual([['evt_killer', attempt]]);
    }
    await waitFor(
      async () => {
        expect(await claim()).toEqual([]);
        return (await row()).status === 'dead';
      },
      'the event to be buried',
      5000,
    );
    const dead = await row();
    expect(dead.attempts).toBe(3);
    expect(dead.lease_owner).toBeNull();
    expect(dead.last_error).toMatch(/died .* after 3 claims of 3 allowed/);
    expect(buried).toEqual([{ account: 'default', eventId: 'evt_killer', eventType: 'INVOICE_PAID', attempts: 3 }]);
    expect(await claim()).toEqual([]);
  });

  it.skipIf(!backend.available)('a pending event under the limit is claimed as before, and without a limit nothing is buried', async () => {
    store = await backend.open();
    const db = store;
    await putEvent(db, exampleEvent('INVOICE_PAID', { eventId: 'evt_ok' }));
    for (let attempt = 1; attempt <= 4; attempt++) {
      const claimed = await claimWhenDue(() => claimEvents(db, { workerId: 'w', limit: 1, leaseMs: 30 }));
      expect(claimed[0]?.attempt).toBe(attempt);
    }
  });
});
