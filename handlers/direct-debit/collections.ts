import { sql } from 'kysely';
import type { HandlerContext, WebhookEvent } from 'payhooks';
import type { ApiClient } from 'payhooks/client';
import type { DirectDebitDb } from './tables.js';

/** One item of a charge, as the app issued it and as the service reports it. */
export interface ChargeItem {
  description: string;
  quantity: number;
  /** Per unit, in the currency's minor unit. */
  amount: number;
}

/** What the app expects to collect for one invoice ({@link expectCharge}). */
export interface ExpectedCharge {
  invoiceId: string;
  customerId?: string | undefined;
  /** In the currency's minor unit (cents), as the service counts it. */
  amount: number;
  currency: string;
  /** Compared as a set of (description, quantity, amount) when given. */
  items?: readonly ChargeItem[] | undefined;
}

/** An invoice as it was collected: the service's current state (or the event's, without an API key). */
interface CollectedInvoice {
  invoiceId: string;
  customerId: string | null;
  amount: number | null;
  currency: string | null;
  items: ChargeItem[] | null;
  paymentId: string | null;
  paidAt: Date;
}

/**
 * Records what the app expects to collect for an invoice, when it issues it: the collection handlers compare the
 * money that arrives against it. Call it in the app's own transaction; a second call for the same invoice
 * replaces the expectation while nothing was collected, and changes nothing afterwards.
 *
 * @example
 * const invoice = await api.invoices.create({ customerId, items });
 * await expectCharge(db.withSchema('direct_debit'), { invoiceId: invoice.id, customerId, amount: 49_900, currency: 'MXN' });
 */
export async function expectCharge(db: DirectDebitDb, charge: ExpectedCharge): Promise<void> {
  const row = {
    invoice_id: charge.invoiceId,
    customer_id: charge.customerId ?? null,
    expected_amount: charge.amount,
    expected_currency: charge.currency,
    expected_items: charge.items ? JSON.stringify(charge.items) : null,
    expected_at: new Date(),
    status: 'expected' as const,
    mismatch: null,
    paid_amount: null,
    paid_currency: null,
    payment_id: null,
    paid_at: null,
    collected_by_event: null,
  };
  await db
    .insertInto('charges')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column('invoice_id')
        .doUpdateSet({
          customer_id: row.customer_id,
          expected_amount: row.expected_amount,
          expected_currency: row.expected_currency,
          expected_items: row.expected_items,
          expected_at: row.expected_at,
          updated_at: sql`now()`,
        })
        .where('charges.status', '=', 'expected'),
    )
    .execute();
}

const itemKey = (item: ChargeItem) => `${item.description}\u0000${item.quantity}\u0000${item.amount}`;

/** Why a collection does not match its expectation, or null when it does. */
export function chargeMismatch(
  expected: { amount: number; currency: string; items: readonly ChargeItem[] | null },
  collected: { amount: number | null; currency: string | null; items: readonly ChargeItem[] | null },
): string | null {
  const reasons: string[] = [];
  if (collected.currency !== expected.currency) reasons.push(`currency ${collected.currency ?? 'unknown'}, expected ${expected.currency}`);
  if (collected.amount !== expected.amount) reasons.push(`amount ${collected.amount ?? 'unknown'}, expected ${expected.amount}`);
  if (expected.items && collected.items) {
    const want = expected.items.map(itemKey).sort();
    const got = collected.items.map(itemKey).sort();
    if (want.join('\n') !== got.join('\n'))
      reasons.push(`items [${got.join(', ').replaceAll('\u0000', ' × ')}], expected [${want.join(', ').replaceAll('\u0000', ' × ')}]`);
  }
  return reasons.length ? reasons.join('; ') : null;
}

const toItems = (items: readonly { description: string; quantity: number; amount: number }[]): ChargeItem[] =>
  items.map(({ description, quantity, amount }) => ({ description, quantity, amount }));

/**
 * The invoices a collection event settles, at their current state: read through the API when there is a client
 * (an invoice it reports unpaid is skipped: the payment did not settle it, or not yet), else from the event.
 */
export async function collectedInvoices(
  event: WebhookEvent<'INVOICE_PAID' | 'PAYMENT_COMPLETED'>,
  ctx: HandlerContext<ApiClient>,
): Promise<CollectedInvoice[]> {
  const paidAt = ctx.receivedAt;
  const fromEvent: CollectedInvoice[] =
    event.eventType === 'INVOICE_PAID'
      ? [
          {
            invoiceId: event.data.invoiceId,
            customerId: event.data.customer?.customerId ?? event.data.customer?.id ?? null,
            amount: event.data.invoice.amount,
            currency: event.data.invoice.currency,
            items: toItems(event.data.invoice.items),
            paymentId: event.data.payment?.id ?? null,
            paidAt,
          },
        ]
      : event.data.relatedInvoices.map((related) => ({
          invoiceId: related.id,
          customerId: event.data.customer.id,
          // One invoice settled by the payment: the payment's amount is the invoice's. With several, only the API knows.
          amount: event.data.relatedInvoices.length === 1 ? event.data.payment.amount : null,
          currency: event.data.payment.currency,
          items: toItems(related.items),
          paymentId: event.data.payment.id,
          paidAt,
        }));
  if (!ctx.api) return fromEvent;
  const current: CollectedInvoice[] = [];
  for (const known of fromEvent) {
    const invoice = await ctx.api.invoices.get(known.invoiceId, { signal: ctx.signal });
    if (!invoice.isPaid) continue;
    current.push({
      ...known,
      customerId: invoice.customerId ?? known.customerId,
      amount: invoice.amount,
      currency: invoice.currency,
      items: toItems(invoice.items),
      paidAt: invoice.paidAt ? new Date(invoice.paidAt) : paidAt,
    });
  }
  return current;
}

/**
 * Records one collection, once: an `expected` charge becomes `paid` when amount, currency and items match, or
 * `mismatch` (never counted as paid) when they do not; an invoice nobody expected is recorded `unexpected` (or
 * `paid`, with `acceptUnexpected`). A charge already collected is left as it is, whichever event comes second.
 * Returns the status written, or null when the collection was already recorded.
 */
export async function recordCollection(
  db: DirectDebitDb,
  collected: CollectedInvoice,
  eventId: string,
  acceptUnexpected: boolean,
): Promise<'paid' | 'mismatch' | 'unexpected' | null> {
  if (collected.paymentId) await lockPayment(db, collected.paymentId);
  const existing = await db.selectFrom('charges').selectAll().where('invoice_id', '=', collected.invoiceId).forUpdate().executeTakeFirst();
  if (existing && existing.status !== 'expected') return null;
  const aftermath = collected.paymentId ? await paymentAftermath(db, collected.paymentId) : { disputed: false, refunded: 0 };
  const collectedColumns = {
    paid_amount: collected.amount,
    paid_currency: collected.currency,
    payment_id: collected.paymentId,
    paid_at: collected.paidAt,
    collected_by_event: eventId,
    // Disputes and refunds of the payment may have been recorded before its collection (events arrive in any order).
    disputed: aftermath.disputed,
    refunded_amount: aftermath.refunded,
  };
  if (!existing) {
    const status = acceptUnexpected ? ('paid' as const) : ('unexpected' as const);
    await db
      .insertInto('charges')
      .values({ invoice_id: collected.invoiceId, customer_id: collected.customerId, status, mismatch: null, ...collectedColumns })
      .execute();
    return status;
  }
  const mismatch = chargeMismatch(
    {
      amount: Number(existing.expected_amount),
      currency: existing.expected_currency ?? '',
      items: (existing.expected_items as ChargeItem[] | null) ?? null,
    },
    collected,
  );
  const status = mismatch ? ('mismatch' as const) : ('paid' as const);
  await db
    .updateTable('charges')
    .set({ status, mismatch, updated_at: sql`now()`, ...collectedColumns })
    .where('invoice_id', '=', collected.invoiceId)
    .execute();
  return status;
}

/** Whether a payment was disputed, and how much of it was refunded (refunds that did not fail), from the tables. */
async function paymentAftermath(db: DirectDebitDb, paymentId: string): Promise<{ disputed: boolean; refunded: number }> {
  const dispute = await db.selectFrom('disputes').select('id').where('payment_id', '=', paymentId).limit(1).executeTakeFirst();
  const refunds = await db
    .selectFrom('refunds')
    .select(sql<string | number>`coalesce(sum(amount), 0)`.as('total'))
    .where('payment_id', '=', paymentId)
    .where('status', 'not in', ['FAILED', 'CANCELED'])
    .executeTakeFirstOrThrow();
  return { disputed: dispute !== undefined, refunded: Number(refunds.total) };
}

/**
 * Serialises, until the transaction ends, the handlers that write one payment's charge, refunds and disputes.
 * Without it a refund recorded while its payment's collection commits is lost: the refund's update of the charge
 * matches no row yet (the charge gets its payment id only when the collection commits), and the collection read
 * the refunds before the refund committed. Two keys: the templates' own namespace, then the payment.
 */
export async function lockPayment(db: DirectDebitDb, paymentId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext('payhooks:direct-debit'), hashtext(${paymentId}))`.execute(db);
}

/** Brings a charge's `disputed` and `refunded_amount` up to date from the disputes and refunds of its payment. */
export async function refreshChargeOfPayment(db: DirectDebitDb, paymentId: string): Promise<void> {
  const { disputed, refunded } = await paymentAftermath(db, paymentId);
  await db
    .updateTable('charges')
    .set({ disputed, refunded_amount: refunded, updated_at: sql`now()` })
    .where('payment_id', '=', paymentId)
    .execute();
}
