// The receiver's store and the worker's claim and outcome statements are prepared once per connection (parsed once) and
// planned for each batch;
// behind a pooler that loses a connection's prepared statements, they are sent unprepared and nothing fails.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimEvents } from '../../src/store/claim.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { migrate } from '../../src/store/migrate.js';
import { recordOutcomes, type Outcome } from '../../src/store/outcomes.js';
import { putEvents, statuses } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';

// Batches of 3: the 20 events take 7 claims, past the 5 after which PostgreSQL would otherwise try a generic plan.
const CLAIM = { workerId: 'w1', limit: 3, leaseMs: 60_000 };

/** The prepared statements of the pool's one connection: what payhooks prepared there, and how each was planned. */
async function prepared(store: PayhooksDatabase) {
  const { rows } = await sql<{ statement: string; generic_plans: string; custom_plans: string }>`
    select statement, generic_plans, custom_plans from pg_prepared_statements where statement like '/* payhooks:prepared */%'
  `.execute(store.db);
  return rows.map((row) => ({
    // The claim is a function (migrations/015; `claim_events_single` with one account); the others open with their
    // first CTE.
    kind: /"(claim_events\w*)"\(/.exec(row.statement)?.[1] ?? /with (\w+) as/.exec(row.statement)?.[1],
    generic: Number(row.generic_plans),
    custom: Number(row.custom_plans),
  }));
}

/** Claims a batch and records each event done, as the worker does; resolves to the ids claimed. */
async function claimAndFinish(store: PayhooksDatabase): Promise<string[]> {
  const claimed = await claimEvents(store, CLAIM);
  const outcomes: Outcome[] = claimed.flatMap((event): Outcome[] => [
    { kind: 'completed', account: event.account, eventId: event.eventId, handler: 'h' },
    { kind: 'finished', account: event.account, eventId: event.eventId, status: 'done', lastError: null },
  ]);
  expect(await recordOutcomes(store, CLAIM.workerId, outcomes)).toEqual(outcomes.map(() => true));
  return claimed.map((event) => event.eventId);
}

describe.skipIf(!pgUrl)('prepared statements (PostgreSQL)', () => {
  async function openStore(): Promise<PayhooksDatabase> {
    // One connection, so that every statement and the check of pg_prepared_statements share a session.
    const store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('prepared'), poolSize: 1 });
    await migrate(store);
    await ensureHistoryPartitions(store);
    const ids = Array.from({ length: 20 }, (_, n) => `evt_prep_${String(n).padStart(2, '0')}`);
    await putEvents(
      store,
      ids.map((eventId, n) => ({ eventId, eventType: 'INVOICE_PAID', data: { invoiceId: `inv_${n}`, amount: 100 } })),
    );
    return store;
  }

  it('prepares the store, the claim and the outcome once per connection, and plans each call for its own batch', async () => {
    const store = await openStore();
    try {
      const claimed = [];
      for (let round = 0; round < 7; round++) claimed.push(...(await claimAndFinish(store)));
      expect(claimed).toHaveLength(20);
      expect(Object.values(await statuses(store))).toEqual(Array(20).fill('done'));
      const statements = await prepared(store);
      // A plan made once for any batch cannot know how many rows its arrays hold: each call is planned on its own.
      expect(statements.sort((a, b) => String(a.kind).localeCompare(String(b.kind)))).toEqual([
        { kind: 'claim_events_single', generic: 0, custom: 7 },
        { kind: 'finished', generic: 0, custom: 7 },
        { kind: 'generic_checks', generic: 0, custom: 1 },
      ]);
      // The store lets its foreign keys' checks keep a generic plan for its own transaction only: the session still
      // plans each of its statements for its own values.
      const { rows } = await sql<{ mode: string }>`select current_setting('plan_cache_mode') as mode`.execute(store.db);
      expect(rows[0]!.mode).toBe('force_custom_plan');
    } finally {
      await dispose(store);
      await store.close();
    }
  });

  it('sends them unprepared, and loses nothing, once the connection no longer holds what it prepared (a pooler)', async () => {
    const store = await openStore();
    try {
      const first = await claimAndFinish(store);
      expect(await prepared(store)).toHaveLength(3);
      // What a transaction pooler does when it hands the session another server connection: the client still takes
      // its statements for prepared there, and the server no longer knows them.
      await sql`deallocate all`.execute(store.db);
      // The receiver's store first: the statement a pooler would fail first, had it carried a prepared one.
      await putEvents(store, [{ eventId: 'evt_prep_late', eventType: 'INVOICE_PAID', data: { invoiceId: 'inv_late', amount: 100 } }]);
      const rest = [];
      for (let round = 0; round < 6; round++) rest.push(...(await claimAndFinish(store)));
      expect(new Set([...first, ...rest]).size).toBe(21);
      expect(Object.values(await statuses(store))).toEqual(Array(21).fill('done'));
      // Not prepared again: the pooler would only lose them again.
      expect(await prepared(store)).toEqual([]);
    } finally {
      await dispose(store);
      await store.close();
    }
  });
});
