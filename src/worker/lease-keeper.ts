import type { Logger } from 'pino';
import { eventKey } from '../store/accounts.js';
import type { ClaimedEvent } from '../store/claim.js';
import type { PayhooksDatabase } from '../store/database.js';
import { extendLeases, releaseLeases } from '../store/outcomes.js';
import type { AttemptRun, InFlight } from './in-flight.js';
import type { WorkerEvents } from './worker-events.js';

/** What a {@link LeaseKeeper} needs. */
export interface LeaseKeeperOptions {
  store: PayhooksDatabase;
  workerId: string;
  leaseMs: number;
  logger: Logger;
  events: WorkerEvents;
}

/**
 * Holds the leases of the events this worker claimed: extends them all in one statement every quarter lease
 * (heartbeats), tells a run whether its lease still holds far enough from running out, notices the leases another
 * worker took over, and gives back on stop those it could not record.
 */
export class LeaseKeeper {
  /**
   * Claimed and not yet recorded, by the claimed event itself: running, waiting to run, or having its outcome written.
   * Keyed by the object, not by a text of its key: no string to build per event on the hot path, and an event claimed
   * again after its lease ran out is another entry, which the first one's forget leaves alone.
   */
  readonly #held = new Map<ClaimedEvent, InFlight>();
  readonly #options: LeaseKeeperOptions;
  /** A run does not start this close to the end of its lease: another worker may be about to take the event. */
  readonly safetyMs: number;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
    this.safetyMs = Math.min(options.leaseMs / 4, 5000);
  }

  /** How many events are held. */
  get size(): number {
    return this.#held.size;
  }

  /** The held events. */
  entries(): InFlight[] {
    return [...this.#held.values()];
  }

  /** Takes a claimed event in hand, its lease counted from `claimedAt`. */
  add(event: ClaimedEvent, claimedAt: number): InFlight {
    const entry: InFlight = { event, started: false, leaseUntil: claimedAt + this.#options.leaseMs, lost: false };
    this.#held.set(event, entry);
    return entry;
  }

  /** Lets go of an event whose outcome was written (or given up on): the one {@link add} took. */
  forget(event: ClaimedEvent): void {
    this.#held.delete(event);
  }

  /** Whether the run may go on: not shut down, and the lease is held and far enough from running out. */
  holds(attemptRun: AttemptRun): boolean {
    const { entry } = attemptRun;
    // Shutdown: stop() gives the lease back; a run it abandoned ends here, and records no outcome.
    if (entry.shutdown) return false;
    if (!entry.lost && Date.now() < entry.leaseUntil - this.safetyMs) return true;
    entry.lost = true;
    attemptRun.log.warn('lost the lease (it ran out, or another worker took the event); stopping this run');
    this.#options.events.emit('lease:lost', { eventId: entry.event.eventId });
    this.forget(entry.event);
    return false;
  }

  /** Starts the heartbeats. */
  start(): void {
    this.#heartbeat ??= setInterval(() => void this.heartbeat(), this.#options.leaseMs / 4);
    this.#heartbeat.unref();
  }

  /** Extends the leases of every held event in one statement; an event no longer held is marked lost. */
  async heartbeat(): Promise<void> {
    const entries = this.entries();
    if (entries.length === 0) return;
    const { store, workerId, leaseMs, logger, events } = this.#options;
    const sentAt = Date.now();
    try {
      const still = await extendLeases(
        store,
        workerId,
        entries.map((entry) => entry.event),
        leaseMs,
      );
      for (const entry of entries) {
        // By the token too: the same event claimed again by this worker is another entry, whose lease is not this one's.
        if (still.get(eventKey(entry.event.account, entry.event.eventId)) === entry.event.leaseToken) entry.leaseUntil = sentAt + leaseMs;
        // Once the run's final outcome is handed over, that statement says whether the lease held (and is told as
        // fenced when it did not); its commit may have taken the queue row before this heartbeat read it, which is
        // no fence (a partition test saw that warning for events the same worker had just finished).
        else if (!entry.lost && entry.recording === undefined) {
          // Fenced: the heartbeat extended nothing; the lease is another run's now (or ran out and was claimed again).
          entry.lost = true;
          logger.warn(
            { eventId: entry.event.eventId },
            `fenced: the heartbeat of event ${entry.event.eventId} extended nothing: another run holds its lease now`,
          );
          events.emit('write:fenced', { eventId: entry.event.eventId, what: 'heartbeat' });
          events.emit('lease:lost', { eventId: entry.event.eventId });
        }
      }
    } catch (err) {
      logger.warn({ err }, 'extending leases failed; runs stop before their leases run out unless the next attempt succeeds');
    }
  }

  /** Stops the heartbeats and gives back the leases of the events still held; resolves to how many were given back. */
  async release(): Promise<number> {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    const unrecorded = this.entries().map((entry) => ({
      account: entry.event.account,
      eventId: entry.event.eventId,
      started: entry.started,
    }));
    return releaseLeases(this.#options.store, this.#options.workerId, unrecorded).catch(() => 0);
  }
}
