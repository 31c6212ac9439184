// Accounts (issue 48): an eventId is unique per account, not across them; the database itself refuses rows for an
// account it was not told of; ensureAccounts keeps its table in step with the configuration; the receiver verifies a
// delivery with its route's account's secrets only and answers any other account's route as it answers an unknown one.
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createReceiver, type ReceiveRequest } from '../../src/receiver/receiver.js';
import { createDefaultScheme, type SignatureScheme } from '../../src/signature/index.js';
import { AccountIdError, ensureAccounts } from '../../src/store/accounts.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { type IncomingEvent, storeEvents } from '../../src/store/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

const schemeA = createDefaultScheme({ secrets: 'account-a-secret' });
const schemeB = createDefaultScheme({ secrets: 'account-b-secret' });

/** An INVOICE_PAID of `eventId` as the receiver would store it for `account` (undefined: the default account). */
function incoming(eventId: string, account?: string): IncomingEvent {
  return {
    account,
    eventId,
    eventType: 'INVOICE_PAID',
    resourceKey: null,
    rawBody: JSON.stringify({ ...exampleEvent('INVOICE_PAID'), eventId }),
    headers: {},
  };
}

/** A delivery of `eventId` signed with `scheme`, posted to the route of `account`. */
function delivery(scheme: SignatureScheme, eventId: string, account: string | undefined): ReceiveRequest {
  const rawBody = Buffer.from(JSON.stringify({ ...exampleEvent('INVOICE_PAID'), eventId }), 'utf8');
  return { method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody, account };
}

/** The stored copies of `eventId`, per account: how many history rows, and the ledger's delivery count. */
async function copiesOf(store: PayhooksDatabase, eventId: string): Promise<Record<string, { rows: number; deliveries: number }>> {
  const { rows } = await sql<{ account: string; rows: number; deliveries: number }>`
    select e.account, count(*)::int as rows, max(l.deliveries)::int as deliveries
      from ${sql.id(store.schema, 'inbox_events')} e
      join ${sql.id(store.schema, 'event_ledger')} l on l.event_id = e.event_id and l.account = e.account
     where e.event_id = ${eventId}
     group by e.account order by e.account`.execute(store.db);
  return Object.fromEntries(rows.map((row) => [row.account, { rows: row.rows, deliveries: row.deliveries }]));
}

/** The SQLSTATE a statement fails with, or 'ok'. */
async function sqlState(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
}

describe.each(backends)('accounts ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });
  const open = async () => {
    store = await backend.open();
    return store;
  };

  it.skipIf(!backend.available)(
    'storeEvents: the same eventId is stored once per account, and a repeat in one account is a duplicate',
    async () => {
      const db = await open();
      await ensureAccounts(db, [{ id: 'default' }, { id: 'a' }, { id: 'b' }]);
      const first = await storeEvents(db, [incoming('evt_same', 'a'), incoming('evt_same', 'b')]);
      expect(first.map((outcome) => outcome.inserted)).toEqual([true, true]);
      // Again for a, and once in a batch for b twice and for the default account (no account given) once.
      const again = await storeEvents(db, [incoming('evt_same', 'a')]);
      expect(again).toEqual([{ inserted: false, deliveries: 2 }]);
      const mixed = await storeEvents(db, [incoming('evt_same', 'b'), incoming('evt_same'), incoming('evt_same', 'b')]);
      expect(mixed.map((outcome) => outcome.inserted)).toEqual([false, true, false]);
      expect(await copiesOf(db, 'evt_same')).toEqual({
        a: { rows: 1, deliveries: 2 },
        b: { rows: 1, deliveries: 3 },
        default: { rows: 1, deliveries: 1 },
      });
    },
  );

  it.skipIf(!backend.available)(
    'the receiver: one eventId to two accounts is two events, twice to one is one; another account’s signature or an unknown account is 404 and stores nothing',
    async () => {
      const db = await open();
      await ensureAccounts(db, [{ id: 'a' }, { id: 'b' }]);
      const receiver = createReceiver({ store: db, accounts: { a: schemeA, b: schemeB }, logger: pino({ level: 'silent' }) });
      const answer = async (request: ReceiveRequest) => {
        const response = await receiver.receive(request);
        return { status: response.status, body: JSON.parse(response.body) as unknown };
      };

      expect(await answer(delivery(schemeA, 'evt_same', 'a'))).toEqual({ status: 200, body: { received: true } });
      expect(await answer(delivery(schemeB, 'evt_same', 'b'))).toEqual({ status: 200, body: { received: true } });
      expect(await answer(delivery(schemeA, 'evt_same', 'a'))).toEqual({ status: 200, body: { received: true, duplicate: true } });
      expect(await copiesOf(db, 'evt_same')).toEqual({ a: { rows: 1, deliveries: 2 }, b: { rows: 1, deliveries: 1 } });

      // Signed with a's secret, sent to b's route: refused, as a delivery to an account that does not exist is (whole
      // answers compared: status, headers and body), so that the answer does not tell which accounts exist.
      const crossed = await receiver.receive(delivery(schemeA, 'evt_crossed', 'b'));
      const unknownSignedA = await receiver.receive(delivery(schemeA, 'evt_unknown', 'nobody'));
      const unknownSignedB = await receiver.receive(delivery(schemeB, 'evt_unknown', 'nobody'));
      const unknownBadId = await receiver.receive(delivery(schemeA, 'evt_unknown', 'Not An Account'));
      expect(crossed.status).toBe(404);
      expect(JSON.parse(crossed.body)).toEqual({ error: { message: expect.any(String) } });
      for (const other of [unknownSignedA, unknownSignedB, unknownBadId]) expect(other).toEqual(crossed);
      // The plain route is the default account's, which is not configured here: the same answer.
      expect(await receiver.receive(delivery(schemeA, 'evt_unknown', undefined))).toEqual(crossed);
      expect(await copiesOf(db, 'evt_crossed')).toEqual({});
      expect(await copiesOf(db, 'evt_unknown')).toEqual({});
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(db.schema, 'event_ledger')}`.execute(db.db);
      expect(rows[0]!.n).toBe(2);
    },
  );

  it.skipIf(!backend.available)(
    'the database refuses an event of an account not in accounts (23503), by hand as from the store',
    async () => {
      const db = await open();
      // The partition of now, which the store makes on its first write (a statement by hand does not).
      await ensureHistoryPartitions(db);
      const ledger = sql.id(db.schema, 'event_ledger');
      const history = sql.id(db.schema, 'inbox_events');
      const ledgerRow = (account: string, eventId: string) =>
        sql`insert into ${ledger} (event_id, account, body_sha256) values (${eventId}, ${account}, '\\x00'::bytea)`.execute(db.db);
      const historyRow = (account: string, eventId: string) =>
        sql`insert into ${history} (event_id, account, event_type, raw_body, seq)
          values (${eventId}, ${account}, 'INVOICE_PAID', '{}', 1)`.execute(db.db);
      // Not vacuous: the same statements for a configured account go through.
      expect(await sqlState(() => ledgerRow('default', 'evt_known'))).toBe('ok');
      expect(await sqlState(() => historyRow('default', 'evt_known'))).toBe('ok');
      expect(await sqlState(() => ledgerRow('nobody', 'evt_stranger'))).toBe('23503');
      expect(await sqlState(() => historyRow('nobody', 'evt_stranger'))).toBe('23503');
      expect(await sqlState(() => storeEvents(db, [incoming('evt_stranger', 'nobody')]))).toBe('23503');
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${history} where event_id = 'evt_stranger'`.execute(db.db);
      expect(rows[0]!.n).toBe(0);
    },
  );

  it.skipIf(!backend.available)(
    'ensureAccounts adds the configured accounts, removes the unconfigured ones without events, and keeps those with',
    async () => {
      const db = await open();
      const accounts = async () =>
        (
          await sql<{
            id: string;
            worker_share: number;
          }>`select id, worker_share from ${sql.id(db.schema, 'accounts')} order by id`.execute(db.db)
        ).rows;
      expect(await accounts()).toEqual([{ id: 'default', worker_share: 1 }]);

      expect(await ensureAccounts(db, [{ id: 'gym-north' }, { id: 'gym_south', workerShare: 3 }, { id: 'default' }])).toEqual({
        added: ['gym-north', 'gym_south'],
        removed: [],
        retained: [],
      });
      expect(await accounts()).toEqual([
        { id: 'default', worker_share: 1 },
        { id: 'gym-north', worker_share: 1 },
        { id: 'gym_south', worker_share: 3 },
      ]);
      await storeEvents(db, [incoming('evt_north', 'gym-north')]);

      // gym-north holds an event: kept; default and gym_south hold none: removed. A share changed is written.
      expect(await ensureAccounts(db, [{ id: 'gym-west', workerShare: 2 }])).toEqual({
        added: ['gym-west'],
        removed: ['default', 'gym_south'],
        retained: ['gym-north'],
      });
      expect(await accounts()).toEqual([
        { id: 'gym-north', worker_share: 1 },
        { id: 'gym-west', worker_share: 2 },
      ]);
      // The removed are refused from now on; the retained one's events are all still there.
      expect(await sqlState(() => storeEvents(db, [incoming('evt_late', 'gym_south')]))).toBe('23503');
      expect(await copiesOf(db, 'evt_north')).toEqual({ 'gym-north': { rows: 1, deliveries: 1 } });

      // Idempotent, and a share change alone is no addition.
      expect(await ensureAccounts(db, [{ id: 'gym-west', workerShare: 5 }, { id: 'gym-north' }])).toEqual({
        added: [],
        removed: [],
        retained: [],
      });
      expect(await accounts()).toEqual([
        { id: 'gym-north', worker_share: 1 },
        { id: 'gym-west', worker_share: 5 },
      ]);
      await expect(ensureAccounts(db, [{ id: 'Gym North' }])).rejects.toThrow(AccountIdError);
      expect((await accounts()).map((row) => row.id)).toEqual(['gym-north', 'gym-west']);
    },
  );
});
