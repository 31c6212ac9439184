import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminApi, createAdminApi } from '../../src/console/admin-api.js';
import { exampleEvent } from '../../src/events/index.js';
import { createReceiver, type ReceiveRequest, type Receiver } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { getQuarantined } from '../../src/store/quarantine.js';
import { errorMessage } from '../helpers/error-body.js';
import { backends, dispose } from '../helpers/stores.js';

const scheme = createDefaultScheme({ secrets: 'quarantine-race-secret' });
const TOKEN = 'R7vKq2-Lx9WmT4pZbN8cYd3HfJs6GaE1uQo5Vi0';
const ROUNDS = 50;
const invoice = exampleEvent('INVOICE_PAID');

/** A signed delivery quarantined for its resource id (over the index limit), which `{ unordered: true }` releases. */
function delivery(eventId: string): ReceiveRequest {
  const rawBody = Buffer.from(
    JSON.stringify({ eventId, eventType: 'INVOICE_PAID', data: { ...invoice.data, invoiceId: 'i'.repeat(400) } }),
  );
  return { method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody };
}

// Issue 46: a release and a discard of one held delivery at the same moment both succeeded; the event was stored while
// the row ended discarded, and the sender's repeat was answered 400 although the event existed.
describe.each(backends.filter((backend) => backend.available))('release and discard of one held delivery at once ($name)', (backend) => {
  let store: PayhooksDatabase;
  let receiver: Receiver;
  let api: AdminApi;
  beforeAll(async () => {
    store = await backend.open();
    receiver = createReceiver({ store, scheme, logger: pino({ level: 'silent' }) });
    api = createAdminApi({ store, token: TOKEN, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await dispose(store);
  });

  /** `start` called after `roundTrips` queries, one after another: a head start for the other contender, not a timer. */
  const behind = async <T>(roundTrips: number, start: () => Promise<T>): Promise<T> => {
    for (let i = 0; i < roundTrips; i += 1) await sql`select 1`.execute(store.db);
    return start();
  };
  const post = async (path: string, body: string) => {
    const answer = await api.handle({ method: 'POST', url: path, headers: { authorization: `Bearer ${TOKEN}` }, body });
    return { status: answer.status, body: JSON.parse(answer.body) as unknown };
  };

  it(`${ROUNDS} times: exactly one succeeds, the other answers 409 saying what happened, and a repeat gets the row's answer`, {
    timeout: 120_000,
  }, async () => {
    const won = { released: 0, discarded: 0 };
    for (let round = 0; round < ROUNDS; round += 1) {
      const eventId = `evt_race_${round}`;
      const first = await receiver.receive(delivery(eventId));
      expect(first.status).toBe(400);
      const id = /kept in quarantine as #(\d+)\./.exec(errorMessage(JSON.parse(first.body)))![1]!;

      const release = () => post(`/admin/api/quarantine/${id}/release`, '{"unordered":true}');
      const discard = () => post(`/admin/api/quarantine/${id}/discard`, '{}');
      // Each starts first in half the rounds, the other 0 to 5 database round trips later: started together, the
      // discard (one statement) always beat the release (a read, then its transaction), and the rounds a release
      // wins would go untested.
      const later = Math.floor(round / 2) % 6;
      const [released, discarded] =
        round % 2 === 0
          ? await Promise.all([release(), behind(later, discard)])
          : (await Promise.all([discard(), behind(later, release)])).reverse();
      expect([released!.status, discarded!.status].sort(), `round ${round}`).toEqual([200, 409]);

      const row = await getQuarantined(store, id);
      const event = await getEvent(store, eventId);
      const repeat = await receiver.receive(delivery(eventId));
      if (released!.status === 200) {
        won.released += 1;
        expect(released!.body).toEqual({ eventId, queued: true, droppedHeaders: [] });
        expect(errorMessage(discarded!.body)).toBe(
          `payhooks: Quarantined delivery #${id} was already released at ${row!.resolvedAt!.toISOString()} as event "${eventId}"; it was not discarded.`,
        );
        expect(row).toMatchObject({ state: 'released', releasedEventId: eventId });
        expect(row!.rawBody.byteLength).toBeGreaterThan(0);
        expect(event?.eventId).toBe(eventId);
        expect({ status: repeat.status, body: JSON.parse(repeat.body) }).toEqual({
          status: 200,
          body: { received: true, duplicate: true },
        });
      } else {
        won.discarded += 1;
        expect(discarded!.body).toEqual({ discarded: id });
        expect(errorMessage(released!.body)).toBe(
          `payhooks: Quarantined delivery #${id} was already discarded at ${row!.resolvedAt!.toISOString()}: nothing was stored.`,
        );
        expect(row).toMatchObject({ state: 'discarded', releasedEventId: null });
        expect(row!.rawBody.byteLength).toBe(0);
        // The release that lost stored nothing: no event, and no ledger entry that would make the sender's next
        // delivery of a corrected body a duplicate.
        expect(event).toBeUndefined();
        const ledger = await sql`select 1 from ${sql.id(store.schema, 'event_ledger')} where event_id = ${eventId}`.execute(store.db);
        expect(ledger.rows).toEqual([]);
        // What docs/receiver.md promises after a discard: the same 400 as before.
        expect(repeat).toEqual(first);
      }
      // The repeat was counted on the same row, not kept again.
      expect(row!.deliveries).toBe(1);
      expect((await getQuarantined(store, id))?.deliveries).toBe(2);
    }
    expect(won.released + won.discarded).toBe(ROUNDS);
    // Both outcomes were checked, not only the one that wins a plain race.
    expect(won.released, JSON.stringify(won)).toBeGreaterThan(0);
    expect(won.discarded, JSON.stringify(won)).toBeGreaterThan(0);
  });
});
