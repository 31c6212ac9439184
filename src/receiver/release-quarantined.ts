import { PayhooksError } from '../errors.js';
import type { PayhooksDatabase } from '../store/database.js';
import { storableHeaders, storeEvents } from '../store/inbox.js';
import { getQuarantined, type QuarantineKind, resolveQuarantined } from '../store/quarantine.js';
import { readDelivery } from './read-delivery.js';

/** A quarantined delivery that is absent, already resolved, or still cannot be stored; the message says which. */
export class QuarantineError extends PayhooksError {
  constructor(
    message: string,
    /** 404: no such delivery; 409: not held any more, or still not storable. */
    readonly status: 404 | 409,
  ) {
    super(message);
  }
}

/** Options of {@link releaseQuarantined}. */
export interface ReleaseOptions {
  /** Store it without its resource key, so without per-resource order: the fix for `unstorable_resource`. */
  unordered?: boolean | undefined;
}

/** What {@link releaseQuarantined} did. */
export interface ReleaseOutcome {
  eventId: string;
  /** false: the ledger already held the eventId (a duplicate; it is not run again). */
  queued: boolean;
  /** Headers left out because jsonb cannot hold them (named, quoted); they stay on the quarantine row. */
  droppedHeaders: string[];
}

/** What fixes each kind, for the message of a release that still fails (docs/receiver.md#quarantine). */
const REMEDY: Record<QuarantineKind, string> = {
  not_utf8: 'the sender must send the event again with a valid body; discard this one',
  not_json: 'the sender must send the event again with a valid body; discard this one',
  not_envelope:
    "its eventId or eventType is the sender's and cannot be changed here without breaking deduplication: have the sender fix and resend it, then discard this one",
  unstorable_resource: 'release it with --unordered to store it without per-resource order, or discard it',
  unstorable_event: 'if Postgres refused the row, fix the database (e.g. its encoding) and release again, or discard it',
};

/**
 * Releases a held quarantined delivery: runs the receiver's checks on its exact bytes again, with the current code
 * and the operator's choice (`unordered`), and stores it as an event (deduplicated by the ledger, queued, workers
 * woken) if they pass. Headers jsonb cannot hold are left out of the event. The quarantine row stays, marked
 * released, so a repeat of these bytes is answered as a duplicate. Throws {@link QuarantineError} if it is absent, not
 * held, or still cannot be stored (then it stays held).
 *
 * @example
 * const { eventId, queued } = await releaseQuarantined(store, '12', { unordered: true });
 */
export async function releaseQuarantined(store: PayhooksDatabase, id: string, options: ReleaseOptions = {}): Promise<ReleaseOutcome> {
  const held = await getQuarantined(store, id);
  if (!held) throw new QuarantineError(`No quarantined delivery #${id}.`, 404);
  if (held.state !== 'held') throw new QuarantineError(`Quarantined delivery #${id} was ${held.state} already.`, 409);
  const { headers, dropped } = storableHeaders(held.headers);
  const read = readDelivery(held.rawBody, headers, { unordered: options.unordered });
  if (!read.ok) {
    throw new QuarantineError(
      `Quarantined delivery #${id} still cannot be stored: ${read.message} ${capitalized(REMEDY[read.kind])}.`,
      409,
    );
  }
  let inserted: boolean;
  try {
    inserted = (await storeEvents(store, [read.event]))[0]!.inserted;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !code.startsWith('22')) throw error;
    throw new QuarantineError(
      `Quarantined delivery #${id} still cannot be stored: Postgres refused its data (SQLSTATE ${code}). ${capitalized(REMEDY.unstorable_event)}.`,
      409,
    );
  }
  await resolveQuarantined(store, id, { state: 'released', eventId: read.event.eventId });
  return { eventId: read.event.eventId, queued: inserted, droppedHeaders: dropped };
}

/**
 * Discards a held quarantined delivery: its bytes and headers are dropped; its row (reason, count, hash) stays, so a
 * repeat is answered as before and not kept again. Throws {@link QuarantineError} if it is absent or not held.
 */
export async function discardQuarantined(store: PayhooksDatabase, id: string): Promise<void> {
  if (await resolveQuarantined(store, id, { state: 'discarded' })) return;
  const row = await getQuarantined(store, id);
  if (!row) throw new QuarantineError(`No quarantined delivery #${id}.`, 404);
  throw new QuarantineError(`Quarantined delivery #${id} was ${row.state} already.`, 409);
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
