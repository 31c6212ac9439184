import { PayhooksError } from '../errors.js';
import { Batcher, BatchItemExpiredError } from '../internal/batcher.js';
import type { PayhooksDatabase } from './database.js';
import { DeadlineExceededError } from './evicting-pool.js';
import { type IncomingEvent, type StoreOutcome, storeEvents } from './inbox.js';

/** How deliveries are grouped into one INSERT; see {@link GROUP_COMMIT_DEFAULTS}. */
export interface GroupCommitOptions {
  /** Rows per statement at most. */
  maxRows?: number | undefined;
  /** How long the first delivery of a batch waits for others to join it, in ms. */
  maxWaitMs?: number | undefined;
  /** Statements under way at once; deliveries arriving meanwhile join the next, larger, batch. */
  maxConcurrentBatches?: number | undefined;
}

/**
 * Defaults of {@link GroupCommitOptions}: a delivery waits at most 2 ms for company, a statement holds at most 500
 * rows (about 1 MB of 2 KB bodies), and 4 statements run at once, which leaves the rest of the pool to the worker
 * and to operators' queries.
 */
export const GROUP_COMMIT_DEFAULTS = { maxRows: 500, maxWaitMs: 2, maxConcurrentBatches: 4 } as const;

/** A delivery that can never be stored (see `unstorableReason`); the receiver answers it 400. */
export class UnstorableEventError extends PayhooksError {
  constructor(reason: string, options?: ErrorOptions) {
    super(`This event cannot be stored: ${reason}.`, options);
  }
}

/**
 * Storing did not finish within the ack budget: the delivery waited for a batch, a database connection or its
 * statement until nobody waited for it any more. Its row may still be committed by a statement already sent.
 */
export class StorageTimeoutError extends PayhooksError {
  constructor(ackBudgetMs: number, options?: ErrorOptions) {
    super(`Storage did not answer within the ack budget of ${ackBudgetMs} ms.`, options);
  }
}

/** Stores deliveries in batches: concurrent calls share one statement and one commit. */
export interface GroupCommit {
  /**
   * Stores `event` with the deliveries that arrive around it; resolves once the statement holding its row has
   * committed, to whether it was new and its delivery count. The caller checks `unstorableReason` first (the
   * receiver does, in readDelivery, to quarantine what fails it). Rejects with {@link UnstorableEventError} for an
   * event the database refuses on its data all the same, with {@link StorageTimeoutError} once the ack budget has passed, and with the
   * database's error when its batch could not be written.
   */
  store(event: IncomingEvent): Promise<StoreOutcome>;
  /** Writes what is waiting now and resolves once every batch under way has settled. */
  drain(): Promise<void>;
}

/**
 * Group commit for the receiver: deliveries that arrive within a few ms of each other are written by one
 * multi-row INSERT … ON CONFLICT, and each is answered once that statement has committed.
 *
 * A statement that fails on its data (SQLSTATE class 22, which a row passing `unstorableReason` should never
 * cause) is retried row by row, so that one bad row cannot fail the deliveries it shared a batch with: the row
 * that fails alone is refused with {@link UnstorableEventError}, the others are stored. Any other failure (the
 * database is away, a timeout) fails the whole batch, and each of its deliveries is answered 503.
 *
 * With `ackBudgetMs`, each delivery is given up that long after it arrived, wherever it waits: for a batch (one
 * that expired while every batch slot was taken is never written), for a connection of the pool, or for its
 * statement, which gives up (and destroys its connection) once the last delivery of its batch has expired. So
 * after a database went silent, nothing queued behind the stuck statements is written after the fact, and the
 * deliveries that arrive once it answers again do not wait behind them.
 *
 * @example
 * const ingest = createGroupCommit(store, {}, 5000);
 * const { inserted, deliveries } = await ingest.store(event);
 */
export function createGroupCommit(store: PayhooksDatabase, options: GroupCommitOptions = {}, ackBudgetMs?: number): GroupCommit {
  const settings = groupCommitSettings(options);
  const batcher = new Batcher<IncomingEvent, StoreOutcome | UnstorableEventError>({
    maxItems: settings.maxRows,
    maxWaitMs: settings.maxWaitMs,
    maxConcurrentFlushes: settings.maxConcurrentBatches,
    // A delivery past the ack budget has been answered 503 already; writing it must not hold back the next ones.
    itemTimeoutMs: ackBudgetMs,
    flush: (events, deadline) => writeBatch(deadline === undefined ? store : store.withDeadline(deadline), events),
  });
  return {
    async store(event) {
      let outcome: StoreOutcome | UnstorableEventError;
      try {
        outcome = await batcher.add(event);
      } catch (error) {
        if (ackBudgetMs !== undefined && isPastDeadline(error)) throw new StorageTimeoutError(ackBudgetMs, { cause: error });
        throw error;
      }
      if (outcome instanceof UnstorableEventError) throw outcome;
      return outcome;
    },
    drain: () => batcher.drain(),
  };
}

/**
 * {@link GroupCommitOptions} with defaults applied, checked: a RangeError names the option and what it takes.
 *
 * @example
 * groupCommitSettings({ maxRows: 0 }); // throws RangeError: groupCommit.maxRows must be a whole number of at least 1, not 0.
 */
export function groupCommitSettings(options: GroupCommitOptions): Required<{ [K in keyof GroupCommitOptions]: number }> {
  const settings = {
    maxRows: options.maxRows ?? GROUP_COMMIT_DEFAULTS.maxRows,
    maxWaitMs: options.maxWaitMs ?? GROUP_COMMIT_DEFAULTS.maxWaitMs,
    maxConcurrentBatches: options.maxConcurrentBatches ?? GROUP_COMMIT_DEFAULTS.maxConcurrentBatches,
  };
  for (const name of ['maxRows', 'maxConcurrentBatches'] as const) {
    const value = settings[name];
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`groupCommit.${name} must be a whole number of at least 1, not ${String(value)}.`);
    }
  }
  if (typeof settings.maxWaitMs !== 'number' || !Number.isFinite(settings.maxWaitMs) || settings.maxWaitMs < 0) {
    throw new RangeError(`groupCommit.maxWaitMs must be a number of milliseconds of at least 0, not ${String(settings.maxWaitMs)}.`);
  }
  return settings;
}

async function writeBatch(store: PayhooksDatabase, events: IncomingEvent[]): Promise<(StoreOutcome | UnstorableEventError)[]> {
  try {
    return await storeEvents(store, events);
  } catch (error) {
    if (!isDataException(error)) throw error;
    if (events.length === 1) return [new UnstorableEventError(dataExceptionReason(error), { cause: error })];
    // One row the checks let through broke the statement: find it by writing each row on its own.
    return Promise.all(events.map(async (event) => (await writeBatch(store, [event]))[0]!));
  }
}

/** A batch given up at its deadline: waiting for a batch or a connection, or its statement unanswered. */
function isPastDeadline(error: unknown): boolean {
  return (
    error instanceof BatchItemExpiredError ||
    error instanceof DeadlineExceededError ||
    (error as { message?: unknown } | null)?.message === 'Query read timeout'
  );
}

/** SQLSTATE class 22: the data of a row, not the database, is at fault; writing it again fails again. */
function isDataException(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}

// The code only: Postgres quotes the offending value in its messages, and that may be personal data.
function dataExceptionReason(error: unknown): string {
  return `Postgres refused its data (SQLSTATE ${(error as { code: string }).code})`;
}
