import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/api-client.js';
import { createClient } from '../../src/client/create-client.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/start-simulator.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { beginStep, countNeedsReview, listSteps, markStepIdempotent, resolveStep } from '../../src/store/effect-steps.js';
import { getEvent } from '../../src/store/inbox.js';
import { replayEvents } from '../../src/store/maintenance.js';
import { effectKey } from '../../src/worker/effects.js';
import { putEvent } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

describe.each(backends)('ctx.effect on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks<ApiClient> | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  const start = async (register: (hooks: Payhooks<ApiClient>) => void, api?: ApiClient) => {
    store ??= await backend.open();
    hooks = createPayhooks({
      database: store,
      logger: silent,
      api,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 20 }, maxAttempts: 5 },
    });
    register(hooks);
    await hooks.start();
    return store;
  };
  const statusOf = async (s: PayhooksDatabase, id: string) => (await getEvent(s, id))?.status;

  it.skipIf(!backend.available)(
    'a step that completed is not called again on a later attempt: the retry gets its recorded result, as JSON',
    { timeout: 60_000 },
    async () => {
      const calls: string[] = [];
      const seen: unknown[] = [];
      let runs = 0;
      const s = await start((h) =>
        h.on(
          'INVOICE_PAID',
          async (_event, ctx) => {
            runs++;
            const charged = await ctx.effect('charge', ({ key }) => {
              calls.push(key);
              return { id: 'ch_1', at: new Date('2026-01-02T03:04:05Z') };
            });
            seen.push(charged);
            if (runs === 1) throw new Error('the ledger is down after the charge');
          },
          { name: 'fees' },
        ),
      );
      await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_once' }));
      await waitFor(async () => (await statusOf(s, 'evt_once')) === 'done', 'evt_once done');
      expect(runs).toBe(2);
      expect(calls).toEqual([effectKey('default', 'evt_once', 'fees', 'charge')]);
      // The first run sees what the second does: the value as its JSON (the Date as its string).
      expect(seen).toEqual([
        { id: 'ch_1', at: '2026-01-02T03:04:05.000Z' },
        { id: 'ch_1', at: '2026-01-02T03:04:05.000Z' },
      ]);
      const [step] = await listSteps(s, [{ account: 'default', eventId: 'evt_once' }]);
      expect(step).toMatchObject({ handler: 'fees', step: 'charge', state: 'completed', calls: 1, attempt: 1 });
      // The row belongs to the event's history: it carries its receipt time.
      const { rows } = await sql<{ same: boolean }>`
        select bool_and(x.received_at = e.received_at) as same from ${sql.id(s.schema, 'effect_steps')} x
          join ${sql.id(s.schema, 'inbox_events')} e using (event_id)`.execute(s.db);
      expect(rows[0]?.same).toBe(true);
    },
  );

  it.skipIf(!backend.available)(
    'a step that threw runs again on the next attempt with the same key; a handler that calls no effect leaves no step',
    { timeout: 60_000 },
    async () => {
      const keys: string[] = [];
      const s = await start((h) => {
        h.on(
          'INVOICE_PAID',
          async (_event, ctx) => {
            await ctx.effect('notify', ({ key, calls }) => {
              keys.push(key);
              if (calls === 1) throw new Error('503 from the SMS gateway');
            });
          },
          { name: 'sms' },
        );
        h.on('INVOICE_PAID', () => undefined, { name: 'plain' });
      });
      await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_throw' }));
      await waitFor(async () => (await statusOf(s, 'evt_throw')) === 'done', 'evt_throw done');
      expect(keys).toHaveLength(2);
      expect(new Set(keys).size).toBe(1);
      const steps = await listSteps(s, [{ account: 'default', eventId: 'evt_throw' }]);
      expect(steps.map((x) => [x.handler, x.step, x.state, x.calls])).toEqual([['sms', 'notify', 'completed', 2]]);
    },
  );

  it.skipIf(!backend.available)(
    'an unknown outcome: an idempotent step is called again with the same key, one that is not holds the event as needs-review until resolved',
    { timeout: 60_000 },
    async () => {
      store = await backend.open();
      const s = store;
      const receivedAt = new Date();
      await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_unknown' }));
      const received = (await getEvent(s, 'evt_unknown'))!.receivedAt;
      // A run that died between each call and its record: both steps left started by attempt 1.
      for (const [handler, step, idempotent] of [
        ['api', 'create', true],
        ['sms', 'send', false],
      ] as const) {
        const decision = await beginStep(s, {
          account: 'default',
          eventId: 'evt_unknown',
          handler,
          step,
          receivedAt: received ?? receivedAt,
          idempotencyKey: effectKey('default', 'evt_unknown', handler, step),
          idempotent,
          attempt: 1,
        });
        expect(decision).toEqual({ action: 'run', unknownBefore: false, calls: 1 });
      }
      const calls: Record<string, string[]> = { api: [], sms: [] };
      await start((h) => {
        h.on('INVOICE_PAID', (_e, ctx) => ctx.effect('create', ({ key }) => void calls.api!.push(key), { idempotent: true }), {
          name: 'api',
        });
        h.on('INVOICE_PAID', (_e, ctx) => ctx.effect('send', ({ key }) => void calls.sms!.push(key), { idempotent: false }), {
          name: 'sms',
        });
      });
      await waitFor(async () => (await statusOf(s, 'evt_unknown')) === 'needs-review', 'evt_unknown needs review');
      expect(calls.api).toEqual([effectKey('default', 'evt_unknown', 'api', 'create')]);
      expect(calls.sms).toEqual([]);
      const event = await getEvent(s, 'evt_unknown');
      expect(event?.lastError).toMatch(/effect step "send" of handler sms needs review/);
      expect(await countNeedsReview(s)).toEqual({ steps: 1, events: 1 });
      // A replay does not call it either: it stops at the same step.
      await replayEvents(s, { eventIds: ['evt_unknown'] });
      await waitFor(
        async () => (await statusOf(s, 'evt_unknown')) === 'needs-review' && (await getEvent(s, 'evt_unknown'))!.attempts > 0,
        'replayed',
      );
      expect(calls.sms).toEqual([]);
      expect(calls.api).toHaveLength(1);

      // The operator says to call it again: the event goes back, the step is called once, with the same key.
      expect(await resolveStep(s, { eventId: 'evt_unknown', step: 'nope' }, 'redo')).toEqual({ resolved: false, reason: 'not-found' });
      const resolved = await resolveStep(s, { eventId: 'evt_unknown', step: 'send' }, 'redo');
      expect(resolved).toMatchObject({ resolved: true, handler: 'sms', remaining: 0, requeued: true });
      await waitFor(async () => (await statusOf(s, 'evt_unknown')) === 'done', 'evt_unknown done');
      expect(calls.sms).toEqual([effectKey('default', 'evt_unknown', 'sms', 'send')]);
      expect(calls.api).toHaveLength(1);
      expect(await countNeedsReview(s)).toEqual({ steps: 0, events: 0 });
      const steps = await listSteps(s, [{ account: 'default', eventId: 'evt_unknown' }]);
      expect(steps.find((x) => x.step === 'send')).toMatchObject({ state: 'completed', resolution: 'redo', calls: 2 });
    },
  );

  it.skipIf(!backend.available)(
    'an undeclared step recorded idempotent when its call carried its key is called again after an unknown outcome, not held',
    { timeout: 60_000 },
    async () => {
      store = await backend.open();
      const s = store;
      await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_keyed' }));
      const receivedAt = (await getEvent(s, 'evt_keyed'))!.receivedAt;
      const ref = { account: 'default', eventId: 'evt_keyed', handler: 'fees', step: 'late-fee' };
      // Attempt 1: undeclared (recorded not idempotent), then its first keyed request marks it, then the process dies.
      const intent = {
        ...ref,
        receivedAt,
        idempotencyKey: effectKey('default', 'evt_keyed', 'fees', 'late-fee'),
        idempotent: false,
        attempt: 1,
      };
      expect(await beginStep(s, intent)).toEqual({ action: 'run', unknownBefore: false, calls: 1 });
      await markStepIdempotent(s, ref);
      // Attempt 2 declares nothing either: the record says its call carried its key, so it runs again.
      expect(await beginStep(s, { ...intent, attempt: 2 })).toEqual({ action: 'run', unknownBefore: true, calls: 2 });
      expect((await listSteps(s, [{ account: 'default', eventId: 'evt_keyed' }]))[0]).toMatchObject({
        state: 'started',
        idempotent: true,
        attempt: 2,
      });
      // Without the mark (a plain fetch, say), the same death holds it.
      const other = { ...intent, step: 'sms', idempotencyKey: effectKey('default', 'evt_keyed', 'fees', 'sms') };
      await beginStep(s, other);
      expect(await beginStep(s, { ...other, attempt: 2 })).toMatchObject({ action: 'review' });
    },
  );

  it.skipIf(!backend.available)('resolved as done: the step is not called, the event completes', { timeout: 60_000 }, async () => {
    store = await backend.open();
    const s = store;
    await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_done' }));
    const receivedAt = (await getEvent(s, 'evt_done'))!.receivedAt;
    const intent = {
      account: 'default',
      eventId: 'evt_done',
      handler: 'sms',
      step: 'send',
      receivedAt,
      idempotencyKey: 'k',
      idempotent: false,
      attempt: 1,
    };
    await beginStep(s, intent);
    let called = 0;
    let after: unknown = 'unset';
    await start((h) =>
      h.on(
        'INVOICE_PAID',
        async (_e, ctx) => {
          after = await ctx.effect('send', () => ++called);
        },
        { name: 'sms' },
      ),
    );
    await waitFor(async () => (await statusOf(s, 'evt_done')) === 'needs-review', 'needs review');
    expect(await resolveStep(s, { eventId: 'evt_done', step: 'send' }, 'done')).toMatchObject({ resolved: true, requeued: true });
    await waitFor(async () => (await statusOf(s, 'evt_done')) === 'done', 'done');
    expect(called).toBe(0);
    expect(after).toBeUndefined();
    expect(await resolveStep(s, { eventId: 'evt_done', step: 'send' }, 'done')).toEqual({
      resolved: false,
      reason: 'not-held',
      state: 'completed',
    });
  });

  it.skipIf(!backend.available)(
    'bad step names and a name used twice in one run are refused with a clear error',
    { timeout: 60_000 },
    async () => {
      const errors: string[] = [];
      const s = await start((h) =>
        h.on(
          'INVOICE_PAID',
          async (_e, ctx) => {
            for (const attempt of [
              () => ctx.effect('', () => 1),
              () => ctx.effect('x'.repeat(201), () => 1),
              () => ctx.effect('ok', 'nope' as never),
              async () => {
                await ctx.effect('twice', () => 1);
                await ctx.effect('twice', () => 2);
              },
            ]) {
              await attempt().catch((err: Error) => errors.push(err.message));
            }
          },
          { name: 'names' },
        ),
      );
      await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_names' }));
      await waitFor(async () => (await statusOf(s, 'evt_names')) === 'done', 'done');
      expect(errors).toEqual([
        expect.stringMatching(/needs a step name of 1 to 200 characters/),
        expect.stringMatching(/needs a step name of 1 to 200 characters/),
        expect.stringMatching(/fn must be a function, not string/),
        expect.stringMatching(/used the step name "twice" twice in one run/),
      ]);
    },
  );

  it.skipIf(!backend.available)(
    'ctx.api inside ctx.effect sends the step key: a late fee created, the handler failing after it, exists once in the simulator',
    { timeout: 60_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      try {
        const api = createClient({ apiKey: 'sk_test_effects', environment: simulator.url, rateLimit: false });
        const customer = await api.customers.create({ username: 'late-payer', name: 'Late Payer', email: 'late@example.com' });
        let runs = 0;
        const created: string[] = [];
        const s = await start(
          (h) =>
            h.on(
              'INVOICE_PAID',
              async (_e, ctx) => {
                runs++;
                const fee = await ctx.effect('late-fee', () =>
                  ctx.api!.invoices.create({
                    customerId: customer.id,
                    dueDate: new Date(Date.now() + 86_400_000).toISOString(),
                    items: [{ quantity: 1, concept: { displayName: 'Late fee', amount: 5_000, currency: 'MXN' } }],
                  }),
                );
                created.push(fee.id);
                if (runs === 1) throw new Error('crashed after the fee');
              },
              { name: 'late-fees' },
            ),
          api,
        );
        await putEvent(s, exampleEvent('INVOICE_PAID', { eventId: 'evt_fee' }));
        await waitFor(async () => (await statusOf(s, 'evt_fee')) === 'done', 'evt_fee done');
        expect(created).toHaveLength(2);
        expect(new Set(created).size).toBe(1);
        const fees = [];
        for await (const invoice of api.invoices.iterate()) if (invoice.customerId === customer.id) fees.push(invoice.id);
        expect(fees).toEqual([created[0]]);
        // Undeclared, the step became idempotent when the client sent its key.
        const [step] = await listSteps(s, [{ account: 'default', eventId: 'evt_fee' }]);
        expect(step).toMatchObject({
          idempotent: true,
          state: 'completed',
          idempotencyKey: effectKey('default', 'evt_fee', 'late-fees', 'late-fee'),
        });
      } finally {
        await simulator.close();
      }
    },
  );
});
