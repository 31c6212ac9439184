// Fairness between accounts (issue 48, docs/accounts.md#fairness): 200 accounts share a worker; one of them receives a
// burst of 20,000 events while the others receive a steady trickle. A worker's loop is played claim by claim (claim 10,
// record them done), with the trickle stored between claims, so that each trickle event's wait is counted in claims,
// which no machine's speed changes, and in milliseconds, which is reported.
import { afterEach, describe, expect, it } from 'vitest';
import { ensureAccounts } from '../../src/store/accounts.js';
import { claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { type IncomingEvent, storeEvents } from '../../src/store/inbox.js';
import { recordOutcomes } from '../../src/store/outcomes.js';
import { backends, dispose } from '../helpers/stores.js';

const ACCOUNTS = 200;
const BURST = 20_000;
const LIMIT = 10;
/** Claims played in each phase; the trickle stores a few events before each. */
const CLAIMS = 150;
/** The bound docs/accounts.md states: every account's turn within ceil(accounts / limit) claims. */
const BOUND = Math.ceil(ACCOUNTS / LIMIT);

const accountId = (n: number) => `acct-${String(n).padStart(3, '0')}`;

function event(account: string, eventId: string): IncomingEvent {
  const rawBody = JSON.stringify({ eventId, eventType: 'CUSTOMER_UPDATED', data: { id: eventId } });
  // No resource key: the order of a resource is not what this test is about.
  return { account, eventId, eventType: 'CUSTOMER_UPDATED', resourceKey: null, rawBody, headers: {} };
}

/** The p-th percentile of `values` (nearest rank). */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

interface PhaseResult {
  /** Each trickle event's wait, in claims from its storing to the claim that took it. */
  claimsWaited: number[];
  msWaited: number[];
  /** Trickle events stored in the phase that were never claimed in it. */
  unclaimed: number;
  /** Claims that came back with all the room they were given. */
  fullClaims: number;
}

/**
 * Plays `CLAIMS` claims of a worker with room for `LIMIT`: before each, three trickle events of the accounts next in
 * turn are stored; every claimed event is recorded done at once.
 */
async function playPhase(store: PayhooksDatabase, phase: string): Promise<PhaseResult> {
  const storedAt = new Map<string, { claim: number; ms: number }>();
  const claimsWaited: number[] = [];
  const msWaited: number[] = [];
  let next = 1;
  let fullClaims = 0;
  for (let claim = 0; claim < CLAIMS; claim++) {
    const trickle = [0, 1, 2].map(() => {
      const account = accountId(1 + (next++ % (ACCOUNTS - 1)));
      return event(account, `${phase}_${claim}_${account}`);
    });
    await storeEvents(store, trickle);
    for (const e of trickle) storedAt.set(`${e.account}/${e.eventId}`, { claim, ms: performance.now() });
    const claimed = await claimEvents(store, { workerId: 'fair', limit: LIMIT, leaseMs: 60_000 });
    const now = performance.now();
    if (claimed.length === LIMIT) fullClaims++;
    for (const e of claimed) {
      const stored = storedAt.get(`${e.account}/${e.eventId}`);
      if (!stored) continue;
      claimsWaited.push(claim - stored.claim);
      msWaited.push(now - stored.ms);
      storedAt.delete(`${e.account}/${e.eventId}`);
    }
    await recordOutcomes(
      store,
      'fair',
      claimed.map((e) => ({ kind: 'finished' as const, account: e.account, eventId: e.eventId, status: 'done' as const, lastError: null })),
    );
  }
  return { claimsWaited, msWaited, unclaimed: storedAt.size, fullClaims };
}

const postgres = backends.filter((backend) => backend.name === 'postgres');

describe.each(postgres)('the fair claim with 200 accounts ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    "one account's burst of 20,000 at most doubles the others' p99 wait, and no account waits past the bound",
    async () => {
      const db = await backend.open();
      store = db;
      await ensureAccounts(
        db,
        Array.from({ length: ACCOUNTS }, (_, n) => ({ id: accountId(n) })),
      );

      const calm = await playPhase(db, 'calm');
      const burst = Array.from({ length: BURST }, (_, n) => event(accountId(0), `burst_${n}`));
      for (let i = 0; i < burst.length; i += 2000) await storeEvents(db, burst.slice(i, i + 2000));
      const busy = await playPhase(db, 'busy');

      const report = {
        calm: { p99Claims: percentile(calm.claimsWaited, 99), p99Ms: Math.round(percentile(calm.msWaited, 99)) },
        busy: { p99Claims: percentile(busy.claimsWaited, 99), p99Ms: Math.round(percentile(busy.msWaited, 99)) },
      };
      console.log(`fairness, 200 accounts, burst of ${BURST} in one: ${JSON.stringify(report)}`);

      // Nothing compared is nothing proved: both phases claimed their trickle.
      expect(calm.claimsWaited.length).toBeGreaterThan(CLAIMS * 2);
      expect(busy.claimsWaited.length).toBeGreaterThan(CLAIMS * 2);
      // No idle room while the burst waited: every claim of the busy phase came back full.
      expect(busy.fullClaims).toBe(CLAIMS);
      // The bound, for every trickle event of the busy phase, and none left behind but the last claims' own.
      expect(Math.max(...busy.claimsWaited)).toBeLessThanOrEqual(BOUND);
      expect(busy.unclaimed).toBeLessThanOrEqual(3 * BOUND);
      // At most doubled: in claims (what the claim decides), with a floor of one claim for a calm p99 of 0.
      expect(report.busy.p99Claims).toBeLessThanOrEqual(2 * Math.max(1, report.calm.p99Claims));
    },
    180_000,
  );

  it.skipIf(!backend.available)("an account with one due event behind another's 10,000 is claimed in the next claim", async () => {
    const db = await backend.open();
    store = db;
    await ensureAccounts(db, [{ id: 'big' }, { id: 'small' }]);
    const big = Array.from({ length: 10_000 }, (_, n) => event('big', `big_${n}`));
    for (let i = 0; i < big.length; i += 2000) await storeEvents(db, big.slice(i, i + 2000));
    await storeEvents(db, [event('small', 'only_one')]);
    const claimed = await claimEvents(db, { workerId: 'fair', limit: LIMIT, leaseMs: 60_000 });
    expect(claimed).toHaveLength(LIMIT);
    expect(claimed.filter((e) => e.account === 'small').map((e) => e.eventId)).toEqual(['only_one']);
    expect(claimed.filter((e) => e.account === 'big')).toHaveLength(LIMIT - 1);
  });
});
