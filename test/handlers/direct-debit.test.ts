import { createServer } from 'node:http';
import { type Kysely, sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  type DirectDebitTables,
  dunningDecision,
  expectCharge,
  type PaymentFailure,
  registerDirectDebit,
} from '../../handlers/direct-debit/index.js';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { EVENT_TYPES } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createSandboxClient, startSimulator } from '../../src/simulator/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { beginStep, completeStep, listSteps, resolveStep } from '../../src/store/effect-steps.js';
import { getEvent } from '../../src/store/inbox.js';
import { effectKey } from '../../src/worker/effects.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

/** Whether `expected` events are stored and finished: done, or ignored (types the templates have no handler for). */
async function allDone(store: PayhooksDatabase, expected: number): Promise<boolean> {
  const { rows } = await sql<{ stored: number; finished: number; failed: string | null }>`
    select count(*)::int as stored, count(*) filter (where status in ('done', 'ignored'))::int as finished,
           string_agg(event_type || ': ' || last_error, '; ') filter (where status in ('dead', 'invalid')) as failed
    from ${sql.id(store.schema, 'inbox_event_states')}`.execute(store.db.withoutPlugins());
  const { stored, finished, failed } = rows[0]!;
  if (failed) throw new Error(`events failed: ${failed}`);
  return stored === expected && finished === expected;
}

const tables = (store: PayhooksDatabase, schema: string) =>
  (store.db.withoutPlugins() as unknown as Kysely<DirectDebitTables>).withSchema(schema);

describe.each(backends)('the direct-debit templates, inbox on $name', (backend) => {
  it.skipIf(!backend.available)(
    'a month of direct debit delivered twice and shuffled: mandates, one collection per invoice, failures with dunning once per attempt, a refund, a dispute, the subscription',
    { timeout: 120_000 },
    async () => {
      // Every delivery twice, shuffled in 50 ms windows.
      const simulator = await startSimulator({ logger: silent, duplicateRate: 1, reorder: true, rateLimitPerMinute: 1_000_000, random: 5 });
      const store = await backend.open();
      const schema = `${store.schema}_dd`;
      let hooks: Payhooks<ApiClient> | undefined;
      const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
      const dunning: PaymentFailure[] = [];
      try {
        const apiKey = 'sk_test_direct_debit';
        const api = createClient({ apiKey, environment: simulator.url, rateLimit: false });
        const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey });
        const endpoint = await api.webhooks.create({
          url: `${receiver.url}/webhooks`,
          description: 'direct debit',
          enabledEvents: [...EVENT_TYPES],
        });
        const { secret } = await api.webhooks.getSecret(endpoint.id);
        hooks = createPayhooks({ secret, database: store, logger: silent, api, worker: { pollIntervalMs: 50, concurrency: 8 } });
        await registerDirectDebit(hooks, { schema, dunning: (failure) => void dunning.push(failure) });
        await hooks.start();
        const db = tables(store, schema);

        // The month: a customer saves a card, subscribes, the first collection fails twice and then succeeds.
        const ana = await api.customers.create({ username: 'ana-dd', name: 'Ana', email: 'ana@example.com' });
        const card = await sandbox.savePaymentMethod(ana.id, { type: 'CARD', brand: 'MASTERCARD', last4: '4444' });
        const luis = await api.customers.create({ username: 'luis-dd', name: 'Luis', email: 'luis@example.com' });
        const clabe = await sandbox.savePaymentMethod(luis.id, { type: 'BANK_ACCOUNT', clabe: '012180001234567891' });
        const plan = await sandbox.createSubscription({
          customerId: ana.id,
          description: 'Gym, monthly',
          items: [{ quantity: 1, concept: { displayName: 'Membership', amount: 49_900, currency: 'MXN' } }],
        });
        const { invoice: monthly } = await sandbox.cycleSubscription(plan.id);
        const expectedItems = monthly.items.map(({ description, quantity, amount }) => ({ description, quantity, amount }));
        await expectCharge(db, { invoiceId: monthly.id, customerId: ana.id, amount: 49_900, currency: 'MXN', items: expectedItems });
        const { payment: monthlyPayment } = await api.invoices.requestPayment(monthly.id, { paymentType: 'TRANSFER' });
        await sandbox.failPayment(monthlyPayment.id);
        await sandbox.failPayment(monthlyPayment.id);
        await api.sandbox.completePayment(monthlyPayment.id, { outcome: 'SUCCEEDED' });
        await sandbox.refundPayment(monthlyPayment.id, { amount: 10_000, reason: 'one class canceled' });

        // Luis: a one-off invoice paid by transfer, then disputed and answered; and one whose amount the app got wrong.
        const dueDate = new Date(Date.now() + 7 * 86_400_000).toISOString();
        const oneOff = await api.invoices.create({
          customerId: luis.id,
          dueDate,
          items: [{ quantity: 2, concept: { displayName: 'Locker', amount: 15_000, currency: 'MXN' } }],
        });
        await expectCharge(db, { invoiceId: oneOff.id, customerId: luis.id, amount: 30_000, currency: 'MXN' });
        const { payment: oneOffPayment } = await api.invoices.requestPayment(oneOff.id, { paymentType: 'TRANSFER' });
        await api.sandbox.completePayment(oneOffPayment.id, { outcome: 'SUCCEEDED' });
        const dispute = await sandbox.openDispute(oneOffPayment.id, { reason: 'NOT_RECOGNIZED' });
        await sandbox.respondToDispute(dispute.id, { evidence: 'signed contract' });
        const wrong = await api.invoices.create({
          customerId: luis.id,
          dueDate,
          items: [{ quantity: 1, concept: { displayName: 'Towel', amount: 5_000, currency: 'MXN' } }],
        });
        await expectCharge(db, { invoiceId: wrong.id, customerId: luis.id, amount: 4_000, currency: 'USD' });
        const { payment: wrongPayment } = await api.invoices.requestPayment(wrong.id, { paymentType: 'CASH' });
        await api.sandbox.completePayment(wrongPayment.id, { outcome: 'SUCCEEDED' });
        await sandbox.cancelSubscription(plan.id);

        await simulator.idle();
        const emitted = simulator.events().length;
        await waitFor(() => allDone(store, emitted), `all ${emitted} events done`, 60_000);
        const posts = simulator.deliveryPosts();
        expect(posts.filter((post) => post.duplicate).length).toBeGreaterThanOrEqual(emitted - 2);

        // Mandates: masked details only.
        const byCustomer = (a: { customer_id: string }, b: { customer_id: string }) => (a.customer_id < b.customer_id ? -1 : 1);
        const mandates = (await db.selectFrom('mandates').selectAll().execute()).sort(byCustomer);
        expect(
          mandates.map(
            ({ payment_method_id, customer_id, type, status, card_brand, card_last4, bank_name, clabe_last, charges_consented }) => ({
              payment_method_id,
              customer_id,
              type,
              status,
              card_brand,
              card_last4,
              bank_name,
              clabe_last,
              charges_consented,
            }),
          ),
        ).toEqual(
          [
            {
              payment_method_id: card.id,
              customer_id: ana.id,
              type: 'CARD',
              status: 'active',
              card_brand: 'MASTERCARD',
              card_last4: '4444',
              bank_name: null,
              clabe_last: null,
              charges_consented: true,
            },
            {
              payment_method_id: clabe.id,
              customer_id: luis.id,
              type: 'BANK_ACCOUNT',
              status: 'active',
              card_brand: null,
              card_last4: null,
              bank_name: 'BBVA México',
              clabe_last: '7891',
              charges_consented: true,
            },
          ].sort(byCustomer),
        );
        expect(JSON.stringify(mandates)).not.toContain('012180001234567891');

        // Collections: once each, from whichever of INVOICE_PAID and PAYMENT_COMPLETED ran first.
        const charges = await db.selectFrom('charges').selectAll().orderBy('invoice_id').execute();
        const byInvoice = Object.fromEntries(charges.map((charge) => [charge.invoice_id, charge]));
        expect(charges).toHaveLength(3);
        expect(byInvoice[monthly.id]).toMatchObject({
          status: 'paid',
          mismatch: null,
          payment_id: monthlyPayment.id,
          paid_currency: 'MXN',
          disputed: false,
        });
        expect(Number(byInvoice[monthly.id]!.paid_amount)).toBe(49_900);
        expect(Number(byInvoice[monthly.id]!.refunded_amount)).toBe(10_000);
        expect(byInvoice[oneOff.id]).toMatchObject({ status: 'paid', payment_id: oneOffPayment.id, disputed: true });
        expect(byInvoice[wrong.id]).toMatchObject({ status: 'mismatch', paid_currency: 'MXN' });
        expect(byInvoice[wrong.id]!.mismatch).toBe('currency MXN, expected USD; amount 5000, expected 4000');
        const { rows: collectionRuns } = await sql<{ n: number }>`
          select count(*)::int as n from ${sql.id(store.schema, 'handler_runs')} where handler = 'direct-debit:collections'`.execute(
          store.db.withoutPlugins(),
        );
        // Six events (three INVOICE_PAID, three PAYMENT_COMPLETED) ran the handler; three collections were written.
        expect(collectionRuns[0]!.n).toBe(6);

        // Failures: two attempts, the dunning hook called once for each, with its number.
        const failures = await db.selectFrom('payment_failures').selectAll().orderBy('attempt_number').execute();
        expect(failures.map((f) => [f.attempt_number, f.payment_id, f.invoice_id, f.dunning_called])).toEqual([
          [1, monthlyPayment.id, monthly.id, true],
          [2, monthlyPayment.id, monthly.id, true],
        ]);
        expect(dunning.map((f) => f.attemptNumber).sort()).toEqual([1, 2]);
        expect(new Set(dunning.map((f) => f.attemptId)).size).toBe(2);

        // The subscription, canceled; the dispute with its evidence deadline; the refund.
        const subscription = await db.selectFrom('subscriptions').selectAll().executeTakeFirstOrThrow();
        expect(subscription).toMatchObject({ id: plan.id, canceled: true, is_active: false, next_collection_at: null });
        const records = simulator.records();
        const simDispute = records.disputes.find((d) => d.id === dispute.id)!;
        const storedDispute = await db.selectFrom('disputes').selectAll().executeTakeFirstOrThrow();
        expect(storedDispute).toMatchObject({ id: dispute.id, payment_id: oneOffPayment.id, status: simDispute.status, stage: 1 });
        expect(new Date(storedDispute.respond_by!).toISOString()).toBe(simDispute.respondBy);
        const refunds = await db.selectFrom('refunds').selectAll().execute();
        expect(refunds.map((r) => [r.payment_id, Number(r.amount), r.status])).toEqual([[monthlyPayment.id, 10_000, 'SUCCEEDED']]);
      } finally {
        await hooks?.stop();
        await receiver.close();
        await simulator.close();
        if (store.kind === 'postgres') await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
        await dispose(store);
      }
    },
  );
});

describe('the dunning hook', () => {
  it('is called once per failed attempt even when the event is delivered three times, and not at all when it throws until it succeeds', {
    timeout: 60_000,
  }, async () => {
    const secret = 'whsec_dunning';
    const scheme = createDefaultScheme({ secrets: secret });
    const hooks = createPayhooks<ApiClient>({
      secret,
      database: { dataDir: 'memory://' },
      logger: silent,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 50, maxMs: 100 } },
    });
    const calls: PaymentFailure[] = [];
    let failOnce = true;
    try {
      await registerDirectDebit(hooks, {
        dunning: (failure) => {
          if (failure.attemptNumber === 2 && failOnce) {
            failOnce = false;
            throw new Error('the mailer is down');
          }
          calls.push(failure);
        },
      });
      const store = await hooks.ready();
      await hooks.start();
      const { exampleEvent } = await import('../../src/events/index.js');
      const failed = (eventId: string, attemptNumber: number) => {
        const event = exampleEvent('PAYMENT_ATTEMPT_FAILED', { eventId });
        event.data.paymentAttempt = {
          ...event.data.paymentAttempt,
          id: `att_${attemptNumber}`,
          attemptNumber,
          errorType: 'card_error',
          errorCode: 'insufficient_funds',
        };
        return JSON.stringify(event);
      };
      const deliver = async (rawBody: string) =>
        (
          await hooks.receive({
            method: 'POST',
            headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) },
            rawBody: Buffer.from(rawBody),
          })
        ).status;
      const first = failed('evt_fail_1', 1);
      expect([await deliver(first), await deliver(first), await deliver(first)]).toEqual([200, 200, 200]);
      // The service sending the same attempt again under a new event id: still one failure, one call.
      await deliver(failed('evt_fail_1_resent', 1));
      await deliver(failed('evt_fail_2', 2));
      await waitFor(() => allDone(store, 3), 'three stored events done', 30_000);
      expect(calls.map((c) => [c.attemptId, c.attemptNumber, c.errorType, c.errorCode, c.failuresSoFar])).toEqual([
        ['att_1', 1, 'card_error', 'insufficient_funds', 1],
        ['att_2', 2, 'card_error', 'insufficient_funds', 2],
      ]);
      const rows = await tables(store, 'direct_debit')
        .selectFrom('payment_failures')
        .select(['attempt_id', 'attempt_number'])
        .orderBy('attempt_id')
        .execute();
      expect(rows).toEqual([
        { attempt_id: 'att_1', attempt_number: 1 },
        { attempt_id: 'att_2', attempt_number: 2 },
      ]);
    } finally {
      await hooks.stop();
    }
  });

  /**
   * A payhooks on an in-memory database with the templates registered (dunning counted by attempt id) and the given
   * PAYMENT_ATTEMPT_FAILED events stored, each of its own payment; `before` then leaves the effect steps as a run
   * that died would have, before the worker starts.
   */
  const withStoredFailures = async (
    eventIds: readonly string[],
    options: { dunningIdempotent?: boolean },
    before: (store: PayhooksDatabase, step: (eventId: string) => Promise<void>) => Promise<void>,
  ) => {
    const secret = 'whsec_dunning_crash';
    const scheme = createDefaultScheme({ secrets: secret });
    const hooks = createPayhooks<ApiClient>({
      secret,
      database: { dataDir: 'memory://' },
      logger: silent,
      worker: { pollIntervalMs: 50, backoff: { baseMs: 50, maxMs: 100 } },
    });
    const calls: string[] = [];
    await registerDirectDebit(hooks, { dunning: (failure) => void calls.push(failure.attemptId), ...options });
    const store = await hooks.ready();
    const { exampleEvent } = await import('../../src/events/index.js');
    for (const eventId of eventIds) {
      const event = exampleEvent('PAYMENT_ATTEMPT_FAILED', { eventId });
      event.data.payment = { ...event.data.payment, id: `pay_${eventId}` };
      event.data.paymentAttempt = { ...event.data.paymentAttempt, id: `att_${eventId}`, attemptNumber: 1 };
      const rawBody = JSON.stringify(event);
      const answer = await hooks.receive({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) },
        rawBody: Buffer.from(rawBody),
      });
      expect(answer.status).toBe(200);
    }
    const handler = 'direct-debit:failures';
    // The dunning step recorded started, as attempt 1 does just before it calls the hook.
    await before(store, async (eventId) => {
      const receivedAt = (await getEvent(store, eventId))!.receivedAt;
      const intent = {
        account: 'default',
        eventId,
        handler,
        step: 'dunning',
        receivedAt,
        idempotencyKey: effectKey('default', eventId, handler, 'dunning'),
      };
      await beginStep(store, { ...intent, idempotent: false, attempt: 1 });
    });
    await hooks.start();
    const recorded = async () =>
      (await tables(store, 'direct_debit').selectFrom('payment_failures').select('attempt_id').orderBy('attempt_id').execute()).map(
        (row) => row.attempt_id,
      );
    const statusOf = async (eventId: string) => (await getEvent(store, eventId))?.status;
    return { hooks, store, calls, recorded, statusOf };
  };

  it('runs as an effect step before the record: dead after the hook, it is not called again; dead during it, the event waits for an operator', {
    timeout: 60_000,
  }, async () => {
    const { hooks, store, calls, recorded, statusOf } = await withStoredFailures(
      ['evt_after', 'evt_during', 'evt_redo', 'evt_fresh'],
      {},
      async (store, started) => {
        // evt_after: the hook completed, the process died before the failure's transaction.
        await started('evt_after');
        await completeStep(store, { account: 'default', eventId: 'evt_after', handler: 'direct-debit:failures', step: 'dunning' }, null);
        // evt_during and evt_redo: the process died while the hook ran; whether it happened is unknown.
        await started('evt_during');
        await started('evt_redo');
      },
    );
    try {
      await waitFor(async () => (await statusOf('evt_after')) === 'done' && (await statusOf('evt_fresh')) === 'done', 'done');
      await waitFor(async () => (await statusOf('evt_during')) === 'needs-review', 'evt_during held');
      await waitFor(async () => (await statusOf('evt_redo')) === 'needs-review', 'evt_redo held');
      // The completed hook is not called again; the failure is recorded once. The held ones are neither called nor recorded.
      expect(calls).toEqual(['att_evt_fresh']);
      expect(await recorded()).toEqual(['att_evt_after', 'att_evt_fresh']);
      expect((await listSteps(store, [{ account: 'default', eventId: 'evt_fresh' }]))[0]).toMatchObject({
        step: 'dunning',
        state: 'completed',
        calls: 1,
      });

      // The operator finds the email was sent for one (done: recorded without a call), not for the other (redo: called).
      expect(await resolveStep(store, { eventId: 'evt_during', step: 'dunning' }, 'done')).toMatchObject({ requeued: true });
      expect(await resolveStep(store, { eventId: 'evt_redo', step: 'dunning' }, 'redo')).toMatchObject({ requeued: true });
      await waitFor(async () => (await statusOf('evt_during')) === 'done' && (await statusOf('evt_redo')) === 'done', 'resolved');
      expect(calls).toEqual(['att_evt_fresh', 'att_evt_redo']);
      expect(await recorded()).toEqual(['att_evt_after', 'att_evt_during', 'att_evt_fresh', 'att_evt_redo']);
      // A replay finds the attempt recorded: no call, nothing written twice.
      const before = (await getEvent(store, 'evt_fresh'))!.processedAt!;
      await hooks.replay(['evt_fresh']);
      await waitFor(async () => {
        const event = await getEvent(store, 'evt_fresh');
        return event?.status === 'done' && event.processedAt! > before;
      }, 'the replay to run');
      expect(calls).toEqual(['att_evt_fresh', 'att_evt_redo']);
    } finally {
      await hooks.stop();
    }
  });

  it('declared idempotent (dunningIdempotent), a hook whose outcome is unknown is called again instead of held', {
    timeout: 60_000,
  }, async () => {
    const { hooks, calls, recorded, statusOf } = await withStoredFailures(['evt_unknown'], { dunningIdempotent: true }, (_store, started) =>
      started('evt_unknown'),
    );
    try {
      await waitFor(async () => (await statusOf('evt_unknown')) === 'done', 'evt_unknown done');
      expect(calls).toEqual(['att_evt_unknown']);
      expect(await recorded()).toEqual(['att_evt_unknown']);
    } finally {
      await hooks.stop();
    }
  });

  it('dunningDecision retries after the policy days, then suspends', () => {
    const failedAt = new Date('2026-12-01T10:00:00Z');
    expect(dunningDecision({ attemptNumber: 1, failedAt })).toEqual({ action: 'retry', retryAt: new Date('2026-12-04T10:00:00Z') });
    expect(dunningDecision({ attemptNumber: 2, failedAt })).toEqual({ action: 'retry', retryAt: new Date('2026-12-06T10:00:00Z') });
    expect(dunningDecision({ attemptNumber: 3, failedAt })).toEqual({ action: 'suspend' });
    expect(dunningDecision({ attemptNumber: 4, failedAt }, { retryAfterDays: [1], suspendAfter: 5 })).toEqual({
      action: 'retry',
      retryAt: new Date('2026-12-02T10:00:00Z'),
    });
  });
});
