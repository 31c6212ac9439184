import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { dataCheckFingerprint } from '../events/parse-event.js';
import { backoffProblems } from '../internal/backoff.js';
import { TaskQueue } from '../internal/task-queue.js';
import { within } from '../internal/within.js';
import type { PayhooksDatabase } from '../store/database.js';
import { assertSchemaName } from '../store/database.js';
import { appSearchPath, setLocalSearchPath } from '../store/migrate.js';
import { AttemptRunner } from './attempt-runner.js';
import { ClaimPump } from './claim-pump.js';
import { WORKER_DEFAULTS } from './defaults.js';
import { HandlerRunner } from './handler-runner.js';
import type { HandlerRegistry } from './handlers.js';
import { LeaseKeeper } from './lease-keeper.js';
import { OutcomeWriter } from './outcome-writer.js';
import type { BackoffOptions } from './retry-delay.js';
import { type WorkerEventMap, WorkerEvents } from './worker-events.js';

/** One run of one handler for one event, for metrics. */
export interface HandlerRunObservation {
  /** The event's account (`default` in a single-account installation); absent in a report of an older worker. */
  account?: string | undefined;
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
  /** `ctx.api` of every account's handlers, unless `apiForAccount` gives one for the event's account. */
  api?: Api | undefined;
  /** `ctx.api` of an account's handlers: the API client with that account's key (docs/accounts.md); undefined: `api`. */
  apiForAccount?: ((account: string) => Api | undefined) | undefined;
  /**
   * Called after each handler run, failed or not. Kept for existing callers: it is one subscriber of `run:ended` on
   * {@link WorkerOptions.events}, which tells more.
   * @deprecated Subscribe to `worker.events.on('run:ended', …)` instead.
   */
  onHandlerRun?: ((run: HandlerRunObservation) => void) | undefined;
  /** Where the worker tells what happens (claims, runs, retries, dead events, leases lost, …). Default: its own. */
  events?: WorkerEvents | undefined;
  /** Identifies this worker in leases. Default `<hostname>:<pid>:<random>`. */
  workerId?: string | undefined;
  /** Events run at once by this process. Default 4. */
  concurrency?: number | undefined;
  /**
   * Events claimed ahead of those running, at most (0: claim only for free slots). The worker holds about one second
   * of work ahead, by the handlers' recent speed, up to this many. Default `WORKER_DEFAULTS.maxPrefetch`.
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
  /** What the worker tells: subscribe with `events.on(name, listener)` (see {@link WorkerEventMap}). */
  readonly events: WorkerEvents;
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

/**
 * A worker option refused by {@link workerSettings}: a RangeError whose message names the option, with the option
 * (`backoff.baseMs` for a nested one) and the reason apart, for callers that report them under their own keys.
 */
export class WorkerOptionError extends RangeError {
  constructor(
    readonly option: string,
    /** Why, as a sentence that follows the option's name (or that names it itself, as the lease's rule does). */
    readonly reason: string,
  ) {
    super(reason.startsWith(option) ? reason : `${option} ${reason}`);
  }
}

/**
 * The worker's numbers with their defaults applied, checked: a RangeError names the option and what it takes.
 * `createPayhooks` calls it when it is created, so a mistake fails there rather than at `start()`.
 *
 * @example
 * workerSettings({ maxAttempts: 0 }); // throws RangeError: maxAttempts must be a whole number of at least 1, not 0.
 * workerSettings({ backoff: { baseMs: -1 } }); // throws RangeError: backoff.baseMs must be a positive number of milliseconds, not -1.
 */
export function workerSettings(
  options: Pick<
    WorkerOptions,
    | 'concurrency'
    | 'maxPrefetch'
    | 'handlerTimeoutMs'
    | 'leaseMs'
    | 'maxAttempts'
    | 'pollIntervalMs'
    | 'stopTimeoutMs'
    | 'appSchema'
    | 'backoff'
  >,
) {
  const concurrency = options.concurrency ?? WORKER_DEFAULTS.concurrency;
  const maxPrefetch = options.maxPrefetch ?? WORKER_DEFAULTS.maxPrefetch;
  if (!Number.isSafeInteger(maxPrefetch) || maxPrefetch < 0) {
    throw new WorkerOptionError('maxPrefetch', `must be a whole number of at least 0, not ${maxPrefetch}.`);
  }
  const handlerTimeoutMs = options.handlerTimeoutMs ?? WORKER_DEFAULTS.handlerTimeoutMs;
  const leaseMs = options.leaseMs ?? Math.max(WORKER_DEFAULTS.leaseMs, handlerTimeoutMs * 2);
  const maxAttempts = options.maxAttempts ?? WORKER_DEFAULTS.maxAttempts;
  const pollIntervalMs = options.pollIntervalMs ?? WORKER_DEFAULTS.pollIntervalMs;
  const stopTimeoutMs = options.stopTimeoutMs ?? WORKER_DEFAULTS.stopTimeoutMs;
  const appSchema = options.appSchema ?? WORKER_DEFAULTS.appSchema;
  const wholeAtLeastOne = { concurrency, maxAttempts };
  for (const [name, value] of Object.entries(wholeAtLeastOne)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new WorkerOptionError(name, `must be a whole number of at least 1, not ${value}.`);
  }
  for (const [name, value] of Object.entries({ handlerTimeoutMs, leaseMs, pollIntervalMs, stopTimeoutMs })) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new WorkerOptionError(name, `must be a positive number of milliseconds, not ${value}.`);
    }
  }
  if (leaseMs <= handlerTimeoutMs) {
    throw new WorkerOptionError(
      'leaseMs',
      `leaseMs (${leaseMs}) must be longer than handlerTimeoutMs (${handlerTimeoutMs}), or another worker could take an event while its handler still runs.`,
    );
  }
  // Checked as given: a cap below the default base is no mistake while the base is set below it too.
  const [backoffProblem] = backoffProblems(options.backoff ?? {});
  if (backoffProblem) throw new WorkerOptionError(`backoff.${backoffProblem.option}`, backoffProblem.message);
  const backoff = {
    baseMs: options.backoff?.baseMs ?? WORKER_DEFAULTS.backoff.baseMs,
    maxMs: options.backoff?.maxMs ?? WORKER_DEFAULTS.backoff.maxMs,
  };
  assertSchemaName(appSchema);
  return { concurrency, maxPrefetch, handlerTimeoutMs, leaseMs, maxAttempts, pollIntervalMs, stopTimeoutMs, appSchema, backoff };
}

/**
 * Creates the worker: a {@link ClaimPump} claims due events in batches into a {@link TaskQueue}; an
 * {@link AttemptRunner} runs each attempt's handlers (a {@link HandlerRunner} each) and settles it by the settle
 * policy; an {@link OutcomeWriter} writes the outcomes in batches; a {@link LeaseKeeper} extends the leases of what is
 * held and gives back the rest on stop. Per event it makes no round trip of its own: the claim brings the completed
 * handlers along, leases are extended for all held events at once, and outcomes (completion marks included) are
 * written by one statement per batch. What happens is told to {@link Worker.events}.
 *
 * @example
 * const worker = createWorker({ store, registry, logger });
 * worker.events.on('event:dead', ({ eventId }) => console.error(`${eventId} is dead`));
 * await worker.start();
 */
export function createWorker<Api = unknown>(options: WorkerOptions<Api>): Worker {
  const { store, registry, logger } = options;
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const settings = workerSettings(options);
  const { concurrency, handlerTimeoutMs, leaseMs, maxAttempts, stopTimeoutMs } = settings;
  const events = options.events ?? new WorkerEvents(logger);
  events.useLogger(logger);
  const onHandlerRun = options.onHandlerRun;
  if (onHandlerRun)
    events.on('run:ended', ({ handler, eventType, failed, seconds }) => onHandlerRun({ handler, eventType, failed, seconds }));

  const queue = new TaskQueue(concurrency);
  /** Of the held events, those claimed and not yet finished running (the rest wait for their outcome to be written). */
  let unfinished = 0;
  const leases = new LeaseKeeper({ store, workerId, leaseMs, logger, events });
  const pump: ClaimPump = new ClaimPump({
    ...settings,
    store,
    workerId,
    logger,
    events,
    dataCheck: dataCheckFingerprint(),
    inHand: () => ({ unfinished, held: leases.size }),
    take(claimed, claimedAt) {
      for (const event of claimed) {
        const entry = leases.add(event, claimedAt);
        unfinished++;
        queue.add(() => runEvent(entry));
      }
    },
  });
  const outcomes = new OutcomeWriter({ store, workerId, logger, leases, events, onWritten: (count) => pump.outcomesWritten(count) });
  const handlers = new HandlerRunner({
    store,
    api: options.api,
    apiForAccount: options.apiForAccount,
    handlerTimeoutMs,
    searchPath: setLocalSearchPath(appSearchPath(settings.appSchema)),
  });
  const attempts = new AttemptRunner({
    registry,
    logger,
    leases,
    outcomes,
    handlers,
    events,
    rules: { maxAttempts, backoff: settings.backoff },
  });

  async function runEvent(entry: Parameters<AttemptRunner<Api>['run']>[0]): Promise<void> {
    const startedAt = performance.now();
    try {
      await attempts.run(entry);
    } finally {
      unfinished--;
      // A slot is free: claim again (and the next event of this resource may be claimable once the outcome is written).
      pump.runEnded(performance.now() - startedAt);
    }
  }

  return {
    workerId,
    events,
    async start() {
      if (pump.mode !== 'stopped') return;
      leases.start();
      logger.info({ workerId, concurrency }, 'worker started');
      // Resolves after the first claim round: events already due are under way, and what arrives next comes by NOTIFY
      // or polling. (Handlers are not awaited.)
      await pump.start();
    },
    wake() {
      void pump.pump();
    },
    async stop(timeoutMs = stopTimeoutMs) {
      if (pump.mode === 'stopped' || pump.mode === 'stopping') return;
      const giveUpAt = Date.now() + timeoutMs;
      outcomes.giveUpAt(giveUpAt);
      // Let a claim under way land, then drop what has not started: those leases are given back below.
      await pump.stop();
      queue.clear();
      events.emit('worker:stopping', { workerId, running: queue.pending });
      logger.info({ workerId, running: queue.pending, timeoutMs }, 'worker stopping: waiting for running handlers to finish');
      if ((await within(queue.onIdle(), timeoutMs)) === 'timeout') {
        logger.warn({ running: queue.pending }, 'handlers still running at the stop timeout; aborting them');
        const reason = new Error('worker shutting down');
        for (const entry of leases.entries()) {
          entry.shutdown = reason;
          entry.abort?.abort(reason);
        }
      }
      // Outcomes handed over are written before the rest of the leases are given back.
      const recordings = leases.entries().map((entry) => entry.recording);
      await within(Promise.all([outcomes.drain(), Promise.allSettled(recordings)]), Math.max(giveUpAt - Date.now(), 1000)).catch(
        () => undefined,
      );
      // A vacuum under way is left to finish on its own, unless it ends soon.
      await pump.finish(2000);
      const released = await leases.release();
      events.emit('worker:stopped', { workerId, released });
      logger.info({ workerId, released }, 'worker stopped');
    },
  };
}
