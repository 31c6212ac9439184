// A resource's story, an event found by any id, and a replay by time window (issue 50), on both backends.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { ensureAccounts } from '../../src/store/accounts.js';
import { findById } from '../../src/store/find-by-id.js';
import { storeEvent } from '../../src/store/inbox.js';
import { countReplayable, previewReplay, pruneEvents, type ReplaySelection, replayBatch } from '../../src/store/maintenance.js';
import { migrateMirror } from '../../src/store/migrate.js';
import { quarantineDelivery } from '../../src/store/quarantine.js';
import { RESOURCE_KINDS } from '../../src/events/index.js';
import { MIRROR_TABLES, resourceKeysOf, resourceStory } from '../../src/store/resource-story.js';
import type { EventStatus } from '../../src/store/schema.js';
import { backdate, setState } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

const T0 = new Date('2026-11-29T02:00:00.000Z');
const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);

/** Stores an event received at `at`, in `status`, with the headers given. */
async function put(
  store: PayhooksDatabase,
  eventId: string,
  options: { at: Date; status: EventStatus; resourceKey?: string; type?: string; headers?: Record<string, string> },
) {
  const eventType = options.type ?? 'INVOICE_PAID';
  await storeEvent(store, {
    eventId,
    eventType,
    resourceKey: options.resourceKey ?? null,
    rawBody: JSON.stringify({ eventId, eventType, data: {} }),
    headers: options.headers ?? {},
  });
  await backdate(store, [eventId], options.at);
  await setState(store, eventId, options.status, { attempts: 1 });
}

/** A run of `handler` for an event, as the worker records it (failed with `error`, or completed). */
async function ran(store: PayhooksDatabase, eventId: string, handler: string, attempt: number, error: string | null, startedAt: Date) {
  const { received_at } = await store.db
    .selectFrom('inbox_events')
    .select('received_at')
    .where('event_id', '=', eventId)
    .executeTakeFirstOrThrow();
  await store.db
    .insertInto('handler_attempts')
    .values({
      account: 'default',
      event_id: eventId,
      received_at,
      handler,
      attempt,
      started_at: startedAt,
      ended_at: new Date(startedAt.getTime() + 25),
      outcome: error === null ? 'completed' : 'failed',
      error,
    })
    .execute();
}

describe.each(backends)('the operator story queries on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let mirrorSchema: string | undefined;
  afterEach(async () => {
    if (store && mirrorSchema && store.kind === 'postgres')
      await sql.raw(`drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
    if (store) await dispose(store);
    store = undefined;
    mirrorSchema = undefined;
  });

  it.skipIf(!backend.available)('leaves out events whose history was pruned, and its limit counts the events it tells', async () => {
    store = await backend.open();
    const daysAgo = (n: number, plusMinutes = 0) => new Date(Date.now() - n * 86_400_000 + plusMinutes * 60_000);
    // An old dead event stays through the prune (unfinished); the old done one after it goes; the new one stays.
    await put(store, 'evt_old_dead', { at: daysAgo(40), status: 'dead', resourceKey: 'invoice:inv_p' });
    await put(store, 'evt_old_done', { at: daysAgo(40, 1), status: 'done', resourceKey: 'invoice:inv_p' });
    await put(store, 'evt_new', { at: daysAgo(0), status: 'done', resourceKey: 'invoice:inv_p' });
    expect((await resourceStory(store, 'invoice:inv_p')).events.map((e) => e.eventId)).toEqual(['evt_old_dead', 'evt_old_done', 'evt_new']);
    expect(await pruneEvents(store, 30 * 86_400_000)).toBe(1);

    const all = await resourceStory(store, 'invoice:inv_p');
    expect(all.events.map((e) => e.eventId)).toEqual(['evt_old_dead', 'evt_new']);
    expect(all.truncated).toBe(false);
    // The newest ledger rows are evt_new and the pruned evt_old_done: one told, and an older one still there.
    const newest = await resourceStory(store, 'invoice:inv_p', { limit: 1 });
    expect(newest.events.map((e) => e.eventId)).toEqual(['evt_new']);
    expect(newest.truncated).toBe(true);
    const two = await resourceStory(store, 'invoice:inv_p', { limit: 2 });
    expect(two.events.map((e) => e.eventId)).toEqual(['evt_old_dead', 'evt_new']);
    expect(two.truncated).toBe(false);
  });

  it.skipIf(!backend.available)("tells a customer's events in order, with each run, effect step and the mirror row", async () => {
    store = await backend.open();
    await put(store, 'evt_c1', { at: minutes(1), status: 'done', resourceKey: 'customer:cus_1', type: 'CUSTOMER_CREATED' });
    await put(store, 'evt_other', { at: minutes(2), status: 'done', resourceKey: 'customer:cus_2', type: 'CUSTOMER_CREATED' });
    await put(store, 'evt_c2', { at: minutes(3), status: 'dead', resourceKey: 'customer:cus_1', type: 'CUSTOMER_UPDATED' });
    await put(store, 'evt_c3', { at: minutes(5), status: 'done', resourceKey: 'customer:cus_1', type: 'PAYMENT_METHOD_CREATED' });
    await ran(store, 'evt_c2', 'crm', 1, 'crm answered 502', minutes(3.1));
    await ran(store, 'evt_c2', 'crm', 2, 'crm answered 503', minutes(3.2));
    await ran(store, 'evt_c1', 'crm', 1, null, minutes(1.1));
    const { received_at } = await store.db
      .selectFrom('inbox_events')
      .select('received_at')
      .where('event_id', '=', 'evt_c1')
      .executeTakeFirstOrThrow();
    await store.db
      .insertInto('effect_steps')
      .values({
        account: 'default',
        event_id: 'evt_c1',
        received_at,
        handler: 'crm',
        step: 'create-contact',
        idempotency_key: 'k1',
        idempotent: true,
        state: 'completed',
        attempt: 1,
        result: '{"contact":"c_9"}',
        error: null,
        ended_at: minutes(1.2),
        resolution: null,
        resolved_at: null,
      })
      .execute();

    // Without a mirror schema (or with one whose tables are absent), the story says the mirror is not in use.
    const bare = await resourceStory(store, 'customer:cus_1');
    expect(bare.mirror).toBeNull();
    expect(bare.events.map((e) => e.eventId)).toEqual(['evt_c1', 'evt_c2', 'evt_c3']);
    expect(bare.truncated).toBe(false);
    expect((await resourceStory(store, 'customer:cus_1', { mirrorSchema: 'no_such_mirror' })).mirror).toBeNull();

    mirrorSchema = store.kind === 'postgres' ? `${store.schema}_mirror` : 'payhooks_mirror';
    await migrateMirror(store, mirrorSchema);
    await sql`insert into ${sql.id(mirrorSchema, 'customers')} (id, name, email, data, source, state_at, state_rank, state_hash, last_event_id)
              values ('cus_1', 'Ada', 'ada@example.com', '{"id":"cus_1"}', 'api', now(), 1, 'h1', 'evt_c3')`.execute(store.db);
    const story = await resourceStory(store, 'customer:cus_1', { mirrorSchema });
    expect(story.keys).toEqual(['customer:cus_1']);
    expect(story.events.map((e) => [e.eventId, e.status])).toEqual([
      ['evt_c1', 'done'],
      ['evt_c2', 'dead'],
      ['evt_c3', 'done'],
    ]);
    const dead = story.events[1]!;
    expect(dead.handlerAttempts.map((a) => [a.handler, a.attempt, a.outcome, a.error])).toEqual([
      ['crm', 1, 'failed', 'crm answered 502'],
      ['crm', 2, 'failed', 'crm answered 503'],
    ]);
    expect(dead.handlerAttempts[0]!.durationMs).toBe(25);
    expect(story.events[0]!.effectSteps.map((s) => [s.handler, s.step, s.state])).toEqual([['crm', 'create-contact', 'completed']]);
    expect(story.events[2]!.handlerAttempts).toEqual([]);
    expect(story.mirror).toHaveLength(1);
    expect(story.mirror![0]).toMatchObject({ table: 'customers', id: 'cus_1', row: { name: 'Ada', last_event_id: 'evt_c3' } });

    // A bare id finds it under any kind; a limit keeps the newest and says older ones were left out.
    expect((await resourceStory(store, 'cus_1', { mirrorSchema })).events.map((e) => e.eventId)).toEqual(['evt_c1', 'evt_c2', 'evt_c3']);
    const newest = await resourceStory(store, 'customer:cus_1', { limit: 2 });
    expect(newest.events.map((e) => e.eventId)).toEqual(['evt_c2', 'evt_c3']);
    expect(newest.truncated).toBe(true);
    expect((await resourceStory(store, 'invoice:inv_none')).events).toEqual([]);
  });

  it.skipIf(!backend.available)("finds an event by its eventId, its sender's id, or a quarantine number", async () => {
    store = await backend.open();
    await put(store, 'evt_1', { at: minutes(1), status: 'done', headers: { 'x-webhook-event-id': 'whevt_A' } });
    await put(store, 'evt_2', { at: minutes(2), status: 'done', headers: { 'webhook-id': 'msg_B' } });
    await put(store, 'evt_3', { at: minutes(3), status: 'done', headers: { 'svix-id': 'msg_C', 'user-agent': 'x' } });
    const held = await quarantineDelivery(store, {
      kind: 'not_envelope',
      reason: 'no eventType',
      eventId: 'evt_q',
      rawBody: new TextEncoder().encode('{"eventId":"evt_q"}'),
      headers: {},
    });
    expect(await findById(store, 'evt_2')).toEqual({ kind: 'event', account: 'default', eventId: 'evt_2', accounts: ['default'] });
    expect(await findById(store, 'whevt_A')).toEqual({
      kind: 'sender-id',
      account: 'default',
      eventId: 'evt_1',
      header: 'x-webhook-event-id',
      accounts: ['default'],
    });
    expect(await findById(store, 'msg_B')).toEqual({
      kind: 'sender-id',
      account: 'default',
      eventId: 'evt_2',
      header: 'webhook-id',
      accounts: ['default'],
    });
    expect(await findById(store, 'msg_C')).toMatchObject({ kind: 'sender-id', eventId: 'evt_3', header: 'svix-id', accounts: ['default'] });
    if (!held) throw new Error('the delivery was not quarantined');
    const quarantined = { kind: 'quarantine', account: 'default', quarantineId: held.id, eventId: 'evt_q', state: 'held' };
    expect(await findById(store, held.id)).toEqual(quarantined);
    expect(await findById(store, `#${held.id}`)).toEqual(quarantined);
    expect(await findById(store, 'evt_q')).toEqual(quarantined);
    expect(await findById(store, 'x')).toBeUndefined();
    expect(await findById(store, '999999')).toBeUndefined();
  });

  it.skipIf(!backend.available)('finds an eventId several accounts hold: each of them named, first received first', async () => {
    store = await backend.open();
    await ensureAccounts(store, [{ id: 'default' }, { id: 'gym-north' }, { id: 'gym-south' }]);
    for (const account of ['gym-south', 'default', 'gym-north'])
      await storeEvent(store, { eventId: 'evt_s', account, eventType: 'INVOICE_PAID', resourceKey: null, rawBody: '{}', headers: {} });
    expect(await findById(store, 'evt_s')).toEqual({
      kind: 'event',
      account: 'gym-south',
      eventId: 'evt_s',
      accounts: ['gym-south', 'default', 'gym-north'],
    });
    expect(await findById(store, 'evt_s', 'gym-north')).toEqual({
      kind: 'event',
      account: 'gym-north',
      eventId: 'evt_s',
      accounts: ['gym-north'],
    });
  });

  it.skipIf(!backend.available)('replays exactly the failed events first received in a window, by handler and type', async () => {
    store = await backend.open();
    // 02:10 to 02:40: in it, two dead events (one of crm's, one of erp's), an invalid one, a done one; around it, dead ones.
    await put(store, 'before', { at: minutes(9.99), status: 'dead' });
    await put(store, 'start', { at: minutes(10), status: 'dead' });
    await put(store, 'erp', { at: minutes(20), status: 'dead', type: 'CUSTOMER_CREATED' });
    await put(store, 'invalid', { at: minutes(25), status: 'invalid' });
    await put(store, 'ok', { at: minutes(30), status: 'done' });
    await put(store, 'end', { at: minutes(40), status: 'dead' });
    await ran(store, 'start', 'crm', 1, 'boom', minutes(10.1));
    await ran(store, 'erp', 'erp', 1, 'nope', minutes(20.1));
    await ran(store, 'ok', 'crm', 1, 'boom', minutes(30.1));
    await ran(store, 'ok', 'crm', 2, null, minutes(30.2));
    const window = { since: minutes(10), until: minutes(40) };

    const count = async (which: ReplaySelection) => (await previewReplay(store!, which, 10)).sample;
    expect(await count(window)).toEqual(['start', 'erp', 'invalid']);
    expect(await count({ ...window, status: 'done' })).toEqual(['ok']);
    expect(await count({ ...window, handler: 'crm' })).toEqual(['start']);
    expect(await count({ ...window, handler: 'crm', status: 'done' })).toEqual(['ok']);
    expect(await count({ ...window, eventType: 'CUSTOMER_CREATED' })).toEqual(['erp']);
    expect(await count({ ...window, account: 'default' })).toEqual(['start', 'erp', 'invalid']);
    expect(await count({ ...window, account: 'acme' })).toEqual([]);

    // The dry run's count is what the batches re-queue, and nothing outside the window moves.
    const preview = await previewReplay(store, window, 10);
    expect(preview.count).toBe(3);
    let after: string | undefined;
    const replayed: string[] = [];
    for (;;) {
      const batch = await replayBatch(store, window, { limit: 2, after, through: preview.through ?? undefined });
      if (batch.visited === 0) break;
      replayed.push(...batch.eventIds);
      after = batch.last ?? undefined;
    }
    expect(replayed).toEqual(['start', 'erp', 'invalid']);
    expect(await countReplayable(store, window)).toBe(0);
    const states = await store.db.selectFrom('inbox_events').select(['event_id', 'status']).orderBy('seq').execute();
    expect(Object.fromEntries(states.map((r) => [r.event_id, r.status]))).toEqual({
      before: 'dead',
      start: 'pending',
      erp: 'pending',
      invalid: 'pending',
      ok: 'done',
      end: 'dead',
    });
  });
});

describe('resource keys of what an operator types', () => {
  it("knows every kind the events' resource keys name, in their order, each with its mirror table", () => {
    expect(Object.keys(MIRROR_TABLES)).toEqual([...RESOURCE_KINDS]);
  });

  it('takes a kind:id as it is, a bare id under every kind, and refuses an unknown kind or nothing', () => {
    expect(resourceKeysOf('invoice:inv_1')).toEqual(['invoice:inv_1']);
    expect(resourceKeysOf(' cus_1 ')).toEqual(['invoice:cus_1', 'customer:cus_1', 'payment:cus_1', 'dispute:cus_1', 'subscription:cus_1']);
    expect(() => resourceKeysOf('refund:re_1')).toThrow(/Unknown kind of resource "refund": use invoice:, customer:/);
    expect(() => resourceKeysOf('  ')).toThrow(RangeError);
  });
});
