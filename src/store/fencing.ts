import { sql, type Transaction } from 'kysely';
import { PayhooksError } from '../errors.js';
import type { PayhooksTables } from './schema.js';

/** What a fenced write was: see {@link LeaseFencedError}. */
export type FencedWrite = 'outcome' | 'heartbeat' | 'effect-step' | 'transaction';

/**
 * A write a worker made under a lease it no longer holds (migrations/019): the event was claimed again, by another
 * worker or by this one, after the lease ran out. Nothing was written; the run that made it stops.
 */
export class LeaseFencedError extends PayhooksError {
  constructor(
    readonly what: FencedWrite,
    readonly eventId: string,
    detail: string,
  ) {
    super(
      `fenced: this run's lease on event ${eventId} was taken over (it ran out and the event was claimed again), so its ${what} was not written: ${detail}`,
    );
    this.name = 'LeaseFencedError';
  }
}

/**
 * In a handler's transaction (`ctx.transaction`), before its completion is marked: locks the event's queue row if it
 * still holds `leaseToken`, so that no claim takes the event before this transaction commits (the claim skips locked
 * rows); throws {@link LeaseFencedError} when it does not, which rolls the handler's writes back: they are not applied
 * over the new holder's.
 */
export async function holdLeaseIn(
  trx: Transaction<PayhooksTables>,
  schema: string,
  event: { account: string; eventId: string; leaseToken: string },
): Promise<void> {
  const { rows } = await sql<{ held: number }>`select 1 as held from ${sql.id(schema, 'inbox_queue')}
    where event_id = ${event.eventId} and account = ${event.account} and lease_token = ${event.leaseToken}::bigint
    for no key update`.execute(trx);
  if (rows.length === 0) {
    throw new LeaseFencedError('transaction', event.eventId, "the handler's transaction was rolled back");
  }
}
