import { PayhooksError } from '../errors.js';
import type { PayhooksDatabase } from '../store/database.js';
import { storableHeaders } from '../store/inbox.js';
import { discardHeld, getQuarantined, type QuarantinedDelivery, type QuarantineKind, releaseHeld } from '../store/quarantine.js';
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
 * woken) if they pass. Headers jsonb cannot hold are left out of the event. The row is marked released in the
 * transaction that stores the event, so a release and a discard at the same moment cannot both succeed; it stays, so a
 * repeat of these bytes is answered as a duplicate. Throws {@link QuarantineError} if it is absent, not held (any
 * more: the message says what became of it, and nothing was stored), or still cannot be stored (then it stays held).
 *
 * @example
 * const { eventId, queued } = await releaseQuarantined(store, '12', { unordered: true });
 */
export async function releaseQuarantined(store: PayhooksDatabase, id: string, options: ReleaseOptions = {}): Promise<ReleaseOutcome> {
  const held = await getQuarantined(store, id);
  if (!held) throw new QuarantineError(`No quarantined delivery #${id}.`, 404);
  if (held.state !== 'held') throw notHeld(held, 'release');
  // The bytes read here are the row's for as long as it is held, and releaseHeld stores them only if it still is.
  const { headers, dropped } = storableHeaders(held.headers);
  const read = readDelivery(held.rawBody, headers, { unordered: options.unordered });
  if (!read.ok) {
    throw new QuarantineError(
      `Quarantined delivery #${id} still cannot be stored: ${read.message} ${capitalized(REMEDY[read.kind])}.`,
      409,
    );
  }
  let stored: Awaited<ReturnType<typeof releaseHeld>>;
  try {
    stored = await releaseHeld(store, id, { ...read.event, account: held.account });
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !code.startsWith('22')) throw error;
    throw new QuarantineError(
      `Quarantined delivery #${id} still cannot be stored: Postgres refused its data (SQLSTATE ${code}). ${capitalized(REMEDY.unstorable_event)}.`,
      409,
    );
  }
  if (!stored) throw await resolvedMeanwhile(store, id, 'release');
  return { eventId: read.event.eventId, queued: stored.inserted, droppedHeaders: dropped };
}

/**
 * Discards a held quarantined delivery: its bytes and headers are dropped; its row (reason, count, hash) stays, so a
 * repeat is answered as before and not kept again. Throws {@link QuarantineError} if it is absent or not held (any
 * more: the message says what became of it).
 */
export async function discardQuarantined(store: PayhooksDatabase, id: string): Promise<void> {
  if (!(await discardHeld(store, id))) throw await resolvedMeanwhile(store, id, 'discard');
}

/** Why `attempted` found delivery `id` not held: there is none, or what became of it. */
async function resolvedMeanwhile(store: PayhooksDatabase, id: string, attempted: 'release' | 'discard'): Promise<QuarantineError> {
  const row = await getQuarantined(store, id);
  return row ? notHeld(row, attempted) : new QuarantineError(`No quarantined delivery #${id}.`, 404);
}

/** The refusal of a release or discard of a row already resolved, saying how and when, and that this one did nothing. */
function notHeld(row: QuarantinedDelivery, attempted: 'release' | 'discard'): QuarantineError {
  const at = row.resolvedAt ? ` at ${row.resolvedAt.toISOString()}` : '';
  const message =
    row.state === 'released'
      ? `was already released${at} as event ${JSON.stringify(row.releasedEventId)}; it was not ${attempted === 'release' ? 'stored again' : 'discarded'}.`
      : row.state === 'discarded'
        ? `was already discarded${at}: ${attempted === 'release' ? 'nothing was stored' : 'nothing changed'}.`
        : // Resolved rows never return to held; a row held again would be a bug, said as such rather than as a race.
          `is held, yet could not be ${attempted === 'release' ? 'released' : 'discarded'}; try again.`;
  return new QuarantineError(`Quarantined delivery #${row.id} ${message}`, 409);
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
