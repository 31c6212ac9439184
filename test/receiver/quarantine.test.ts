import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createReceiver, type ReceiveRequest, type Receiver } from '../../src/receiver/receiver.js';
import { discardQuarantined, QuarantineError, releaseQuarantined } from '../../src/receiver/release-quarantined.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { listHistoryPartitions } from '../../src/store/history-partitions.js';
import { getEvent } from '../../src/store/inbox.js';
import { countQuarantined, getQuarantined, listQuarantined, type QuarantineKind } from '../../src/store/quarantine.js';
import { backends, dispose } from '../helpers/stores.js';

const scheme = createDefaultScheme({ secrets: 'quarantine-secret' });
const invoice = exampleEvent('INVOICE_PAID');

function signed(body: string | Uint8Array, extra: Record<string, string> = {}): ReceiveRequest {
  const rawBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return { method: 'POST', headers: { 'content-type': 'application/json', ...extra, ...scheme.sign({ rawBody }) }, rawBody };
}

const envelope = (eventId: string, data: Record<string, unknown> = {}) =>
  JSON.stringify({ eventId, eventType: 'INVOICE_PAID', data: { ...invoice.data, ...data } });

/** Each kind of signed delivery that cannot be stored as an event, and whether the operator can release it. */
const unstorable: {
  what: string;
  request: () => ReceiveRequest;
  kind: QuarantineKind;
  message: RegExp;
  release?: { unordered?: boolean; eventId: string };
}[] = [
  {
    what: 'a body that is not UTF-8',
    request: () => signed(Uint8Array.from([0x7b, 0xff, 0xfe, 0x7d])),
    kind: 'not_utf8',
    message: /not valid UTF-8/,
  },
  { what: 'a body that is not JSON', request: () => signed('{"eventId": nope'), kind: 'not_json', message: /not valid JSON/ },
  {
    what: 'a U+0000 in the eventId',
    request: () => signed(JSON.stringify({ eventId: 'evt_\u0000x', eventType: 'INVOICE_PAID', data: invoice.data })),
    kind: 'not_envelope',
    message: /eventId: must not contain U\+0000/,
  },
  {
    what: 'an eventId of 3,000 characters (over the index limit)',
    request: () => signed(envelope('e'.repeat(3000))),
    kind: 'not_envelope',
    message: /eventId: must be at most 255 characters/,
  },
  {
    what: 'white space around the eventId',
    request: () => signed(envelope(' evt_ws ')),
    kind: 'not_envelope',
    message: /must not begin or end with white space/,
  },
  {
    what: 'a resource id of 3,000 characters',
    request: () => signed(envelope('evt_long_resource', { invoiceId: 'i'.repeat(3000) })),
    kind: 'unstorable_resource',
    message: /resource id this INVOICE_PAID names cannot be stored/,
    release: { unordered: true, eventId: 'evt_long_resource' },
  },
  {
    what: 'a U+0000 in a kept header (a framework that passes headers on unchecked)',
    request: () => signed(envelope('evt_bad_header'), { 'user-agent': 'agent\u0000x' }),
    kind: 'unstorable_event',
    message: /header "user-agent" holds U\+0000/,
    release: { eventId: 'evt_bad_header' },
  },
];

describe.each(backends.filter((backend) => backend.available))('quarantine ($name)', (backend) => {
  let store: PayhooksDatabase;
  let receiver: Receiver;
  beforeAll(async () => {
    store = await backend.open();
    receiver = createReceiver({ store, scheme, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await dispose(store);
  });

  it.each(unstorable)('$what: kept byte for byte, answered 400 the same way every time, then released or discarded', async (c) => {
    const request = c.request();
    const first = await receiver.receive(request);
    const second = await receiver.receive(c.request());
    expect(first.status).toBe(400);
    expect(second).toEqual(first);
    const message = JSON.parse(first.body).error.message as string;
    expect(message).toMatch(c.message);
    const id = /kept in quarantine as #(\d+)\./.exec(message)?.[1];
    expect(id).toBeDefined();

    const held = await getQuarantined(store, id!);
    expect(held).toMatchObject({ kind: c.kind, state: 'held', deliveries: 2 });
    expect(Buffer.from(held!.rawBody).equals(Buffer.from(request.rawBody as Uint8Array))).toBe(true);
    expect(held!.headers['x-webhook-signature']).toBe(request.headers['x-webhook-signature']);
    expect((await listQuarantined(store)).map((q) => q.id)).toContain(id);

    if (c.release) {
      if (c.release.unordered) {
        // Without the operator's choice the release is refused, says what would fix it, and the delivery stays held.
        await expect(releaseQuarantined(store, id!)).rejects.toThrow(/--unordered/);
        expect((await getQuarantined(store, id!))?.state).toBe('held');
      }
      const released = await releaseQuarantined(store, id!, { unordered: c.release.unordered });
      expect(released).toMatchObject({ eventId: c.release.eventId, queued: true });
      const event = await getEvent(store, c.release.eventId);
      expect(event).toMatchObject({ status: 'pending', resourceKey: c.release.unordered ? null : 'invoice:' + invoice.data.invoiceId });
      expect(event?.rawBody).toBe(Buffer.from(request.rawBody as Uint8Array).toString('utf8'));
      // A repeat of the released bytes is now a duplicate of the event, and is not kept again.
      const repeat = await receiver.receive(c.request());
      expect(repeat.status).toBe(200);
      expect(JSON.parse(repeat.body)).toEqual({ received: true, duplicate: true });
      expect(await getQuarantined(store, id!)).toMatchObject({ state: 'released', releasedEventId: c.release.eventId, deliveries: 3 });
      const again = `was already released at [-\\dT:.]+Z as event "${c.release.eventId}"`;
      await expect(releaseQuarantined(store, id!, { unordered: c.release.unordered })).rejects.toThrow(
        new RegExp(`${again}; it was not stored again\\.$`),
      );
      await expect(discardQuarantined(store, id!)).rejects.toThrow(new RegExp(`${again}; it was not discarded\\.$`));
      expect((await getQuarantined(store, id!))?.state).toBe('released');
    } else {
      await expect(releaseQuarantined(store, id!)).rejects.toThrow(QuarantineError);
      await expect(releaseQuarantined(store, id!)).rejects.toThrow(/still cannot be stored/);
      await discardQuarantined(store, id!);
      await expect(discardQuarantined(store, id!)).rejects.toThrow(/#\d+ was already discarded at [-\dT:.]+Z: nothing changed\.$/);
      await expect(releaseQuarantined(store, id!)).rejects.toThrow(/#\d+ was already discarded at [-\dT:.]+Z: nothing was stored\.$/);
      const after = await getQuarantined(store, id!);
      expect(after).toMatchObject({ state: 'discarded', deliveries: 2, reason: held!.reason });
      expect(after!.rawBody.byteLength).toBe(0);
      // Still answered as before, counted on the same row, not held again.
      expect(await receiver.receive(c.request())).toEqual(first);
      expect((await getQuarantined(store, id!))?.deliveries).toBe(3);
    }
    expect((await listQuarantined(store)).map((q) => q.id)).not.toContain(id);
  });

  it('a release on a database with no history partition yet makes one and stores the event with the transition', async () => {
    // Migrated and never opened by a worker: the event's insert fails inside the release's transaction, which is then
    // run again once the partition exists.
    const fresh = await backend.open();
    try {
      expect(await listHistoryPartitions(fresh)).toEqual([]);
      const lone = createReceiver({ store: fresh, scheme, logger: pino({ level: 'silent' }) });
      const answer = await lone.receive(signed(envelope('evt_no_partition', { invoiceId: 'i'.repeat(300) })));
      const id = /#(\d+)\./.exec(JSON.parse(answer.body).error.message)![1]!;
      expect(await releaseQuarantined(fresh, id, { unordered: true })).toMatchObject({ eventId: 'evt_no_partition', queued: true });
      expect((await getEvent(fresh, 'evt_no_partition'))?.status).toBe('pending');
      expect(await getQuarantined(fresh, id)).toMatchObject({ state: 'released', releasedEventId: 'evt_no_partition' });
      expect((await listHistoryPartitions(fresh)).length).toBeGreaterThan(0);
    } finally {
      await dispose(fresh);
    }
  });

  it('a release whose event Postgres still refuses leaves the row held: the transition is undone with the insert', async () => {
    const refusing = await backend.open();
    try {
      // Stands for any row Postgres refuses for its data (SQLSTATE class 22), as test/receiver/group-commit.test.ts.
      await sql`create function ${sql.id(refusing.schema, 'refuse_poison')}() returns trigger language plpgsql as $$
        begin if new.event_id = 'evt_poison' then raise exception 'poisoned row' using errcode = '22023'; end if; return new; end $$`.execute(
        refusing.db,
      );
      await sql`create trigger refuse_poison before insert on ${sql.id(refusing.schema, 'inbox_events')}
        for each row execute function ${sql.id(refusing.schema, 'refuse_poison')}()`.execute(refusing.db);
      const lone = createReceiver({ store: refusing, scheme, logger: pino({ level: 'silent' }) });
      const answer = await lone.receive(signed(envelope('evt_poison')));
      expect(answer.status).toBe(400);
      const id = /#(\d+)\./.exec(JSON.parse(answer.body).error.message)![1]!;
      await expect(releaseQuarantined(refusing, id)).rejects.toThrow(
        /still cannot be stored: Postgres refused its data \(SQLSTATE 22023\)/,
      );
      expect(await getQuarantined(refusing, id)).toMatchObject({ state: 'held', releasedEventId: null, resolvedAt: null });
      const ledger = await sql`select 1 from ${sql.id(refusing.schema, 'event_ledger')} where event_id = 'evt_poison'`.execute(refusing.db);
      expect(ledger.rows).toEqual([]);
      // Still held, so it can still be discarded.
      await discardQuarantined(refusing, id);
      expect((await getQuarantined(refusing, id))?.state).toBe('discarded');
    } finally {
      await dispose(refusing);
    }
  });

  it('holds at most maxQuarantined deliveries; past it answers 503 (the sender keeps it) and counts what it holds', async () => {
    const small = await backend.open();
    try {
      const capped = createReceiver({ store: small, scheme, maxQuarantined: 1, logger: pino({ level: 'silent' }) });
      expect((await capped.receive(signed('not json 1'))).status).toBe(400);
      const full = await capped.receive(signed('not json 2'));
      expect(full.status).toBe(503);
      expect(JSON.parse(full.body).error.message).toMatch(/quarantine is full/);
      // A repeat of what is held is still answered as before.
      expect((await capped.receive(signed('not json 1'))).status).toBe(400);
      expect(await countQuarantined(small)).toBe(1);
      await expect(releaseQuarantined(small, '999')).rejects.toThrow(/No quarantined delivery #999/);
    } finally {
      await dispose(small);
    }
  });
});

describe('maxQuarantined', () => {
  it('is checked when createPayhooks is called: a RangeError names it and the bad value', async () => {
    const { createPayhooks } = await import('../../src/payhooks.js');
    expect(() => createPayhooks({ secret: 's', maxQuarantined: -1 })).toThrow(
      new RangeError('maxQuarantined must be a whole number of at least 0, not -1.'),
    );
    expect(() => createPayhooks({ secret: 's', maxQuarantined: 1.5 })).toThrow(/not 1\.5/);
  });
});
