import { sql } from 'kysely';
import type { WebhookEvent } from 'payhooks';
import { lockPayment, refreshChargeOfPayment } from './collections.js';
import type { DirectDebitDb } from './tables.js';

const STAGE = { DISPUTE_CREATED: 0, DISPUTE_RESPONSE_CREATED: 1, DISPUTE_RESOLVED: 2 } as const;

/**
 * DISPUTE_CREATED, _RESPONSE_CREATED, _RESOLVED: records the dispute with its evidence deadline (`respond_by`) and
 * flags the disputed charge. A late event never moves a dispute back (a resolved one stays resolved).
 */
export async function recordDispute(
  db: DirectDebitDb,
  event: WebhookEvent<'DISPUTE_CREATED' | 'DISPUTE_RESPONSE_CREATED' | 'DISPUTE_RESOLVED'>,
): Promise<void> {
  const { dispute, response, payment } = event.data;
  const row = {
    id: dispute.id,
    payment_id: payment.id,
    status: dispute.status,
    stage: STAGE[event.eventType],
    reason: dispute.reason ?? null,
    respond_by: dispute.respondBy ?? null,
    responded_at: response?.createdAt ?? null,
    resolved_at: dispute.resolvedAt ?? null,
    lost_reason: dispute.lostReason ?? null,
  };
  const { id: _id, ...update } = row;
  await lockPayment(db, payment.id);
  await db
    .insertInto('disputes')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column('id')
        .doUpdateSet({ ...update, updated_at: sql`now()` })
        .where(sql.ref('excluded.stage'), '>=', sql.ref('disputes.stage')),
    )
    .execute();
  await refreshChargeOfPayment(db, payment.id);
}

/**
 * PAYMENT_REFUNDED: records the refund at its latest status (an older status update never replaces a newer one)
 * and brings the refunded amount of the payment's charge up to date.
 */
export async function recordRefund(db: DirectDebitDb, event: WebhookEvent<'PAYMENT_REFUNDED'>): Promise<void> {
  const { refund, payment } = event.data;
  const row = {
    id: refund.id,
    payment_id: payment.id,
    amount: refund.amount,
    currency: refund.currency,
    status: refund.status,
    status_updated_at: refund.statusUpdatedAt,
    reason: refund.customRefundReason ?? null,
  };
  const { id: _id, ...update } = row;
  await lockPayment(db, payment.id);
  await db
    .insertInto('refunds')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column('id')
        .doUpdateSet({ ...update, updated_at: sql`now()` })
        .where(sql.ref('excluded.status_updated_at'), '>=', sql.ref('refunds.status_updated_at')),
    )
    .execute();
  await refreshChargeOfPayment(db, payment.id);
}
