// Issue 25: the operator's side of ctx.effect through the CLI's run() (in-process), against PostgreSQL, beside a
// worker running in this process on the same schema: `payhooks replay` of a done event calls none of its completed
// steps, `--redo-effects` asks first and then calls them again; `payhooks effects list` prints the steps, and
// `effects resolve EVENT STEP --done|--redo` answers a step held for review (not called, or called again).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { beginStep } from '../../src/store/effect-steps.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { effectKey } from '../../src/worker/effects.js';
import { runInProcess } from '../helpers/cli.js';
import { putEvent } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

describe.skipIf(!pgUrl)('payhooks replay, effects list and effects resolve beside a running worker', () => {
  let store: PayhooksDatabase;
  let hooks: Payhooks;
  const env: Record<string, string> = {};
  /** Handler runs and step calls, per event. */
  const runs = new Map<string, number>();
  const charges = new Map<string, number>();
  const notices = new Map<string, number>();
  const bump = (counts: Map<string, number>, id: string) => {
    const n = (counts.get(id) ?? 0) + 1;
    counts.set(id, n);
    return n;
  };
  const statusOf = async (id: string) => (await getEvent(store, id))?.status;
  const cli = (...args: string[]) => runInProcess(args, env);

  beforeAll(async () => {
    store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('effects_cli') });
    await migrate(store);
    Object.assign(env, { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: store.schema, PAYHOOKS_CONFIG: '' });
    // evt_held and evt_redo: a run that died after sending its notice and before recording it (attempt 1).
    for (const id of ['evt_twice', 'evt_held', 'evt_redo']) await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: id }));
    for (const id of ['evt_held', 'evt_redo']) {
      const receivedAt = (await getEvent(store, id))!.receivedAt;
      const intent = {
        account: 'default',
        eventId: id,
        handler: 'sms',
        step: 'notify',
        receivedAt,
        idempotencyKey: effectKey('default', id, 'sms', 'notify'),
      };
      await beginStep(store, { ...intent, idempotent: false, attempt: 1 });
    }
    hooks = createPayhooks({
      database: store,
      logger: pino({ level: 'silent' }),
      worker: { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 20 } },
    });
    hooks.on(
      'INVOICE_PAID',
      async (event, ctx) => {
        bump(runs, event.eventId);
        await ctx.effect('charge', () => ({ charge: bump(charges, event.eventId) }));
      },
      { name: 'fees' },
    );
    hooks.on('INVOICE_PAID', (event, ctx) => ctx.effect('notify', () => void bump(notices, event.eventId), { idempotent: false }), {
      name: 'sms',
    });
    await hooks.start();
    await waitFor(async () => (await statusOf('evt_twice')) === 'done', 'evt_twice done');
    await waitFor(async () => (await statusOf('evt_held')) === 'needs-review', 'evt_held needs review');
    await waitFor(async () => (await statusOf('evt_redo')) === 'needs-review', 'evt_redo needs review');
  }, 60_000);

  afterAll(async () => {
    await hooks?.stop(2000);
    if (store) await dispose(store);
  });

  it('replay of a done event runs its handlers again and calls none of its completed steps', { timeout: 60_000 }, async () => {
    expect([runs.get('evt_twice'), charges.get('evt_twice'), notices.get('evt_twice')]).toEqual([1, 1, 1]);
    const replayed = await cli('replay', 'evt_twice');
    expect(replayed.stderr).toBe('');
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toContain('1 event to re-queue: evt_twice');
    expect(replayed.stdout).toContain(
      'effect steps: 2 completed steps will be skipped (their recorded results are reused; --redo-effects calls them again)',
    );
    expect(replayed.stdout).toContain('  evt_twice fees "charge": completed');
    expect(replayed.stdout).toContain('  evt_twice sms "notify": completed');
    expect(replayed.stdout).toContain('re-queued 1 event');
    await waitFor(async () => runs.get('evt_twice') === 2 && (await statusOf('evt_twice')) === 'done', 'the replay to run');
    expect([charges.get('evt_twice'), notices.get('evt_twice')]).toEqual([1, 1]);
  });

  it('--redo-effects refuses without --yes when nobody can be asked, and with --yes calls every step again', {
    timeout: 60_000,
  }, async () => {
    const refused = await cli('replay', 'evt_twice', '--redo-effects');
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).toContain('effect steps: 2 completed steps will be called again (--redo-effects)');
    expect(refused.stderr).toMatch(/Refusing to re-queue 1 event and call 2 effect steps again without confirmation/);
    // Nothing changed: the steps are still recorded completed, and no run started.
    expect((await cli('effects', 'list', 'evt_twice', '--json')).stdout).toMatch(/"state": "completed"/);
    expect(runs.get('evt_twice')).toBe(2);

    const redone = await cli('replay', 'evt_twice', '--redo-effects', '--yes');
    expect(redone.code).toBe(0);
    expect(redone.stdout).toContain('re-queued 1 event');
    await waitFor(async () => runs.get('evt_twice') === 3 && (await statusOf('evt_twice')) === 'done', 'the replay to run');
    expect([charges.get('evt_twice'), notices.get('evt_twice')]).toEqual([2, 2]);
    // The second call's result is the one recorded now.
    const steps = JSON.parse((await cli('effects', 'list', 'evt_twice', '--json')).stdout) as { step: string; result: string }[];
    expect(steps.find((s) => s.step === 'charge')?.result).toBe('{"charge":2}');
  });

  it('effects list prints each step with its state; an event without steps and an unknown event say so', { timeout: 60_000 }, async () => {
    const listed = await cli('effects', 'list', 'evt_held');
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^HANDLER\s+STEP\s+STATE\s+IDEMPOTENT\s+CALLS\s+ATTEMPT\s+STARTED\s+NOTE$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 6))).toEqual(
      expect.arrayContaining([
        ['sms', 'notify', 'needs-review', 'no', '1', '1'],
        ['fees', 'charge', 'completed', 'no', '1', '1'],
      ]),
    );
    expect(lines.find((line) => line.startsWith('sms'))).toMatch(/Its outcome is unknown/);
    const json = JSON.parse((await cli('effects', 'list', 'evt_held', '--json')).stdout) as Record<string, unknown>[];
    expect(json).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          eventId: 'evt_held',
          handler: 'sms',
          step: 'notify',
          state: 'needs-review',
          idempotencyKey: effectKey('default', 'evt_held', 'sms', 'notify'),
        }),
      ]),
    );

    const unknown = await cli('effects', 'list', 'evt_nowhere');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/No stored event with eventId evt_nowhere/);
  });

  it('effects resolve --done: the step is not called, the event completes; a second resolve changes nothing', {
    timeout: 60_000,
  }, async () => {
    const noFlag = await cli('effects', 'resolve', 'evt_held', 'notify');
    expect(noFlag.code).not.toBe(0);
    expect(noFlag.stderr).toMatch(/--done \(the effect happened\) or --redo/);
    const wrong = await cli('effects', 'resolve', 'evt_held', 'nope', '--done');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/no step "nope" of event evt_held \(payhooks effects list evt_held shows its steps\)/);
    expect(await statusOf('evt_held')).toBe('needs-review');

    const resolved = await cli('effects', 'resolve', 'evt_held', 'notify', '--done');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toBe('resolved step "notify" of event evt_held (handler sms) as done: the event is queued again\n');
    await waitFor(async () => (await statusOf('evt_held')) === 'done', 'evt_held done');
    expect(notices.get('evt_held')).toBeUndefined();
    expect(charges.get('evt_held')).toBe(1);

    const again = await cli('effects', 'resolve', 'evt_held', 'notify', '--done');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/step "notify" of event evt_held is completed, not waiting for review: nothing changed/);
  });

  it('effects resolve --redo: the step is called again, once, and the event completes', { timeout: 60_000 }, async () => {
    const resolved = await cli('effects', 'resolve', 'evt_redo', 'notify', '--redo', '--handler', 'sms');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toMatch(/as redo: the event is queued again/);
    await waitFor(async () => (await statusOf('evt_redo')) === 'done', 'evt_redo done');
    expect(notices.get('evt_redo')).toBe(1);
    const steps = JSON.parse((await cli('effects', 'list', 'evt_redo', '--json')).stdout) as Record<string, unknown>[];
    expect(steps.find((s) => s.step === 'notify')).toMatchObject({ state: 'completed', resolution: 'redo', calls: 2 });
  });
});
