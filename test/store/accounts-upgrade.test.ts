// The upgrade to accounts (migrations/018): a single-account installation at the schema of 017, holding events in
// every state, their outcomes and attempts, an effect step in flight and a quarantined delivery, is migrated; every row
// is then the default account's and keeps working with no configuration change. The old state is written with the
// old migrations and raw SQL of their shape, as the code of before 018 left it (today's store code writes the account).
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createReceiver } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { DEFAULT_ACCOUNT } from '../../src/store/accounts.js';
import { claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { listSteps } from '../../src/store/effect-steps.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { storeEvents } from '../../src/store/inbox.js';
import { migrate, readMigrations } from '../../src/store/migrate.js';
import { recordOutcomes } from '../../src/store/outcomes.js';
import { listQuarantined } from '../../src/store/quarantine.js';
import { createEffectRunner, effectKey } from '../../src/worker/effects.js';
import { backends, dispose } from '../helpers/stores.js';

/** The tables 018 gives an account, each holding rows of the old state below. */
const KEYED_TABLES = ['event_ledger', 'inbox_events', 'inbox_queue', 'handler_runs', 'handler_attempts', 'effect_steps', 'quarantine'];

/** The idempotency key of a step as payhooks made it before 018 (src/worker/effects.ts at a11505d^), written out here. */
function keyBefore018(eventId: string, handler: string, step: string): string {
  return `ph_${createHash('sha256').update(`effect\u0000${eventId}\u0000${handler}\u0000${step}`).digest('hex').slice(0, 32)}`;
}

const body = (eventId: string) => JSON.stringify({ ...exampleEvent('INVOICE_PAID'), eventId });
const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** Writes, at the schema of 017, what a worker of then left: a done, a dead and a pending event (its step in flight). */
async function oldState(store: PayhooksDatabase): Promise<void> {
  await ensureHistoryPartitions(store);
  const t = (name: string) => sql.id(store.schema, name);
  const at = (await sql<{ at: Date }>`select now() - interval '1 minute' as at`.execute(store.db)).rows[0]!.at;
  for (const [eventId, status] of [
    ['evt_done', 'done'],
    ['evt_dead', 'dead'],
    ['evt_pending', 'pending'],
  ] as const) {
    await sql`insert into ${t('event_ledger')} (event_id, first_received_at, body_sha256)
              values (${eventId}, ${at}, decode(${sha256Hex(body(eventId))}, 'hex'))`.execute(store.db);
    // The insert trigger of then queues the pending one.
    await sql`insert into ${t('inbox_events')} (event_id, event_type, resource_key, raw_body, received_at, status, attempts,
                                                processed_at, last_error)
              values (${eventId}, 'INVOICE_PAID', ${`invoice:inv_${eventId}`}, ${body(eventId)}, ${at}, ${status},
                      ${status === 'pending' ? 0 : 1}, ${status === 'pending' ? null : at}, ${status === 'dead' ? 'boom' : null})`.execute(
      store.db,
    );
  }
  // The pending one's attempt 1 died while its step `charge` (idempotent) was under way.
  await sql`update ${t('inbox_queue')} set attempts = 1 where event_id = 'evt_pending'`.execute(store.db);
  await sql`insert into ${t('handler_runs')} (event_id, handler, received_at, outcome, error, attempt)
            values ('evt_done', 'billing', ${at}, 'done', null, 1), ('evt_dead', 'billing', ${at}, 'dead', 'boom', 1)`.execute(store.db);
  await sql`insert into ${t('handler_attempts')} (event_id, received_at, handler, attempt, ended_at, outcome, error)
            values ('evt_dead', ${at}, 'billing', 1, now(), 'failed', 'boom')`.execute(store.db);
  await sql`insert into ${t('effect_steps')} (event_id, received_at, handler, step, idempotency_key, idempotent, state, attempt, result)
            values ('evt_pending', ${at}, 'billing', 'charge', ${keyBefore018('evt_pending', 'billing', 'charge')}, true, 'started', 1, null),
                   ('evt_done', ${at}, 'billing', 'charge', ${keyBefore018('evt_done', 'billing', 'charge')}, true, 'completed', 1, '"ch_1"')`.execute(
    store.db,
  );
  await sql`insert into ${t('quarantine')} (kind, reason, raw_body, headers, body_sha256)
            values ('not_json', 'The body is not valid JSON.', decode('7b6e6f7065', 'hex'), '{}', decode(${sha256Hex('{nope')}, 'hex'))`.execute(
    store.db,
  );
}

/** Per table of {@link KEYED_TABLES}: how many rows, and (once 018 is applied) of which accounts. */
async function census(store: PayhooksDatabase, withAccount: boolean): Promise<Record<string, unknown>> {
  const counts: Record<string, unknown> = {};
  for (const table of KEYED_TABLES) {
    const t = sql.id(store.schema, table);
    counts[table] = withAccount
      ? (
          await sql<{ account: string; n: number }>`select account, count(*)::int as n from ${t} group by account order by account`.execute(
            store.db,
          )
        ).rows
      : (await sql<{ n: number }>`select count(*)::int as n from ${t}`.execute(store.db)).rows[0]!.n;
  }
  return counts;
}

describe.each(backends)('the upgrade to accounts ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'keeps every row as the default account’s, and the events, steps and ledger keep working',
    { timeout: 120_000 },
    async () => {
      store = await backend.open({ migrated: false });
      const db = store;
      const all = readMigrations();
      const before = all.filter((file) => file.name < '018');
      expect(before.map((file) => file.name).at(-1)).toBe('017_claim_without_jit.sql');
      await migrate(db, before);
      await oldState(db);
      const counts = await census(db, false);
      // Not vacuous: every keyed table holds rows of the old state.
      for (const table of KEYED_TABLES) expect(counts[table], table).toBeGreaterThan(0);

      expect((await migrate(db, all)).applied).toEqual(['018_accounts.sql']);
      expect(await census(db, true)).toEqual(
        Object.fromEntries(KEYED_TABLES.map((table) => [table, [{ account: DEFAULT_ACCOUNT, n: counts[table] }]])),
      );
      const { rows: states } = await sql<{ event_id: string; account: string; status: string }>`
      select event_id, account, status from ${sql.id(db.schema, 'inbox_event_states')} order by event_id`.execute(db.db);
      expect(states).toEqual([
        { event_id: 'evt_dead', account: 'default', status: 'dead' },
        { event_id: 'evt_done', account: 'default', status: 'done' },
        { event_id: 'evt_pending', account: 'default', status: 'pending' },
      ]);
      expect((await listQuarantined(db)).map((q) => [q.account, q.kind])).toEqual([['default', 'not_json']]);

      // The pending event is claimed (its second attempt), and its step in flight is called again with the key it was
      // first called with: the default account's keys are the keys of before.
      expect(effectKey(DEFAULT_ACCOUNT, 'evt_pending', 'billing', 'charge')).toBe(keyBefore018('evt_pending', 'billing', 'charge'));
      expect(effectKey('gym-north', 'evt_pending', 'billing', 'charge')).not.toBe(keyBefore018('evt_pending', 'billing', 'charge'));
      const claimed = await claimEvents(db, { workerId: 'w', limit: 10, leaseMs: 60_000 });
      expect(claimed.map((event) => [event.account, event.eventId, event.attempt])).toEqual([['default', 'evt_pending', 2]]);
      const event = claimed[0]!;
      const effect = createEffectRunner({
        store: db,
        account: event.account,
        eventId: event.eventId,
        receivedAt: event.receivedAt,
        handler: 'billing',
        attempt: event.attempt,
        signal: new AbortController().signal,
        logger: pino({ level: 'silent' }),
      });
      const calls: { key: string; calls: number }[] = [];
      await effect('charge', (step) => void calls.push({ key: step.key, calls: step.calls }));
      expect(calls).toEqual([{ key: keyBefore018('evt_pending', 'billing', 'charge'), calls: 2 }]);
      const done = await recordOutcomes(db, 'w', [
        { kind: 'completed', account: event.account, eventId: event.eventId, handler: 'billing' },
        { kind: 'finished', account: event.account, eventId: event.eventId, status: 'done', lastError: null },
      ]);
      expect(done).toEqual([true, true]);
      const steps = await listSteps(db, [
        { account: 'default', eventId: 'evt_pending' },
        { account: 'default', eventId: 'evt_done' },
      ]);
      expect(steps.map((step) => [step.eventId, step.state, step.idempotencyKey]).sort()).toEqual([
        ['evt_done', 'completed', keyBefore018('evt_done', 'billing', 'charge')],
        ['evt_pending', 'completed', keyBefore018('evt_pending', 'billing', 'charge')],
      ]);
      const { rows: after } = await sql<{ status: string }>`
      select status from ${sql.id(db.schema, 'inbox_event_states')} where event_id = 'evt_pending'`.execute(db.db);
      expect(after).toEqual([{ status: 'done' }]);

      // A stored eventId is still a duplicate: through the store with no account given, and through a receiver
      // configured as before (one scheme, the plain route).
      expect(
        await storeEvents(db, [
          { eventId: 'evt_done', eventType: 'INVOICE_PAID', resourceKey: null, rawBody: body('evt_done'), headers: {} },
        ]),
      ).toEqual([{ inserted: false, deliveries: 2 }]);
      const scheme = createDefaultScheme({ secrets: 'upgrade-secret' });
      const receiver = createReceiver({ store: db, scheme, logger: pino({ level: 'silent' }) });
      const rawBody = Buffer.from(body('evt_dead'), 'utf8');
      const answer = await receiver.receive({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) },
        rawBody,
      });
      expect([answer.status, JSON.parse(answer.body)]).toEqual([200, { received: true, duplicate: true }]);
      expect(await census(db, true)).toMatchObject({ inbox_events: [{ account: 'default', n: counts.inbox_events }] });
    },
  );
});
