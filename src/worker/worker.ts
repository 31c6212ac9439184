import { hostname } from 'node:os';
import { capText, describeThrown } from '../internal/scrub.js';
import { lazyScrubbingChild } from '../logger.js';
import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import { parseBodyJson, parseJsonEvent, type UnknownEvent, type WebhookEvent } from '../events/index.js';
import { dataCheckFingerprint, storedValidEvent } from '../events/parse-event.js';
import { claimEvents, type ClaimedEvent } from '../store/claim.js';
import { assertSchemaName, type PayhooksDatabase } from '../store/database.js';
import { newEventChannel } from '../store/inbox.js';
import { appSearchPath, setLocalSearchPath } from '../store/migrate.js';
import { Batcher } from '../internal/batcher.js';
import { TaskQueue } from '../internal/task-queue.js';
import { within } from '../internal/within.js';
import { extendLeases, type FinalStatus, markHandlerCompleted, type Outcome, recordOutcomes, releaseLeases } from '../store/outcomes.js';
import type { PayhooksTables } from '../store/schema.js';
import { WORKER_DEFAULTS } from './defaults.js';
import { eventRetryDelay, type BackoffOptions } from './retry-delay.js';
import { vacuumQueue } from '../store/maintenance.js';
import { DeadLetterError, type FailureVerdict, failureVerdict, type HandlerFailure, unstorableTextExplained } from './handler-errors.js';
import type { GivenUpHandler } from '../store/claim.js';
import type { HandlerContext, HandlerRegistry, RegisteredHandler } from './handlers.js';
import { createEffectRunner, EffectNeedsReviewError, type EffectRunner } from './effects.js';
import type { Span } from '@opentelemetry/api';
import { failSpan, type InSpanOptions, inSpan, linksTo, markSpanFailed, SPAN_KIND } from '../internal/tracing.js';

/** One run of one handler for one event, for metrics. */
export interface HandlerRunObservation {
  /** The handler's name: yours, or a sink's (`mirror`, `forward:<name>`, `broker:<name>`, `connector:<name>`). */
  handler: string;
  eventType: string;
  failed: boolean;
  seconds: number;
}

/** Options of the worker; each default is in {@link WORKER_DEFAULTS}. */
export interface WorkerOptions<Api = unknown> {
  store: PayhooksDatabase;
  registry: HandlerRegistry<Api>;
  logger: Logger;
  api?: Api | undefined;
  /** Called after each handler run, failed or not (metrics: `createPayhooksMetrics`). */
  onHandlerRun?: ((run: HandlerRunObservation) => void) | undefined;
  /** Called once an event was recorded dead by this worker (metrics: `payhooks_events_dead_total`). */
  onEventDead?: ((event: { eventType: string }) => void) | undefined;
  /** Identifies this worker in leases. Default `<hostname>:<pid>:<random>`. */
  workerId?: string | undefined;
  /** Events run at once by this process. Default 4. */
  concurrency?: number | undefined;
  /**
   * Events claimed ahead of those running, at most (0: claim only for free slots). The worker holds about one second
   * of work ahead, by the handlers' recent speed, up to this many. Default 200.
   */
  maxPrefetch?: number | undefined;
  /**
   * How long a claim holds an event before another worker may take it; must exceed the handler timeout.
   * Default the longer of 60 s and twice `handlerTimeoutMs`.
   */
  leaseMs?: number | undefined;
  /** A handler running longer fails (and its signal aborts). Default 30 s. */
  handlerTimeoutMs?: number | undefined;
  /** Attempts before an event is dead. Default 10. */
  maxAttempts?: number | undefined;
  /** Fallback polling when no notification arrives. Default 1000 ms. */
  pollIntervalMs?: number | undefined;
  /** Retry spacing. Default 1 s doubling per attempt, capped at 1 hour, with jitter. */
  backoff?: BackoffOptions | undefined;
  /**
   * How long `stop()` lets running handlers finish before aborting them, when it is not given a timeout. Default 30 s.
   * Keep it inside the grace period of whatever stops the process (Kubernetes allows 30 s before SIGKILL).
   */
  stopTimeoutMs?: number | undefined;
  /**
   * The schema of the app's own tables: `ctx.transaction` runs `set local search_path to <appSchema>, public`
   * before the handler's function, as the app's migrations do ({@link migrateApp}). Default `public`.
   */
  appSchema?: string | undefined;
}

/** Lifecycle of a running worker. */
export interface Worker {
  readonly workerId: string;
  /** Starts claiming: LISTEN for new events, poll as a fallback. Resolves after the first claim round. */
  start(): Promise<void>;
  /** Looks for due events now (the receiver calls it after storing one). */
  wake(): void;
  /**
   * Stops claiming, lets running handlers finish for up to `timeoutMs` (default the worker's `stopTimeoutMs`), aborts the rest,
   * and gives unfinished leases back. Claiming has stopped when the call returns its promise.
   */
  stop(timeoutMs?: number): Promise<void>;
}

interface InFlight {
  event: ClaimedEvent;
  started: boolean;
  /** Set by stop() when it aborts the run (the reason): the lease is given back there, and nothing is recorded. */
  shutdown?: Error | undefined;
  /** The shutdown signal's controller, made only when a handler asks for a signal (see `shutdownSignal`). */
  abort?: AbortController | undefined;
  /** By this process's clock, when the lease runs out unless extended (with a margin: see `leaseSafetyMs`). */
  leaseUntil: number;
  /** Another worker has taken the event (its lease ran out): run no further handler, record nothing. */
  lost: boolean;
  /** Outcomes of this run noted and not yet handed over to be written (see `note`). */
  noted?: Outcome[] | undefined;
  /** The writing of the run's final outcome, once handed over: stop() waits for it. */
  recording?: Promise<void> | undefined;
  /** The attempt's `webhook.process` span, once it runs: told how the attempt ended. */
  span?: Span | undefined;
}

/** What the handlers of one attempt of an event share. */
class AttemptRun {
  /** `ctx.shared`'s values, made on first use: the handlers of this attempt share a read, the next attempt reads afresh. */
  shared: Map<string, Promise<unknown>> | undefined;
  readonly entry: InFlight;
  readonly #parent: Logger;
  #log: Logger | undefined;

  constructor(entry: InFlight, parent: Logger) {
    this.entry = entry;
    this.#parent = parent;
  }

  /**
   * The event's logger (each handler's is a child of it), made on first use: most runs log nothing. Handlers log
   * through it too: a handler that logs the event must not put personal data into the app's logs.
   */
  get log(): Logger {
    const { event } = this.entry;
    this.#log ??= lazyScrubbingChild(this.#parent, { eventId: event.eventId, eventType: event.eventType, attempt: event.attempt });
    return this.#log;
  }
}

/** A handler's run of this attempt, ended now: what its completion or attempt record carries. */
function handlerRun(event: ClaimedEvent, startedAt: Date): { attempt: number; startedAt: Date; endedAt: Date } {
  return { attempt: event.attempt, startedAt, endedAt: new Date() };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null | undefined)?.then === 'function';
}

/** A stored body as its handlers get it, or why the event is invalid (with the failing paths, for the log). */
type StoredEvent = { ok: true; event: WebhookEvent | UnknownEvent } | { ok: false; lastError: string; issues?: string[] | undefined };

function readStoredEvent({ eventId, eventType, rawBody, dataChecked }: ClaimedEvent): StoredEvent {
  // Found certainly valid by a receiver of the same schemas: nothing to check, and the body is parsed only if a handler
  // reads the data (a third of a no-op event's CPU was that JSON.parse and the garbage it left).
  if (dataChecked) return { ok: true, event: storedValidEvent(eventId, eventType, rawBody) };
  let json: unknown;
  try {
    json = parseBodyJson(rawBody);
  } catch {
    // The receiver only stores JSON; a row written by other means can still be broken, and retrying won't mend it.
    return { ok: false, lastError: 'The stored body is not valid JSON.' };
  }
  const parsed = parseJsonEvent(json);
  if (parsed.ok) return parsed;
  return { ok: false, lastError: capText(parsed.error.message), issues: parsed.error.issues.map((i) => i.path) };
}

class HandlerTimeoutError extends Error {
  constructor(handler: string, ms: number) {
    super(`handler ${handler} timed out after ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

/**
 * The worker's numbers with their defaults applied, checked: a RangeError names the option and what it takes.
 * `createPayhooks` calls it when it is created, so a mistake fails there rather than at `start()`.
 *
 * @example
 * workerSettings({ maxAttempts: 0 }); // throws RangeError: maxAttempts must be a whole number of at least 1, not 0.
 */
export function workerSettings(
  options: Pick<
    WorkerOptions,
    'concurrency' | 'maxPrefetch' | 'handlerTimeoutMs' | 'leaseMs' | 'maxAttempts' | 'pollIntervalMs' | 'stopTimeoutMs' | 'appSchema'
  >,
) {
  const concurrency = options.concurrency ?? WORKER_DEFAULTS.concurrency;
  const maxPrefetch = options.maxPrefetch ?? WORKER_DEFAULTS.maxPrefetch;
  if (!Number.isSafeInteger(maxPrefetch) || maxPrefetch < 0) {
    throw new RangeError(`maxPrefetch must be a whole number of at least 0, not ${maxPrefetch}.`);
  }
  const handlerTimeoutMs = options.handlerTimeoutMs ?? WORKER_DEFAULTS.handlerTimeoutMs;
  const leaseMs = options.leaseMs ?? Math.max(WORKER_DEFAULTS.leaseMs, handlerTimeoutMs * 2);
  const maxAttempts = options.maxAttempts ?? WORKER_DEFAULTS.maxAttempts;
  const pollIntervalMs = options.pollIntervalMs ?? WORKER_DEFAULTS.pollIntervalMs;
  const stopTimeoutMs = options.stopTimeoutMs ?? WORKER_DEFAULTS.stopTimeoutMs;
  const appSchema = options.appSchema ?? WORKER_DEFAULTS.appSchema;
  const wholeAtLeastOne = { concurrency, maxAttempts };
  for (const [name, value] of Object.entries(wholeAtLeastOne)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1, not ${value}.`);
  }
  for (const [name, value] of Object.entries({ handlerTimeoutMs, leaseMs, pollIntervalMs, stopTimeoutMs })) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new RangeError(`${name} must be a positive number of milliseconds, not ${value}.`);
    }
  }
  if (leaseMs <= handlerTimeoutMs) {
    throw new RangeError(
      `leaseMs (${leaseMs}) must be longer than handlerTimeoutMs (${handlerTimeoutMs}), or another worker could take an event while its handler still runs.`,
    );
  }
  assertSchemaName(appSchema);
  return { concurrency, maxPrefetch, handlerTimeoutMs, leaseMs, maxAttempts, pollIntervalMs, stopTimeoutMs, appSchema };
}

/**
 * Outcomes are written together: a batch every few ms, in order (one batch at a time, so a mark lands before its
 * finish). An item is the group of outcomes one run hands over at once (usually a completion and the final state):
 * 1,000 groups are about 2,000 outcomes.
 */
const OUTCOME_BATCH = { maxItems: 1000, maxWaitMs: 2 } as const;
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
/** Pause before writing an outcome again after the database failed to take it. */
const OUTCOME_RETRY_MS = 1000;

const INTERNAL_SPAN: InSpanOptions = {};

/** The verdict on a run where no handler failed (most runs): nothing given up, nothing retried. */
const NO_FAILURES: FailureVerdict = { givenUp: [], retried: [], delayMs: 0 };

/** How an attempt ended, for its span's `payhooks.event.outcome`. */
function spanOutcome(outcome: Outcome): string {
  if (outcome.kind === 'finished') return outcome.status;
  return outcome.kind;
}

/**
 * The `lastError` of a run: the failures of this run and the handlers that gave up on an earlier one. A single failure
 * of this run reads as it was thrown; otherwise each is prefixed by its handler's name, so that the operator sees
 * which sink failed or gave up. Null when there is none.
 */
function describeFailures(failures: readonly HandlerFailure[], givenUpBefore: readonly GivenUpHandler[]): string | null {
  const only = failures.length === 1 && givenUpBefore.length === 0 ? failures[0] : undefined;
  if (only) return describeThrown(only.error);
  const parts = [
    ...failures.map((f) => `${f.handler}: ${describeThrown(f.error)}`),
    ...givenUpBefore.map((g) => `${g.handler}: ${g.error}`),
  ];
  return parts.length > 0 ? capText(parts.join('; ')) : null;
}

/**
 * Creates the worker loop: claim due events in batches, run their handlers on a {@link TaskQueue}, record outcomes in
 * batches, repeat. Per event it makes no round trip of its own: the claim brings the completed handlers along,
 * leases are extended for all held events at once, and outcomes (completion marks included) are written by one
 * statement per batch. A handler that uses `ctx.transaction` commits its mark with its writes, as before.
 *
 * @example
 * const worker = createWorker({ store, registry, logger });
 * await worker.start();
 */
export function createWorker<Api = unknown>(options: WorkerOptions<Api>): Worker {
  const { store, registry, logger } = options;
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const { concurrency, maxPrefetch, handlerTimeoutMs, leaseMs, maxAttempts, pollIntervalMs, stopTimeoutMs, appSchema } =
    workerSettings(options);
  const searchPath = setLocalSearchPath(appSearchPath(appSchema));
  // A run does not start this close to the end of its lease: another worker may be about to take the event.
  const leaseSafetyMs = Math.min(leaseMs / 4, 5000);
  const dataCheck = dataCheckFingerprint();

  const queue = new TaskQueue(concurrency);
  /** Claimed and not yet recorded, by eventId: running, waiting to run, or having its outcome written. */
  const held = new Map<string, InFlight>();
  /** Of `held`, those claimed and not yet finished running (the rest wait for their outcome to be written). */
  let unfinished = 0;
  /** Recent time per event, from start to outcome handed over, in ms: sizes the prefetch. */
  let averageRunMs: number | undefined;
  let outcomesSinceVacuum = 0;
  let vacuuming: Promise<void> | undefined;
  const outcomes = new Batcher<Outcome[], boolean[]>({
    ...OUTCOME_BATCH,
    maxConcurrentFlushes: 1,
    flush: async (groups) => {
      const batch = groups.length === 1 ? groups[0]! : groups.flat();
      const recorded = await recordOutcomes(store, workerId, batch);
      // A finished event lets the next event of its resource be claimed.
      void pump();
      outcomesSinceVacuum += batch.length;
      vacuumAfter(QUEUE_VACUUM_EVERY);
      const answers: boolean[][] = [];
      let at = 0;
      for (const group of groups) {
        answers.push(recorded.slice(at, at + group.length));
        at += group.length;
      }
      return answers;
    },
  });

  /** Vacuums the queue in the background once `outcomes` have been written since the last vacuum. */
  function vacuumAfter(outcomes: number): void {
    if (outcomesSinceVacuum < outcomes || vacuuming) return;
    outcomesSinceVacuum = 0;
    vacuuming = vacuumQueue(store)
      .catch((err: unknown) => logger.warn({ err }, 'vacuuming the work queue failed; claims may slow until autovacuum reaches it'))
      .finally(() => {
        vacuuming = undefined;
      });
  }

  let running = false;
  let pumping = false;
  let pumpAgain = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  let unlisten: (() => Promise<void>) | undefined;
  /** Set by stop(): past it, an outcome the database refused is not tried again. */
  let giveUpAt = Number.POSITIVE_INFINITY;

  let pumped: Promise<void> = Promise.resolve();

  /** How many events to hold beyond the running ones: about PREFETCH_HORIZON_MS of work, within maxPrefetch. */
  function prefetch(): number {
    if (averageRunMs === undefined) return Math.min(maxPrefetch, concurrency);
    const horizon = Math.min(PREFETCH_HORIZON_MS, leaseMs / 4);
    return Math.min(maxPrefetch, Math.floor((concurrency * horizon) / Math.max(averageRunMs, 0.01)));
  }

  /** Claims while there is room and something is due. */
  function pump(): Promise<void> {
    if (!running) return pumped;
    if (pumping) {
      pumpAgain = true;
      return pumped;
    }
    pumping = true;
    pumped = claimWhileDue();
    return pumped;
  }

  async function claimWhileDue(): Promise<void> {
    try {
      do {
        pumpAgain = false;
        const ahead = prefetch();
        const room = concurrency + ahead - unfinished;
        // Claim for idle slots at once; to refill the prefetch, wait until half of it is gone (fewer, larger claims).
        if (room <= 0 || (unfinished >= concurrency && room < Math.max(1, ahead / 2))) break;
        const claimed = await claimEvents(store, { workerId, limit: room, leaseMs, maxAttempts, dataCheck, onBuried: reportBuried });
        const claimedAt = Date.now();
        for (const event of claimed) {
          const entry: InFlight = { event, started: false, leaseUntil: claimedAt + leaseMs, lost: false };
          held.set(event.eventId, entry);
          unfinished++;
          queue.add(() => runEvent(entry));
        }
        if (claimed.length === room) pumpAgain = true;
        // Idle (a mere pause between claims mid-drain still holds events awaiting their outcome).
        if (claimed.length === 0 && held.size === 0) vacuumAfter(QUEUE_VACUUM_WHEN_IDLE);
      } while (pumpAgain && running);
    } catch (err) {
      logger.warn({ err }, 'claiming events failed; will retry at the next poll');
    } finally {
      pumping = false;
    }
  }

  function reportBuried(event: { eventId: string; eventType: string; attempts: number }): void {
    logger.error(
      event,
      `event ${event.eventId} is dead: its last allowed attempt (${event.attempts} of ${maxAttempts}) never recorded an outcome (the process running it died or lost its lease); replay it once the handler is fixed`,
    );
  }

  /** Extends the leases of every held event in one statement; an event no longer held is marked lost. */
  async function heartbeat(): Promise<void> {
    const entries = [...held.values()];
    if (entries.length === 0) return;
    const sentAt = Date.now();
    try {
      const still = await extendLeases(
        store,
        workerId,
        entries.map((entry) => entry.event.eventId),
        leaseMs,
      );
      for (const entry of entries) {
        if (still.has(entry.event.eventId)) entry.leaseUntil = sentAt + leaseMs;
        else entry.lost = true;
      }
    } catch (err) {
      logger.warn({ err }, 'extending leases failed; runs stop before their leases run out unless the next attempt succeeds');
    }
  }

  /**
   * Writes a group of outcomes, trying again while the lease lasts: a run that finished but whose outcome was lost to
   * a database hiccup would otherwise run its handlers again once the lease ran out. Resolves to whether the lease
   * was still held when each was written.
   */
  async function write(entry: InFlight, group: Outcome[]): Promise<boolean[]> {
    for (let tries = 1; ; tries++) {
      try {
        return await outcomes.add(group);
      } catch (err) {
        const retryAt = Date.now() + OUTCOME_RETRY_MS;
        if (retryAt >= Math.min(entry.leaseUntil - leaseSafetyMs, giveUpAt)) throw err;
        logger.warn({ err, eventId: entry.event.eventId, tries }, 'could not record the outcome of an event; trying again');
        await new Promise((resolve) => setTimeout(resolve, OUTCOME_RETRY_MS));
      }
    }
  }

  /**
   * Keeps an outcome of the run (a handler's completion, failure or giving up) to be handed over with the next: the
   * run's final state, or the next handler's start ({@link handOver}), so that it is written as early as before, in
   * one batch item with what follows it rather than one each.
   */
  function note(entry: InFlight, outcome: Outcome): void {
    if (entry.noted) entry.noted.push(outcome);
    else entry.noted = [outcome];
  }

  /** The run's noted outcomes, taken to be handed over (undefined when none). */
  function takeNoted(entry: InFlight): Outcome[] | undefined {
    const group = entry.noted;
    entry.noted = undefined;
    return group;
  }

  /** Hands the run's noted outcomes over to be written, if any (nobody waits for them). */
  function handOver(entry: InFlight): void {
    const group = takeNoted(entry);
    if (group) write(entry, group).catch(() => undefined);
  }

  /**
   * Hands the run's final outcome over to be written, after what the run noted; `then` runs once it is, with whether
   * the lease was still held.
   */
  function record(entry: InFlight, outcome: Outcome, then?: (held: boolean) => void): void {
    if (entry.span?.isRecording()) {
      const ended = spanOutcome(outcome);
      entry.span.setAttribute('payhooks.event.outcome', ended);
      if (ended === 'retry' || ended === 'dead' || ended === 'invalid') markSpanFailed(entry.span, ended);
    }
    const group = takeNoted(entry) ?? [];
    group.push(outcome);
    entry.recording = recordGroup(entry, group, then);
  }

  async function recordGroup(entry: InFlight, group: Outcome[], then: ((held: boolean) => void) | undefined): Promise<void> {
    let written: boolean[] | undefined;
    try {
      written = await write(entry, group);
    } catch (err) {
      // The lease will run out and another attempt follow: nothing is lost.
      logger.error(
        { err, eventId: entry.event.eventId },
        'could not record the outcome of an event; its lease will run out and it will run again',
      );
    } finally {
      held.delete(entry.event.eventId);
    }
    if (written) then?.(written[written.length - 1]!);
  }

  async function runEvent(entry: InFlight): Promise<void> {
    entry.started = true;
    const startedAt = performance.now();
    try {
      // Each attempt is a trace of its own, linked to the span that received the event (a retry may come hours
      // later): the OpenTelemetry messaging conventions' consumer span (docs/tracing.md).
      await inSpan(
        'webhook.process',
        { kind: SPAN_KIND.consumer, parent: 'root', root: true, links: linksTo(entry.event.traceParent) },
        (span) => {
          if (span.isRecording()) {
            span.setAttributes({
              'messaging.system': 'payhooks',
              'messaging.operation.type': 'process',
              'messaging.message.id': entry.event.eventId,
              'payhooks.event.type': entry.event.eventType,
              'payhooks.event.attempt': entry.event.attempt,
            });
          }
          entry.span = span;
          return runHandlers(entry);
        },
      );
    } finally {
      unfinished--;
      const took = performance.now() - startedAt;
      averageRunMs = averageRunMs === undefined ? took : averageRunMs * 0.9 + took * 0.1;
      // A slot is free: claim again (and the next event of this resource may be claimable once the outcome is written).
      void pump();
    }
  }

  /** Whether the run may go on: not shut down, and the lease is held and far enough from running out. */
  function leaseHeld(attemptRun: AttemptRun): boolean {
    const { entry } = attemptRun;
    // Shutdown: stop() gives the lease back; a run it abandoned ends here, and records no outcome.
    if (entry.shutdown) return false;
    if (!entry.lost && Date.now() < entry.leaseUntil - leaseSafetyMs) return true;
    entry.lost = true;
    attemptRun.log.warn('lost the lease (it ran out, or another worker took the event); stopping this run');
    held.delete(entry.event.eventId);
    return false;
  }

  async function runHandlers(entry: InFlight): Promise<void> {
    const { event } = entry;
    const attemptRun = new AttemptRun(entry, logger);
    try {
      if (!leaseHeld(attemptRun)) return;
      const parsed = readStoredEvent(event);
      // Not needed again here: dropped, or the body would stay in memory until the outcome batch that finishes the event
      // is written (a few thousand events at a time, surviving each young-generation GC). A checked event's lazy data
      // keeps its own reference, for as long as its handlers hold the event.
      event.rawBody = '';
      if (!parsed.ok) {
        finish(entry, 'invalid', parsed.lastError);
        if (parsed.issues) attemptRun.log.warn({ issues: parsed.issues }, 'event data does not match its schema; marked invalid');
        return;
      }
      const handlers = registry.for(event.eventType);
      if (handlers.length === 0) {
        // An ignored event is money nobody booked if the type was meant to be handled: say so every time, never silently.
        finish(entry, 'ignored', null, (stillHeld) => {
          if (!stillHeld) return;
          attemptRun.log.warn(
            { registeredTypes: registry.types },
            `no handler is registered for ${event.eventType}: event ${event.eventId} marked ignored. If it matters, register a handler ` +
              `for ${event.eventType} (a no-op one if the type is deliberately unused, to silence this) and replay it: payhooks replay ${event.eventId}`,
          );
        });
        return;
      }
      // Settled on an earlier attempt (completed, or given up): not run again. Most events have none, and get no set.
      const settled =
        event.completedHandlers.length + event.givenUp.length > 0
          ? new Set([...event.completedHandlers, ...event.givenUp.map((g) => g.handler)])
          : undefined;
      // Owed by an earlier event of the resource: not run for this one until it has settled them (order per sink).
      const blocked = event.blockedHandlers.length > 0 ? new Set(event.blockedHandlers) : undefined;
      // One handler's failure holds back no other: each runs, completions are recorded, and each failure is then
      // retried or given up for its own handler (a sink down must not stall the mirror or another sink).
      const failures: HandlerFailure[] = [];
      const skipped: string[] = [];
      // Handlers stopped by an effect step of unknown outcome that may not be called again: held for an operator.
      const reviews: HandlerFailure[] = [];
      for (const handler of handlers) {
        if (settled?.has(handler.name)) continue;
        if (blocked?.has(handler.name)) {
          skipped.push(handler.name);
          continue;
        }
        // What the handlers before this one noted goes out now, not after this one has run.
        handOver(entry);
        if (!leaseHeld(attemptRun)) return;
        const started = performance.now();
        const startedAt = new Date();
        try {
          const markedInTransaction = await inSpan('webhook.handler', INTERNAL_SPAN, async (span) => {
            if (span.isRecording()) span.setAttribute('payhooks.handler.name', handler.name);
            try {
              return await runHandler(handler, parsed.event, attemptRun);
            } catch (err) {
              // Named for what the worker makes of it: retried, or given up (DeadLetterError).
              failSpan(span, err);
              throw err;
            }
          });
          observe(handler, event, started, false);
          // Written with the event's outcome, or before it: the batches go out in order. Every run is kept, in the
          // batch that carries the outcome (no statement more): a completion carries its run.
          const run = handlerRun(event, startedAt);
          if (!markedInTransaction) note(entry, { kind: 'completed', eventId: event.eventId, handler: handler.name, run });
          else note(entry, { kind: 'attempt', eventId: event.eventId, handler: handler.name, error: null, ...run });
        } catch (thrown) {
          if (entry.shutdown) return; // shutdown: the lease is given back in stop()
          const err = unstorableTextExplained(thrown);
          observe(handler, event, started, true);
          const run = handlerRun(event, startedAt);
          note(entry, { kind: 'attempt', eventId: event.eventId, handler: handler.name, error: describeThrown(err), ...run });
          if (err instanceof EffectNeedsReviewError) {
            reviews.push({ handler: handler.name, error: err });
            continue;
          }
          failures.push({ handler: handler.name, error: err });
          attemptRun.log.warn({ err, handler: handler.name }, 'handler failed');
        }
      }
      if (entry.shutdown) return;
      settle(attemptRun, failures, skipped, reviews);
    } catch (err) {
      recordWorkerFailure(attemptRun, err);
    } finally {
      // A run that ends without a final outcome (shutdown, a lost lease) still writes what its handlers did.
      handOver(entry);
    }
  }

  /** Hands the event's final state over to be written. */
  function finish(entry: InFlight, status: FinalStatus, lastError: string | null, then?: (held: boolean) => void): void {
    record(entry, { kind: 'finished', eventId: entry.event.eventId, status, lastError }, then);
  }

  function observe(handler: RegisteredHandler<Api>, event: ClaimedEvent, started: number, failed: boolean): void {
    options.onHandlerRun?.({ handler: handler.name, eventType: event.eventType, failed, seconds: (performance.now() - started) / 1000 });
  }

  /**
   * The shutdown signal of a run, made when something first asks for it (most runs never do): aborted by stop(), or
   * at once when stop() already has.
   */
  function shutdownSignal(entry: InFlight): AbortSignal {
    entry.abort ??= new AbortController();
    if (entry.shutdown && !entry.abort.signal.aborted) entry.abort.abort(entry.shutdown);
    return entry.abort.signal;
  }

  /** Runs one handler under its timeout; resolves to whether it recorded its completion in `ctx.transaction`. */
  async function runHandler(
    handler: RegisteredHandler<Api>,
    event: Parameters<RegisteredHandler<Api>['run']>[0],
    attemptRun: AttemptRun,
  ): Promise<boolean> {
    const { entry } = attemptRun;
    // The handler's signal and logger are made when it first asks for them: a handler that uses neither costs no
    // AbortController, listener or child logger.
    let controller: AbortController | undefined;
    /** Why the handler's signal is aborted, once it is (a timeout), whether or not it was made yet. */
    let abortedBy: unknown;
    let handlerLog: Logger | undefined;
    const onShutdown = () => controller?.abort(entry.abort?.signal.reason);
    const signal = (): AbortSignal => {
      if (controller) return controller.signal;
      controller = new AbortController();
      if (abortedBy !== undefined) controller.abort(abortedBy);
      else {
        const shutdown = shutdownSignal(entry);
        if (shutdown.aborted) controller.abort(shutdown.reason);
        else shutdown.addEventListener('abort', onShutdown, { once: true });
      }
      return controller.signal;
    };
    let markedInTransaction = false;
    let effect: EffectRunner | undefined;
    let inTransaction = false;
    const ctx: HandlerContext<Api> = {
      attempt: entry.event.attempt,
      receivedAt: entry.event.receivedAt,
      get logger() {
        handlerLog ??= attemptRun.log.child({ handler: handler.name });
        return handlerLog;
      },
      api: options.api,
      get signal() {
        return signal();
      },
      shared<T>(key: string, compute: (signal: AbortSignal) => Promise<T>): Promise<T> {
        attemptRun.shared ??= new Map();
        let value = attemptRun.shared.get(key) as Promise<T> | undefined;
        if (!value) {
          // The shutdown signal, not this handler's: a timeout of the handler that started it must not fail the others' wait.
          value = Promise.resolve().then(() => compute(shutdownSignal(entry)));
          // Awaited by whoever asks; an unasked rejection must not stop the process.
          value.catch(() => undefined);
          attemptRun.shared.set(key, value);
        }
        return value;
      },
      // Made on first use: a handler that calls no effect costs nothing more.
      effect(name, fn, stepOptions) {
        // Its record is written on a connection of its own and must not wait for (nor roll back with) the handler's
        // transaction; on the embedded database, which has one connection, it would wait for ever.
        if (inTransaction)
          return Promise.reject(
            new TypeError(
              `ctx.effect was called inside ctx.transaction by handler ${handler.name}; call it before or after the transaction.`,
            ),
          );
        effect ??= createEffectRunner({
          store,
          eventId: entry.event.eventId,
          receivedAt: entry.event.receivedAt,
          handler: handler.name,
          attempt: entry.event.attempt,
          signal: signal(),
          logger: ctx.logger,
        });
        return effect(name, fn, stepOptions);
      },
      async transaction<DB, T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
        if (markedInTransaction)
          throw new Error(`ctx.transaction was already used by handler ${handler.name} for this event; call it once.`);
        markedInTransaction = true;
        return store.db.transaction().execute(async (trx: Transaction<PayhooksTables>) => {
          // The handler's own tables are not in the payhooks schema: hand it the connection unqualified, with the
          // app's schema first on the search path, where the app's migrations put them. `local`: for this transaction only.
          const appTrx = trx.withoutPlugins();
          await sql.raw(searchPath).execute(appTrx);
          inTransaction = true;
          const result = await fn(appTrx as unknown as Transaction<DB>).finally(() => {
            inTransaction = false;
          });
          await markHandlerCompleted(trx, entry.event.eventId, handler.name);
          return result;
        });
      },
    };
    try {
      const result = handler.run(event, ctx);
      // A handler that returned without a promise has finished: there is nothing left to time out.
      if (!isThenable(result)) return markedInTransaction;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => {
          const error = new HandlerTimeoutError(handler.name, handlerTimeoutMs);
          abortedBy = error;
          controller?.abort(error);
          reject(error);
        }, handlerTimeoutMs);
        result.then(() => resolve(), reject);
      }).finally(() => clearTimeout(timer));
    } finally {
      if (controller) entry.abort?.signal.removeEventListener('abort', onShutdown);
    }
    return markedInTransaction;
  }

  /**
   * Records how a run ended: given-up handlers marked, then the event retried (a handler failed and may be retried),
   * parked (nothing failed, but handlers were left for an earlier event of the resource to settle), or finished:
   * `dead` when any handler gave up, now or on an earlier attempt, else `done`.
   */
  function settle(attemptRun: AttemptRun, failures: HandlerFailure[], skipped: string[], reviews: HandlerFailure[]): void {
    const { entry } = attemptRun;
    if (entry.shutdown) return; // shutdown: the lease is given back in stop()
    const { eventId, attempt, givenUp: givenUpBefore } = entry.event;
    const verdict =
      failures.length === 0
        ? NO_FAILURES
        : failureVerdict(
            failures,
            attempt,
            maxAttempts,
            eventRetryDelay(attempt, options.backoff),
            options.backoff?.maxMs ?? WORKER_DEFAULTS.backoff.maxMs,
          );
    for (const { handler, error } of verdict.givenUp) {
      note(entry, { kind: 'gaveUp', eventId, handler, error: describeThrown(error) });
      attemptRun.log.error(
        { handler },
        error instanceof DeadLetterError
          ? `handler ${handler} gave up on the event (DeadLetterError): retrying cannot help; it is not run for it again, and the event ends dead once its other handlers are through (replay it once fixed)`
          : `handler ${handler} failed on the last of ${maxAttempts} attempts and gave up on the event; it ends dead once its other handlers are through (replay it once fixed)`,
      );
    }
    const lastError =
      failures.length + reviews.length + givenUpBefore.length === 0 ? null : describeFailures([...reviews, ...failures], givenUpBefore);
    // A handler held for review is owed like a failed one while the event is still retried or parked: it runs again
    // then, and stops at the same step, calling nothing, until an operator has resolved it.
    const held = reviews.map((r) => r.handler);
    if (verdict.retried.length > 0) {
      const owed = [...verdict.retried.map((f) => f.handler), ...skipped, ...held];
      record(entry, { kind: 'retry', eventId, delayMs: verdict.delayMs, lastError: lastError ?? '', owed });
      attemptRun.log.warn({ failed: verdict.retried.map((f) => f.handler), retryInMs: verdict.delayMs }, 'handler failed; will retry');
      return;
    }
    if (skipped.length > 0) {
      const earlier = `an earlier event of ${entry.event.resourceKey} at ${skipped.join(', ')}`;
      record(entry, { kind: 'park', eventId, owed: [...skipped, ...held], lastError: lastError ?? `Waiting for ${earlier}.` });
      attemptRun.log.info({ waitingFor: skipped }, `event waits for ${earlier}; its other handlers ran`);
      return;
    }
    if (held.length > 0) {
      // Out of the queue like a final state; resolving the step puts it back (docs/effects.md#needs-review).
      record(entry, { kind: 'finished', eventId, status: 'needs-review', lastError }, (stillHeld) => {
        if (stillHeld)
          attemptRun.log.error(
            { held },
            'event needs review: an effect step has an unknown outcome and is not idempotent; its other handlers are through',
          );
      });
      return;
    }
    const dead = verdict.givenUp.length > 0 || givenUpBefore.length > 0;
    record(entry, { kind: 'finished', eventId, status: dead ? 'dead' : 'done', lastError: dead ? lastError : null }, (stillHeld) => {
      if (!stillHeld) return;
      if (dead) options.onEventDead?.({ eventType: entry.event.eventType });
      if (dead)
        attemptRun.log.error(
          { gaveUp: [...verdict.givenUp.map((f) => f.handler), ...givenUpBefore.map((g) => g.handler)] },
          'event is dead: a handler gave up on it (the others completed); replay it once fixed',
        );
      // Asked of the parent first: at a level above info, the event's logger is never made.
      else if (logger.isLevelEnabled('info')) attemptRun.log.info('event processed');
    });
  }

  /** A failure outside any handler: the whole event is retried (every handler of later events of its resource waits). */
  function recordWorkerFailure(attemptRun: AttemptRun, err: unknown): void {
    const { entry } = attemptRun;
    if (entry.shutdown) return;
    const { eventId, attempt } = entry.event;
    const lastError = describeThrown(err);
    if (attempt >= maxAttempts) {
      record(entry, { kind: 'finished', eventId, status: 'dead', lastError }, (stillHeld) => {
        if (stillHeld) options.onEventDead?.({ eventType: entry.event.eventType });
      });
      attemptRun.log.error(
        { err },
        `running the event failed on the last of ${maxAttempts} attempts; event is dead (replay it once fixed)`,
      );
      return;
    }
    const delayMs = eventRetryDelay(attempt, options.backoff);
    record(entry, { kind: 'retry', eventId, delayMs, lastError, owed: null });
    attemptRun.log.warn({ err, retryInMs: delayMs }, 'running the event failed; will retry');
  }

  return {
    workerId,
    async start() {
      if (running) return;
      running = true;
      try {
        unlisten = await store.listen(newEventChannel(store.schema), () => void pump());
      } catch (err) {
        logger.warn({ err }, 'LISTEN failed; relying on polling');
      }
      pollTimer = setInterval(() => void pump(), pollIntervalMs);
      pollTimer.unref();
      heartbeatTimer = setInterval(() => void heartbeat(), leaseMs / 4);
      heartbeatTimer.unref();
      logger.info({ workerId, concurrency }, 'worker started');
      // Resolve after the first claim round: events already due are under way, and what arrives next comes by
      // NOTIFY or polling. (Handlers are not awaited.)
      await pump();
    },
    wake() {
      void pump();
    },
    async stop(timeoutMs = stopTimeoutMs) {
      if (!running) return;
      running = false;
      giveUpAt = Date.now() + timeoutMs;
      clearInterval(pollTimer);
      await unlisten?.().catch(() => undefined);
      // Let a claim under way land, then drop what has not started: those leases are given back below.
      await pumped;
      queue.clear();
      logger.info({ workerId, running: queue.pending, timeoutMs }, 'worker stopping: waiting for running handlers to finish');
      const finished = (await within(queue.onIdle(), timeoutMs)) !== 'timeout';
      if (!finished) {
        logger.warn({ running: queue.pending }, 'handlers still running at the stop timeout; aborting them');
        const reason = new Error('worker shutting down');
        for (const entry of held.values()) {
          entry.shutdown = reason;
          entry.abort?.abort(reason);
        }
      }
      // Outcomes handed over are written before the rest of the leases are given back.
      const recordings = [...held.values()].map((entry) => entry.recording);
      await within(Promise.all([outcomes.drain(), Promise.allSettled(recordings)]), Math.max(giveUpAt - Date.now(), 1000)).catch(
        () => undefined,
      );
      clearInterval(heartbeatTimer);
      // A vacuum under way is left to finish on its own, unless it ends soon.
      if (vacuuming) await within(vacuuming, 2000);
      const unrecorded = [...held.values()].map((entry) => ({ eventId: entry.event.eventId, started: entry.started }));
      const released = await releaseLeases(store, workerId, unrecorded).catch(() => 0);
      logger.info({ workerId, released }, 'worker stopped');
    },
  };
}
