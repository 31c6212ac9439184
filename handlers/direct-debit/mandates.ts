import { sql } from 'kysely';
import type { WebhookEvent } from 'payhooks';
import type { DirectDebitDb } from './tables.js';

/**
 * PAYMENT_METHOD_CREATED: records the customer's mandate (confirmed, charges consented) with masked details only.
 * A repeat of the event, or a newer one for the same method, updates it; a mandate revoked stays revoked.
 */
export async function recordMandate(
  db: DirectDebitDb,
  event: WebhookEvent<'PAYMENT_METHOD_CREATED'>,
  customerArchived: boolean,
): Promise<void> {
  const { paymentMethod: method, customer } = event.data;
  const card = method.cardDetail;
  const bank = method.bankAccount;
  const row = {
    payment_method_id: method.id,
    customer_id: customer.id,
    type: method.type,
    confirmed: method.confirmed,
    charges_consented: method.chargesConsented,
    card_brand: card?.brand ?? null,
    card_last4: card?.last4 ?? null,
    card_expiry_month: card?.expiryMonth ?? null,
    card_expiry_year: card?.expiryYear ?? null,
    bank_name: bank?.bankName ?? null,
    bank_code: bank?.bankCode ?? null,
    clabe_last: bank?.clabeLast ?? null,
    status: customerArchived ? ('revoked' as const) : ('active' as const),
    revoked_at: customerArchived ? new Date() : null,
    last_event_id: event.eventId,
  };
  await db
    .insertInto('mandates')
    .values(row)
    .onConflict((conflict) =>
      conflict.column('payment_method_id').doUpdateSet({
        confirmed: row.confirmed,
        charges_consented: row.charges_consented,
        card_brand: row.card_brand,
        card_last4: row.card_last4,
        card_expiry_month: row.card_expiry_month,
        card_expiry_year: row.card_expiry_year,
        bank_name: row.bank_name,
        bank_code: row.bank_code,
        clabe_last: row.clabe_last,
        // Revocation is final: a repeat of the creation must not bring the consent back.
        status: sql`case when mandates.status = 'revoked' then 'revoked' else excluded.status end`,
        revoked_at: sql`coalesce(mandates.revoked_at, excluded.revoked_at)`,
        updated_at: sql`now()`,
        last_event_id: row.last_event_id,
      }),
    )
    .execute();
}

/** CUSTOMER_ARCHIVED: the customer can no longer be charged; every mandate of theirs is revoked. */
export async function revokeMandates(db: DirectDebitDb, customerId: string): Promise<number> {
  const result = await db
    .updateTable('mandates')
    .set({ status: 'revoked', revoked_at: new Date(), updated_at: sql`now()` })
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
