import type { Logger } from 'pino';
import { within } from '../internal/within.js';
import { type ClaimedEvent, claimEvents } from '../store/claim.js';
import type { PayhooksDatabase } from '../store/database.js';
import { newEventChannel } from '../store/inbox.js';
import { vacuumQueue } from '../store/maintenance.js';
import type { WorkerEvents } from './worker-events.js';

/** How much work a worker holds ahead of its running handlers, by their recent speed. */
const PREFETCH_HORIZON_MS = 1000;
/**
 * Outcomes this worker writes between two vacuums of the queue (see {@link vacuumQueue}), about 25,000 events: at 2 to
 * 3 dead row versions per event the claim never walks more than some tens of thousands of dead entries, autovacuum or
 * not. Not more often: each vacuum reads the whole queue and its indexes, so in a long drain it costs more the deeper
 * the queue (every 10,000 outcomes, a backlog of 100,000 drained 5% slower: 20,702 to 21,067 events/s against
 * 21,877 to 22,565, issue 27).
 */
const QUEUE_VACUUM_EVERY = 50_000;
/**
 * Outcomes since the last vacuum after which a worker that finds the queue empty, with nothing of its own in hand,
 * vacuums it then: the dead entries a drained burst left at the front of the queue would otherwise be walked by the
 * first claims of the next one.
 */
const QUEUE_VACUUM_WHEN_IDLE = 1000;

/**
 * The claim pump's modes:
 *
 * - `stopped`: before `start()` and after `stop()`; nothing is claimed.
 * - `idle`: started, no claim under way and nothing in hand; a NOTIFY, the poll timer or `wake()` starts a claim.
 * - `claiming`: a claim round is under way. It claims as long as there is room and a full claim suggests more is due;
 *   a wake-up meanwhile makes it go round once more instead of starting a second round.
 * - `draining`: no claim under way, events in hand. A run that ends (a free slot) or an outcome written (the next
 *   event of a resource may be due) pumps again; the claim is made for idle slots at once, but to refill the prefetch
 *   only once half of it is gone (fewer, larger claims).
 * - `stopping`: `stop()` began: no new claim starts; a claim under way lands, and its events are dropped by the worker.
 */
export type ClaimPumpMode = 'stopped' | 'idle' | 'claiming' | 'draining' | 'stopping';

/** What a {@link ClaimPump} needs. */
export interface ClaimPumpOptions {
  store: PayhooksDatabase;
  workerId: string;
  logger: Logger;
  events: WorkerEvents;
  concurrency: number;
  maxPrefetch: number;
  leaseMs: number;
  maxAttempts: number;
  pollIntervalMs: number;
  /** The data check's fingerprint the claim compares (see `dataCheckFingerprint`). */
  dataCheck: string;
  /** Events in hand: `unfinished` not yet done running, `held` not yet recorded (running ones included). */
  inHand(): { unfinished: number; held: number };
  /** Takes the claimed events (the worker queues their runs). */
  take(events: ClaimedEvent[], claimedAt: number): void;
}

/**
 * Claims due events for the worker: in batches sized by the free slots and about a second of prefetch by the
 * handlers' recent speed (within `maxPrefetch`), woken by NOTIFY, a poll timer, a run's end or an outcome written.
 * It also vacuums the work queue on its schedule, since the claim is what dead entries slow down.
 */
export class ClaimPump {
  readonly #options: ClaimPumpOptions;
  #mode: ClaimPumpMode = 'stopped';
  /** A wake-up came during a claim round: go round once more. */
  #again = false;
  #round: Promise<void> = Promise.resolve();
  #pollTimer: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  /** Recent time per event, from start to outcome handed over, in ms: sizes the prefetch. */
  #averageRunMs: number | undefined;
  #outcomesSinceVacuum = 0;
  #vacuuming: Promise<void> | undefined;

  constructor(options: ClaimPumpOptions) {
    this.#options = options;
  }

  get mode(): ClaimPumpMode {
    return this.#mode;
  }

  /** LISTENs for new events (polling alone if that fails), starts the poll timer, and resolves after a first round. */
  async start(): Promise<void> {
    if (this.#mode !== 'stopped') return;
    const { store, logger, pollIntervalMs } = this.#options;
    this.#mode = 'idle';
    // The LISTEN connection is made again whenever it is lost (a terminated backend, a server restart, a failover):
    // polling covers the gap, and a claim once it listens again picks up what was notified meanwhile. Through a
    // transaction pooler a LISTEN would hear nothing (another server connection runs it): polling alone.
    if (store.pooler === 'transaction') {
      logger.info({ pollIntervalMs }, `through a transaction pooler: the worker polls every ${pollIntervalMs} ms instead of LISTENing`);
    } else {
      await this.#listen();
    }
    this.#pollTimer = setInterval(() => void this.pump(), pollIntervalMs);
    this.#pollTimer.unref();
    await this.pump();
  }

  async #listen(): Promise<void> {
    const { store, logger } = this.#options;
    try {
      this.#unlisten = await store.listen(newEventChannel(store.schema), () => void this.pump(), {
        lost: (err, retryInMs) => {
          logger.warn(
            { err, retryInMs },
            `LISTEN for new events failed; polling meanwhile, listening again in ${Math.round(retryInMs)} ms`,
          );
          this.#options.events.emit('listen:lost', { error: err, retryInMs });
        },
        resubscribed: () => {
          logger.info('LISTEN for new events is back; claiming once for what arrived meanwhile');
          this.#options.events.emit('listen:resumed', {});
          void this.pump();
        },
      });
    } catch (err) {
      logger.warn({ err }, 'LISTEN failed; relying on polling');
    }
  }

  /** Claims while there is room and something is due; resolves when this round (or the one under way) ends. */
  pump(): Promise<void> {
    if (this.#mode === 'stopped' || this.#mode === 'stopping') return this.#round;
    if (this.#mode === 'claiming') {
      this.#again = true;
      return this.#round;
    }
    this.#mode = 'claiming';
    this.#round = this.#claimWhileDue();
    return this.#round;
  }

  /** A run ended after `ms`: the average sizes the prefetch, and a slot is free to claim for. */
  runEnded(ms: number): void {
    this.#averageRunMs = this.#averageRunMs === undefined ? ms : this.#averageRunMs * 0.9 + ms * 0.1;
    void this.pump();
  }

  /** `count` outcomes were written: the next event of a resource may be due, and the vacuum's count goes on. */
  outcomesWritten(count: number): void {
    void this.pump();
    this.#outcomesSinceVacuum += count;
    this.#vacuumAfter(QUEUE_VACUUM_EVERY);
  }

  /** Stops claiming: no new round starts, the poll timer and LISTEN end, a claim under way lands. */
  async stop(): Promise<void> {
    if (this.#mode === 'stopped') return;
    this.#mode = 'stopping';
    clearInterval(this.#pollTimer);
    await this.#unlisten?.().catch(() => undefined);
    await this.#round;
  }

  /** Waits for a vacuum under way for up to `ms`, then leaves it to finish on its own; the pump is stopped. */
  async finish(ms: number): Promise<void> {
    if (this.#vacuuming) await within(this.#vacuuming, ms);
    this.#mode = 'stopped';
  }

  /** How many events to hold beyond the running ones: about PREFETCH_HORIZON_MS of work, within maxPrefetch. */
  #prefetch(): number {
    const { maxPrefetch, concurrency, leaseMs } = this.#options;
    if (this.#averageRunMs === undefined) return Math.min(maxPrefetch, concurrency);
    const horizon = Math.min(PREFETCH_HORIZON_MS, leaseMs / 4);
    return Math.min(maxPrefetch, Math.floor((concurrency * horizon) / Math.max(this.#averageRunMs, 0.01)));
  }

  async #claimWhileDue(): Promise<void> {
    const { store, workerId, leaseMs, maxAttempts, dataCheck, concurrency, logger, events } = this.#options;
    try {
      do {
        this.#again = false;
        const ahead = this.#prefetch();
        const { unfinished } = this.#options.inHand();
        const room = concurrency + ahead - unfinished;
        // Claim for idle slots at once; to refill the prefetch, wait until half of it is gone (fewer, larger claims).
        if (room <= 0 || (unfinished >= concurrency && room < Math.max(1, ahead / 2))) break;
        const claimed = await claimEvents(store, {
          workerId,
          limit: room,
          leaseMs,
          maxAttempts,
          dataCheck,
          onBuried: (e) => this.#reportBuried(e),
        });
        if (claimed.length > 0) {
          // Told before they are taken: the first runs start as they are queued.
          if (events.has('events:claimed')) events.emit('events:claimed', { workerId, eventIds: claimed.map((e) => e.eventId) });
          this.#options.take(claimed, Date.now());
        }
        if (claimed.length === room) this.#again = true;
        // Idle (a mere pause between claims mid-drain still holds events awaiting their outcome).
        if (claimed.length === 0 && this.#options.inHand().held === 0) this.#vacuumAfter(QUEUE_VACUUM_WHEN_IDLE);
      } while (this.#again && this.#mode === 'claiming');
    } catch (err) {
      logger.warn({ err }, 'claiming events failed; will retry at the next poll');
    } finally {
      if (this.#mode === 'claiming') this.#mode = this.#options.inHand().held > 0 ? 'draining' : 'idle';
    }
  }

  #reportBuried(event: { eventId: string; eventType: string; attempts: number }): void {
    this.#options.logger.error(
      event,
      `event ${event.eventId} is dead: its last allowed attempt (${event.attempts} of ${this.#options.maxAttempts}) never recorded an outcome (the process running it died or lost its lease); replay it once the handler is fixed`,
    );
    this.#options.events.emit('event:dead', {
      eventId: event.eventId,
      eventType: event.eventType,
      attempt: event.attempts,
      lastError: null,
    });
  }

  /** Vacuums the queue in the background once `outcomes` have been written since the last vacuum. */
  #vacuumAfter(outcomes: number): void {
    if (this.#outcomesSinceVacuum < outcomes || this.#vacuuming) return;
    this.#outcomesSinceVacuum = 0;
    const startedAt = performance.now();
    const { store, logger, events } = this.#options;
    this.#vacuuming = vacuumQueue(store)
      .then(
        () => events.emit('queue:vacuumed', { seconds: (performance.now() - startedAt) / 1000 }),
        (err: unknown) => {
          logger.warn({ err }, 'vacuuming the work queue failed; claims may slow until autovacuum reaches it');
          events.emit('queue:vacuumed', { seconds: (performance.now() - startedAt) / 1000, error: err });
        },
      )
      .finally(() => {
        this.#vacuuming = undefined;
      });
  }
}
