import { sql } from 'kysely';
import type { WebhookEvent } from 'payhooks';
import type { DirectDebitDb } from './tables.js';

/**
 * SUBSCRIPTION_CREATED, _UPDATED, _CANCELED: keeps the subscription's status and collection period current. Events
 * arrive in any order, so a row moves only forward: a canceled subscription stays canceled, and an older state (an
 * earlier last collection) never replaces a newer one.
 */
export async function recordSubscription(
  db: DirectDebitDb,
  event: WebhookEvent<'SUBSCRIPTION_CREATED' | 'SUBSCRIPTION_UPDATED' | 'SUBSCRIPTION_CANCELED'>,
): Promise<void> {
  const { subscription, customer } = event.data;
  const canceled = event.eventType === 'SUBSCRIPTION_CANCELED' || subscription.status === 'CANCELED';
  const row = {
    id: subscription.id,
    customer_id: customer.id,
    status: subscription.status ?? null,
    is_active: subscription.isActive && !canceled,
    canceled,
    first_collection_at: subscription.firstCollectionDate,
    last_collection_at: subscription.lastCollectionDate ?? null,
    next_collection_at: canceled ? null : (subscription.nextCollectionDate ?? null),
    number_of_payments: subscription.numberOfPayments ?? null,
    last_event_id: event.eventId,
  };
  const { id: _id, ...update } = row;
  await db
    .insertInto('subscriptions')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column('id')
        .doUpdateSet({ ...update, updated_at: sql`now()` })
        .where((eb) =>
          eb.and([
            eb('subscriptions.canceled', '=', false),
            eb.or([
              eb(sql.ref('excluded.canceled'), '=', true),
              eb(
                sql`coalesce(excluded.last_collection_at, '-infinity'::timestamptz)`,
                '>=',
                sql`coalesce(subscriptions.last_collection_at, '-infinity'::timestamptz)`,
              ),
            ]),
          ]),
        ),
    )
    .execute();
}
