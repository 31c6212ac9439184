import { describe, expect, it } from 'vitest';
import { collect } from '../helpers/cli.js';
import { startExample } from '../helpers/examples.js';

/** `npx tsx examples/direct-debit/month.ts ARGS`, as its README says, to the end. */
const runMonth = (args: string[]) =>
  collect(startExample('direct-debit/month.ts', args, { env: { PAYHOOKS_LOG_LEVEL: 'warn' } }).child, 90_000);

type Row = Record<string, unknown>;
interface Summary {
  database: string;
  ids: Record<'customer' | 'paymentMethod' | 'subscription' | 'invoice' | 'payment' | 'dispute', string>;
  service: { disputeRespondBy: string };
  events: { delivered: number; posts: number; duplicates: number; types: string[] };
  dunningCalls: {
    attemptId: string;
    attemptNumber: number;
    failuresSoFar: number;
    failedAt: string;
    decision: { action: string; retryAt?: string };
  }[];
  tables: Record<'mandates' | 'charges' | 'paymentFailures' | 'subscriptions' | 'disputes' | 'refunds', Row[]>;
}

const DAY = 86_400_000;

describe('examples/direct-debit', () => {
  it('month.ts --json: one mandate with masked card details, the charge paid once, failures with their attempt numbers and one dunning call each, the dispute with its deadline, the subscription active', {
    timeout: 100_000,
  }, async () => {
    const started = Date.now();
    const { code, stdout, stderr } = await runMonth(['--json']);
    expect(code, stderr).toBe(0);
    const summary = JSON.parse(stdout) as Summary;
    const { ids, tables } = summary;
    expect(summary.database).toBe('pglite');
    // The narration went to stderr, step by step, so that stdout is the summary alone.
    expect(stderr).toMatch(/^ 1\. Ana saves a card/m);
    expect(stderr).toMatch(/^ 9\. The gym answers/m);

    // Every delivery was POSTed twice, and each event was still handled once.
    expect(summary.events.types).toEqual([
      'PAYMENT_METHOD_CREATED',
      'SUBSCRIPTION_CREATED',
      'SUBSCRIPTION_UPDATED',
      'PAYMENT_ATTEMPT_FAILED',
      'PAYMENT_ATTEMPT_FAILED',
      'INVOICE_PAID',
      'PAYMENT_COMPLETED',
      'PAYMENT_REFUNDED',
      'DISPUTE_CREATED',
      'DISPUTE_RESPONSE_CREATED',
    ]);
    expect(summary.events.duplicates).toBe(summary.events.delivered);

    expect(tables.mandates).toHaveLength(1);
    expect(tables.mandates[0]).toMatchObject({
      payment_method_id: ids.paymentMethod,
      customer_id: ids.customer,
      type: 'CARD',
      card_brand: 'VISA',
      card_last4: '4242',
      card_expiry_month: 9,
      card_expiry_year: 2030,
      charges_consented: true,
      status: 'active',
    });
    // Masked details only: the cardholder's name the card was saved with is not kept.
    expect(JSON.stringify(tables.mandates)).not.toContain('Ana López');

    expect(tables.charges).toHaveLength(1);
    const charge = tables.charges[0]!;
    expect(charge).toMatchObject({
      invoice_id: ids.invoice,
      status: 'paid',
      mismatch: null,
      expected_amount: 49_900,
      paid_amount: 49_900,
      paid_currency: 'MXN',
      payment_id: ids.payment,
      refunded_amount: 10_000,
      disputed: true,
    });
    // Paid once: by the first of INVOICE_PAID and PAYMENT_COMPLETED to run, the other finding it collected.
    expect(charge.collected_by_event).toMatch(/^evt_/);

    expect(tables.paymentFailures.map((f) => [f.attempt_number, f.payment_id, f.invoice_id, f.error_type, f.dunning_called])).toEqual([
      [1, ids.payment, ids.invoice, 'DECLINED', true],
      [2, ids.payment, ids.invoice, 'DECLINED', true],
    ]);
    expect(summary.dunningCalls.map((call) => [call.attemptNumber, call.failuresSoFar])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(summary.dunningCalls.map((call) => call.attemptId)).toEqual(tables.paymentFailures.map((f) => f.attempt_id));
    for (const [i, call] of summary.dunningCalls.entries()) {
      // dunningDecision's default policy: retry after 3 days, then after 5.
      expect(call.decision.action).toBe('retry');
      expect(Date.parse(call.decision.retryAt!) - Date.parse(call.failedAt)).toBe([3, 5][i]! * DAY);
    }

    expect(tables.disputes).toHaveLength(1);
    const dispute = tables.disputes[0]!;
    expect(dispute).toMatchObject({ id: ids.dispute, payment_id: ids.payment, status: 'UNDER_REVIEW', stage: 1, reason: 'NOT_RECOGNIZED' });
    expect(dispute.respond_by).toBe(summary.service.disputeRespondBy);
    expect(Date.parse(String(dispute.respond_by))).toBeGreaterThan(started);

    expect(tables.refunds.map((r) => [r.payment_id, r.amount, r.status])).toEqual([[ids.payment, 10_000, 'SUCCEEDED']]);

    expect(tables.subscriptions).toHaveLength(1);
    const subscription = tables.subscriptions[0]!;
    expect(subscription).toMatchObject({ id: ids.subscription, status: 'ACTIVE', is_active: true, canceled: false });
    // One cycle ran: the next collection is a month after the last.
    const gap = Date.parse(String(subscription.next_collection_at)) - Date.parse(String(subscription.last_collection_at));
    expect(gap).toBeGreaterThanOrEqual(28 * DAY);
    expect(gap).toBeLessThanOrEqual(31 * DAY);
  });

  it('month.ts without --json prints the steps and the tables', { timeout: 100_000 }, async () => {
    const { code, stdout, stderr } = await runMonth([]);
    expect(code, stderr).toBe(0);
    for (const table of ['mandates', 'charges', 'payment_failures', 'subscriptions', 'disputes', 'refunds'])
      expect(stdout).toMatch(new RegExp(`^  ${table}$`, 'm'));
    expect(stdout).toMatch(/→ mandate active: VISA ···4242, expires 09\/2030/);
    expect(stdout).toMatch(/dunningDecision after 1 failure\(s\): retry on \d{4}-\d\d-\d\d/);
    expect(stdout).toContain('The dunning hook ran 2 times for 2 failed attempts.');
  });
});
