import type { Logger } from 'pino';
import { errorResponse } from '../internal/error-response.js';
import { within } from '../internal/within.js';
import type { PayhooksDatabase } from '../store/database.js';
import { type QuarantineReceipt, quarantineDelivery } from '../store/quarantine.js';
import { type DeliveryNote, ok } from './delivery-note.js';
import type { UnstorableDelivery } from './read-delivery.js';
import type { ReceiveResponse } from './receiver.js';

/** Where and within what {@link quarantineAnswer} keeps a delivery. */
export interface QuarantineKeeping {
  store: PayhooksDatabase;
  ackBudgetMs: number;
  maxQuarantined: number;
  log: Logger | undefined;
}

/**
 * A signed delivery that cannot be stored as an event: kept in the quarantine, byte for byte, and answered 400 with
 * the reason and where it is kept, the same way on every repeat (docs/receiver.md#quarantine). 503 when it could
 * not be kept (storage away, or the quarantine full), so that the sender keeps it and retries.
 */
export async function quarantineAnswer(
  account: string,
  refusal: UnstorableDelivery,
  rawBody: Uint8Array,
  headers: Record<string, string>,
  note: DeliveryNote,
  keeping: QuarantineKeeping,
): Promise<ReceiveResponse> {
  const { store, ackBudgetMs, maxQuarantined, log } = keeping;
  const { eventId, eventType } = refusal;
  if (eventType !== undefined && !eventType.includes('\u0000')) note.eventType = eventType;
  if (eventId !== undefined && !eventId.includes('\u0000')) note.eventId = eventId;
  const logged = { kind: refusal.kind, eventType: note.eventType };
  const kept = quarantineDelivery(
    store,
    { account, kind: refusal.kind, reason: refusal.message, eventId, eventType, rawBody, headers },
    maxQuarantined,
  );
  let receipt: QuarantineReceipt | undefined | 'timeout';
  try {
    receipt = await within(kept, ackBudgetMs);
  } catch (cause) {
    log?.error({ err: cause, ...logged }, 'could not quarantine an unstorable delivery; answering 503 so the sender retries');
    return errorResponse(503, 'Storage is unavailable; the delivery was not accepted and should be retried.');
  }
  if (receipt === 'timeout') {
    // It may still be kept; the sender's retry then counts on its row.
    kept.catch(() => undefined);
    log?.error({ ...logged, ackBudgetMs }, 'quarantining did not finish within the ack budget; answering 503');
    return errorResponse(503, 'Storage did not answer in time; the delivery was not accepted and should be retried.');
  }
  if (receipt === undefined) {
    log?.error(
      { ...logged, maxQuarantined },
      'the quarantine is full: an unstorable delivery was not kept; answering 503 so the sender keeps it',
    );
    return errorResponse(
      503,
      'The delivery cannot be stored as an event and the quarantine is full; it was not accepted and should be retried.',
    );
  }
  if (receipt.state === 'released') {
    // An operator released an earlier delivery of these bytes as an event: this one is its duplicate.
    note.duplicate = true;
    return ok({ received: true, duplicate: true });
  }
  note.quarantined = true;
  log?.warn({ ...logged, quarantineId: receipt.id, deliveries: receipt.deliveries }, refusal.logLine);
  return errorResponse(400, `${refusal.message} The delivery is kept in quarantine as #${receipt.id}.`);
}
