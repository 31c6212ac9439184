import { sql } from 'kysely';
import type { ApiClient } from '../client/api-client.js';
import { ApiError, RateLimitError } from '../client/errors.js';
import { RepeatedPageError } from '../client/pagination.js';
import { PayhooksError } from '../errors.js';
import type { WebhookEventRecord } from '../events/rest-contract.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import type { PayhooksDatabase } from '../store/database.js';

// Reconciliation finds the events the sender gave up on (or has not delivered yet) that the inbox never stored,
// and asks the service to send them again. The delivery history is read page by page, so memory stays bounded
// by one page, and the inbox is asked about a whole page of eventIds in one query.

/** The defaults of {@link reconcile}. */
export const RECONCILE_DEFAULTS = {
  /** How far back a run looks: longer than the sender's retry horizon of 4 days 6½ hours. */
  lookbackMs: 5 * 24 * 60 * 60 * 1000,
  /**
   * A pending delivery whose next attempt fell due less than this long ago is in flight: the sender is sending it now.
   * Six times the 10 s a receiver has to answer, for clock skew and a busy sender.
   */
  inFlightMs: 60_000,
} as const;

/** Options of {@link reconcile}. */
export interface ReconcileOptions {
  store: PayhooksDatabase;
  /** An API client of `account`; give it `createPostgresRateLimiter(store)` as `rateLimit` to share the budget with serve. */
  api: Pick<ApiClient, 'webhookEvents'>;
  /**
   * The account whose delivery history `api` reads: an event counts as stored only when the inbox holds it for this
   * account. Default `default`, the implicit account of a single-account installation. Run once per account.
   */
  account?: string | undefined;
  /** Only delivery records created at or after this time. Default: {@link RECONCILE_DEFAULTS.lookbackMs} ago. */
  since?: Date | undefined;
  /** The endpoint whose deliveries count. Default: the only endpoint in the history (several: an error). */
  endpointId?: string | undefined;
  /** List what is missing without asking for anything to be sent. */
  dryRun?: boolean | undefined;
  /** See {@link RECONCILE_DEFAULTS.inFlightMs}. */
  inFlightMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** An event the inbox never stored and that could not be sent again. */
export interface UnrecoveredEvent {
  eventId: string;
  eventType: string;
  reason: string;
}

/** What a run found and did. */
export interface ReconcileReport {
  /** The account whose history was read. */
  account: string;
  since: Date;
  endpointId: string | null;
  /** Delivery records read (created since `since`, of the endpoint). */
  listed: number;
  /** Events among them that the inbox never stored, and whose delivery is not under way. */
  missing: { eventId: string; eventType: string; status: string }[];
  /**
   * Events the inbox has not stored yet whose delivery is under way ({@link deliveryInFlight}): not
   * missing, and not asked for again (that would only send them twice). A later run finds them stored, or missing.
   */
  inFlight: { eventId: string; eventType: string }[];
  /** Missing events the service was asked to send again, and accepted. */
  resent: string[];
  unrecovered: UnrecoveredEvent[];
  /**
   * What kept the run from reading the whole history (the service answered the same page again, say): the events
   * found before it were still checked and re-sent, the rest were not looked at. Empty after a complete run.
   */
  warnings: string[];
}

/** The history spans several endpoints and none was named: retrying another app's deliveries would be wrong. */
export class AmbiguousEndpointError extends PayhooksError {
  constructor(readonly endpoints: readonly { id: string; url: string }[]) {
    super(
      `The delivery history holds ${endpoints.length} webhook endpoints: ${endpoints.map((e) => `${e.id} (${e.url})`).join(', ')}. ` +
        'Name the one this payhooks receives for with --endpoint ID (reconcile.endpointId in the configuration file).',
    );
  }
}

/**
 * Whether the sender is delivering this record now: it is `pending` and its next attempt fell due in the last
 * `inFlightMs` (a record that shows no next attempt and has no attempt yet: its creation). A next attempt still to
 * come is not: the last one failed, and the event is missing until it succeeds; asking for it early costs a duplicate
 * the receiver drops. A clock ahead of this one makes a new delivery look not yet due: it is counted missing, as
 * before this check existed, never skipped wrongly.
 *
 * @example
 * deliveryInFlight({ ...record, status: 'pending', nextAttemptAt: new Date().toISOString() }); // true
 */
export function deliveryInFlight(
  record: Pick<WebhookEventRecord, 'status' | 'nextAttemptAt' | 'attempts' | 'createdAt'>,
  now = Date.now(),
  inFlightMs: number = RECONCILE_DEFAULTS.inFlightMs,
): boolean {
  if (record.status !== 'pending') return false;
  const dueAt = record.nextAttemptAt ?? (record.attempts.length === 0 ? record.createdAt : null);
  if (dueAt == null) return false;
  const dueFor = now - Date.parse(dueAt);
  return dueFor >= 0 && dueFor < inFlightMs;
}

/** Which of these eventIds the inbox holds for `account` (another account's event of the same id is not this one). */
async function storedAmong(store: PayhooksDatabase, account: string, eventIds: readonly string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const { rows } = await sql<{ event_id: string }>`
    select event_id from ${sql.id(store.schema, 'inbox_events')}
    where event_id = any(${sql.val([...eventIds])}::text[]) and account = ${account}`.execute(store.db.withoutPlugins());
  return new Set(rows.map((row) => row.event_id));
}

/**
 * Lists the delivery history since `since`, finds the events the inbox never stored, and asks the service to
 * re-send each one (`POST /v1/webhook-events/{id}/retry`); the receiver then stores them and the worker runs them
 * as any delivery. A refused retry (a 4xx other than 429) is reported as unrecovered with the service's reason,
 * and `payhooks backfill` brings customers and invoices up to date in that case.
 *
 * @example
 * const report = await reconcile({ store, api, account: 'gym-north', since: new Date(Date.now() - 7 * 86_400_000) });
 * console.log(`${report.missing.length} missing, ${report.resent.length} re-sent`);
 */
export async function reconcile(options: ReconcileOptions): Promise<ReconcileReport> {
  const since = options.since ?? new Date(Date.now() - RECONCILE_DEFAULTS.lookbackMs);
  const inFlightMs = options.inFlightMs ?? RECONCILE_DEFAULTS.inFlightMs;
  if (!(inFlightMs >= 0)) throw new RangeError(`inFlightMs must be a number of milliseconds of at least 0, not ${inFlightMs}.`);
  const report: ReconcileReport = {
    account: options.account ?? DEFAULT_ACCOUNT,
    since,
    endpointId: options.endpointId ?? null,
    listed: 0,
    missing: [],
    inFlight: [],
    resent: [],
    unrecovered: [],
    warnings: [],
  };
  const endpoints = new Map<string, string>();
  // The history is oldest first; each page is checked against the inbox at once, then retried.
  const candidates: WebhookEventRecord[] = [];
  const seen = new Set<string>();
  let page: WebhookEventRecord[] = [];
  const flush = async () => {
    const stored = await storedAmong(
      options.store,
      report.account,
      page.map((record) => record.eventId),
    );
    const now = Date.now();
    for (const record of page) {
      if (stored.has(record.eventId) || seen.has(record.eventId)) continue;
      seen.add(record.eventId);
      if (deliveryInFlight(record, now, inFlightMs)) report.inFlight.push({ eventId: record.eventId, eventType: record.eventType });
      else candidates.push(record);
    }
    page = [];
  };
  const query = options.endpointId ? { endpointId: options.endpointId } : {};
  try {
    for await (const record of options.api.webhookEvents.iterate(query, { signal: options.signal })) {
      if (Date.parse(record.createdAt) < since.getTime()) continue;
      if (options.endpointId && record.endpointId !== options.endpointId) continue;
      endpoints.set(record.endpointId, String((record as { url?: unknown }).url ?? '?'));
      report.listed++;
      page.push(record);
      if (page.length >= 100) await flush();
    }
  } catch (err) {
    // Reading the same page forever would drain the API budget every process on this database shares; what
    // was read is still worth re-sending.
    if (!(err instanceof RepeatedPageError)) throw err;
    report.warnings.push(`The delivery history (GET /v1/webhook-events) could not be read to its end: ${PayhooksError.describe(err)}`);
  }
  await flush();
  if (!options.endpointId && endpoints.size > 1) {
    throw new AmbiguousEndpointError([...endpoints].map(([id, url]) => ({ id, url })));
  }
  report.endpointId = options.endpointId ?? [...endpoints.keys()][0] ?? null;
  report.missing = candidates.map((record) => ({ eventId: record.eventId, eventType: record.eventType, status: record.status }));
  if (options.dryRun) return report;
  for (const record of candidates) {
    options.signal?.throwIfAborted();
    try {
      await options.api.webhookEvents.retry(record.id, { signal: options.signal });
      report.resent.push(record.eventId);
    } catch (err) {
      // 429s and 5xx were already retried by the client; what is left is the service's answer for this record.
      if (err instanceof ApiError && !(err instanceof RateLimitError) && err.status !== undefined && err.status < 500) {
        report.unrecovered.push({ eventId: record.eventId, eventType: record.eventType, reason: err.message });
        continue;
      }
      throw err;
    }
  }
  return report;
}
