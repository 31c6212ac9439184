// `payhooks events history`, `events show` by any id and `replay --since/--until` as separate processes on the real
// server (issue 50): the story the command prints is the one the console's API answers, and a replay of a 30-minute
// window re-queues exactly the events first received in it, as many as its dry run counted.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminApi } from '../../src/console/admin-api.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { storeEvent } from '../../src/store/inbox.js';
import { migrate, migrateMirror } from '../../src/store/migrate.js';
import type { EventStatus } from '../../src/store/schema.js';
import { runCli } from '../helpers/cli.js';
import { backdate, setState, statuses } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';

const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';
const T0 = new Date('2026-11-29T02:00:00.000Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

describe.skipIf(!pgUrl)('events history, events show by any id and replay by a time window, as processes', () => {
  const schema = uniqueSchema('story');
  const mirrorSchema = `${schema}_mirror`;
  const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
  let store: PayhooksDatabase;

  async function put(eventId: string, minutes: number, status: EventStatus, extra: { resourceKey?: string; sender?: string } = {}) {
    const eventType = extra.resourceKey ? 'CUSTOMER_UPDATED' : 'INVOICE_PAID';
    await storeEvent(store, {
      eventId,
      eventType,
      resourceKey: extra.resourceKey ?? null,
      rawBody: JSON.stringify({ eventId, eventType, data: {} }),
      headers: extra.sender ? { 'x-webhook-event-id': extra.sender } : {},
    });
    await backdate(store, [eventId], at(minutes));
    await setState(store, eventId, status, { attempts: 1, last_error: status === 'dead' ? 'boom' : undefined });
  }

  beforeAll(async () => {
    store = await openDatabase({ url: pgUrl!, schema });
    await migrate(store);
    // The story of customer cus_1: created (done), then updated twice (dead after two failed runs of crm, then done).
    await put('evt_c1', 1, 'done', { resourceKey: 'customer:cus_1', sender: 'whevt_c1' });
    await put('evt_c2', 2, 'dead', { resourceKey: 'customer:cus_1' });
    await put('evt_c3', 3, 'done', { resourceKey: 'customer:cus_1' });
    const { rows } = await sql<{
      received_at: Date;
    }>`select received_at from ${sql.id(schema, 'inbox_events')} where event_id = 'evt_c2'`.execute(store.db);
    for (const attempt of [1, 2])
      await store.db
        .insertInto('handler_attempts')
        .values({
          account: 'default',
          event_id: 'evt_c2',
          received_at: rows[0]!.received_at,
          handler: 'crm',
          attempt,
          started_at: at(2 + attempt / 10),
          ended_at: at(2 + attempt / 10),
          outcome: 'failed',
          error: `crm answered 50${attempt}`,
        })
        .execute();
    await migrateMirror(store, mirrorSchema);
    await sql`insert into ${sql.id(mirrorSchema, 'customers')} (id, name, data, source, state_at, state_rank, state_hash, last_event_id)
              values ('cus_1', 'Ada', '{"id":"cus_1"}', 'api', now(), 1, 'h1', 'evt_c3')`.execute(store.db);
    // The 30-minute window 02:10 to 02:40: dead events at its edges and around it.
    await put('w_before', 9.99, 'dead');
    await put('w_start', 10, 'dead');
    await put('w_mid', 25, 'dead');
    await put('w_done', 26, 'done');
    await put('w_last', 39.99, 'dead');
    await put('w_end', 40, 'dead');
  }, 60_000);

  afterAll(async () => {
    await sql.raw(`drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
    await dispose(store);
  });

  it("prints a customer's story in order with each run and its mirror row, the same JSON the console's API answers", {
    timeout: 60_000,
  }, async () => {
    const json = await runCli(['events', 'history', 'customer:cus_1', '--json', '--mirror-schema', mirrorSchema], env);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const story = JSON.parse(json.stdout);
    expect(story.events.map((e: { eventId: string }) => e.eventId)).toEqual(['evt_c1', 'evt_c2', 'evt_c3']);
    expect(story.events[1].handlerAttempts.map((a: { error: string }) => a.error)).toEqual(['crm answered 501', 'crm answered 502']);
    expect(story.mirror).toEqual([
      expect.objectContaining({ table: 'customers', id: 'cus_1', row: expect.objectContaining({ name: 'Ada' }) }),
    ]);

    const api = createAdminApi({ store, token: TOKEN, mirrorSchema });
    const answer = await api.handle({
      method: 'GET',
      url: '/admin/api/story?resource=customer%3Acus_1&reveal=true',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(answer.status).toBe(200);
    const { masked, ...fromApi } = JSON.parse(answer.body);
    expect(masked).toBe(false);
    expect(fromApi).toEqual(story);

    const text = await runCli(['events', 'history', 'cus_1', '--mirror-schema', mirrorSchema], env);
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe('cus_1: 3 events, oldest first');
    expect(lines.filter((line) => /^\d{4}-/.test(line)).map((line) => line.split(/\s+/)[1])).toEqual(['evt_c1', 'evt_c2', 'evt_c3']);
    expect(lines).toContain('  run 1 crm failed in 0 ms: crm answered 501');
    expect(lines).toContain('mirror customers cus_1:');

    const unknown = await runCli(['events', 'history', 'refund:re_1'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Unknown kind of resource "refund"');
  });

  it('shows an event by the id its sender gave the delivery, saying so on stderr; an unknown id fails', { timeout: 60_000 }, async () => {
    const shown = await runCli(['events', 'show', 'whevt_c1'], env);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout).eventId).toBe('evt_c1');
    expect(shown.stderr.trim()).toBe("whevt_c1: found by its sender's x-webhook-event-id");
    const none = await runCli(['events', 'show', 'whevt_nothing'], env);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('No stored event with eventId whevt_nothing, and nothing else is stored under it');
  });

  it('replays a 30-minute window: the dry run counts what --yes re-queues, nothing outside moves', { timeout: 60_000 }, async () => {
    const window = ['--since', '2026-11-29T02:10:00Z', '--until', '2026-11-29T02:40:00Z'];
    const dry = await runCli(['replay', ...window, '--dry-run'], env);
    expect(dry.code).toBe(0);
    const scope = ' in state dead, invalid or needs-review received from 2026-11-29T02:10:00.000Z until 2026-11-29T02:40:00.000Z';
    expect(dry.stdout.trim().split('\n')).toEqual([`3 events to re-queue${scope}: w_start, w_mid, w_last`, 'dry run: nothing changed']);

    const refused = await runCli(['replay', ...window], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Pass --yes to confirm');

    const done = await runCli(['replay', ...window, '--yes', '--batch-size', '2'], env);
    expect(done.code).toBe(0);
    expect(done.stdout.trim().split('\n').at(-1)).toBe(`re-queued 3 events${scope.replace(' in state', ' from state')}`);
    const after = await statuses(store);
    expect(Object.fromEntries(['w_before', 'w_start', 'w_mid', 'w_done', 'w_last', 'w_end'].map((id) => [id, after[id]]))).toEqual({
      w_before: 'dead',
      w_start: 'pending',
      w_mid: 'pending',
      w_done: 'done',
      w_last: 'pending',
      w_end: 'dead',
    });

    const half = await runCli(['replay', '--since', '2026-11-29T02:10:00Z'], env);
    expect(half.code).toBe(1);
    expect(half.stderr).toContain('--since and --until go together');
    const backwards = await runCli(['replay', '--since', '2026-11-29T02:40:00Z', '--until', '2026-11-29T02:10:00Z'], env);
    expect(backwards.code).toBe(1);
    expect(backwards.stderr).toContain('--until (2026-11-29T02:10:00Z) must be after --since');
    const zoneless = await runCli(['replay', '--since', '2026-11-29T02:10', '--until', '2026-11-29T02:40:00Z'], env);
    expect(zoneless.code).toBe(1);
    expect(zoneless.stderr).toContain('--since takes a date');
  });
});
