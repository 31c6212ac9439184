import type { Logger } from 'pino';
import { Batcher } from '../internal/batcher.js';
import { sleep } from '../internal/sleep.js';
import type { PayhooksDatabase } from '../store/database.js';
import { type FencedOutcome, type Outcome, recordOutcomes } from '../store/outcomes.js';
import type { InFlight } from './in-flight.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { WorkerEvents } from './worker-events.js';

/**
 * Outcomes are written together: a batch every few ms, in order (one batch at a time, so a mark lands before its
 * finish). An item is the group of outcomes one run hands over at once (usually a completion and the final state):
 * 1,000 groups are about 2,000 outcomes.
 */
const OUTCOME_BATCH = { maxItems: 1000, maxWaitMs: 2 } as const;
/** Pause before writing an outcome again after the database failed to take it. */
const OUTCOME_RETRY_MS = 1000;

/** What an {@link OutcomeWriter} needs. */
export interface OutcomeWriterOptions {
  store: PayhooksDatabase;
  workerId: string;
  logger: Logger;
  leases: LeaseKeeper;
  events: WorkerEvents;
  /** After each batch is written, with how many outcomes it held (the claim pump claims again and counts them). */
  onWritten: (count: number) => void;
}

/**
 * Writes the outcomes of runs: what a run notes (a handler's completion, failure or giving up) goes out with its next
 * hand-over, its final state last; groups from many runs share one statement, written in order; a statement the
 * database refused is tried again while the run's lease lasts. `drain()` is the final flush.
 */
export class OutcomeWriter {
  readonly #options: OutcomeWriterOptions;
  readonly #batcher: Batcher<FencedOutcome[], boolean[]>;
  /** Set by the worker's stop(): past it, an outcome the database refused is not tried again. */
  #giveUpAt = Number.POSITIVE_INFINITY;

  constructor(options: OutcomeWriterOptions) {
    this.#options = options;
    this.#batcher = new Batcher<FencedOutcome[], boolean[]>({
      ...OUTCOME_BATCH,
      maxConcurrentFlushes: 1,
      flush: async (groups) => {
        const batch = groups.length === 1 ? groups[0]! : groups.flat();
        const startedAt = performance.now();
        const recorded = await recordOutcomes(options.store, options.workerId, batch);
        if (options.events.has('outcomes:written')) {
          options.events.emit('outcomes:written', { count: batch.length, seconds: (performance.now() - startedAt) / 1000 });
        }
        options.onWritten(batch.length);
        const answers: boolean[][] = [];
        let at = 0;
        for (const group of groups) {
          answers.push(recorded.slice(at, at + group.length));
          at += group.length;
        }
        return answers;
      },
    });
  }

  /** From now on, an outcome the database refuses is tried again only until `at` (a `Date.now()` time). */
  giveUpAt(at: number): void {
    this.#giveUpAt = at;
  }

  /**
   * Keeps an outcome of the run to be handed over with the next: the run's final state, or the next handler's start
   * ({@link handOver}), so that it is written as early as before, in one batch item with what follows it.
   */
  note(entry: InFlight, outcome: Outcome): void {
    if (entry.noted) entry.noted.push(outcome);
    else entry.noted = [outcome];
  }

  /** Hands the run's noted outcomes over to be written, if any (nobody waits for them). */
  handOver(entry: InFlight): void {
    const group = this.#takeNoted(entry);
    if (group) this.#write(entry, group).catch(() => undefined);
  }

  /**
   * Hands the run's final outcome over to be written, after what the run noted; `then` runs once it is, with whether
   * the lease was still held.
   */
  record(entry: InFlight, outcome: Outcome, then?: (held: boolean) => void): void {
    const group = this.#takeNoted(entry) ?? [];
    group.push(outcome);
    entry.recording = this.#recordGroup(entry, group, then);
  }

  /** Writes what was handed over (the final flush). */
  drain(): Promise<void> {
    return this.#batcher.drain();
  }

  #takeNoted(entry: InFlight): Outcome[] | undefined {
    const group = entry.noted;
    entry.noted = undefined;
    return group;
  }

  async #recordGroup(entry: InFlight, group: Outcome[], then: ((held: boolean) => void) | undefined): Promise<void> {
    let written: boolean[] | undefined;
    try {
      written = await this.#write(entry, group);
    } catch (err) {
      // The lease will run out and another attempt follow: nothing is lost.
      this.#options.logger.error(
        { err, eventId: entry.event.eventId },
        'could not record the outcome of an event; its lease will run out and it will run again',
      );
    } finally {
      this.#options.leases.forget(entry.event);
    }
    if (written && !written[written.length - 1]) {
      // Fenced: the finish, retry or park did not land, because the event's lease is another run's now.
      this.#options.logger.warn(
        { eventId: entry.event.eventId, outcome: group[group.length - 1]?.kind },
        `fenced: the outcome of event ${entry.event.eventId} was dropped: its lease ran out and the event was claimed again, so the new holder's record stands`,
      );
      this.#options.events.emit('write:fenced', { eventId: entry.event.eventId, what: 'outcome' });
    }
    if (written) then?.(written[written.length - 1]!);
  }

  /**
   * Writes a group of outcomes, trying again while the lease lasts: a run that finished but whose outcome was lost to
   * a database hiccup would otherwise run its handlers again once the lease ran out. Resolves to whether the lease
   * was still held when each was written.
   */
  async #write(entry: InFlight, group: FencedOutcome[]): Promise<boolean[]> {
    for (let tries = 1; ; tries++) {
      try {
        // Each under the lease the run claimed the event with: written only while it still holds (fencing), and with
        // its receipt time, which keeps the history's update to that time's partition. The outcomes are this run's
        // own objects: marked in place, not copied (a copy per outcome was a measurable part of the worker's garbage
        // in a drain's CPU profile).
        const { leaseToken, receivedAt } = entry.event;
        for (const outcome of group) {
          outcome.leaseToken = leaseToken;
          outcome.receivedAt = receivedAt;
        }
        return await this.#batcher.add(group);
      } catch (err) {
        const retryAt = Date.now() + OUTCOME_RETRY_MS;
        if (retryAt >= Math.min(entry.leaseUntil - this.#options.leases.safetyMs, this.#giveUpAt)) throw err;
        this.#options.logger.warn({ err, eventId: entry.event.eventId, tries }, 'could not record the outcome of an event; trying again');
        await sleep(OUTCOME_RETRY_MS);
      }
    }
  }
}
