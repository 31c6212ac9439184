import { hostname } from 'node:os';
import { capText, describeThrown } from '../internal/scrub.js';
import { scrubbingChild } from '../logger.js';
import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { parseBodyJson, parseEvent } from '../events/index.js';
import { claimEvents, type ClaimedEvent } from '../store/claim.js';
import { assertSchemaName, type PayhooksDatabase } from '../store/database.js';
import { newEventChannel } from '../store/inbox.js';
import { appSearchPath, setLocalSearchPath } from '../store/migrate.js';
import {
  completedHandlers,
  extendLease,
  finishEvent,
  markHandlerCompleted,
  releaseLeases,
  retryEventLater,
  type Lease,
} from '../store/outcomes.js';
import type { PayhooksTables } from '../store/schema.js';
import { WORKER_DEFAULTS } from './defaults.js';
import { eventRetryDelay, type BackoffOptions } from './retry-delay.js';
import type { HandlerContext, HandlerRegistry, RegisteredHandler } from './handlers.js';

/** Options of the worker; each default is in {@link WORKER_DEFAULTS}. */
export interface WorkerOptions<Api = unknown> {
  store: PayhooksDatabase;
  registry: HandlerRegistry<Api>;
  logger: Logger;
  api?: Api | undefined;
  /** Identifies this worker in leases. Default `<hostname>:<pid>:<random>`. */
  workerId?: string | undefined;
  /** Events run at once by this process. Default 4. */
  concurrency?: number | undefined;
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
   * Stops claiming, lets running handlers finish for up to `timeoutMs` (default 30 s), aborts the rest,
   * and gives unfinished leases back. Claiming has stopped when the call returns its promise.
   */
  stop(timeoutMs?: number): Promise<void>;
}

interface InFlight {
  event: ClaimedEvent;
  started: boolean;
  abort: AbortController;
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
  options: Pick<WorkerOptions, 'concurrency' | 'handlerTimeoutMs' | 'leaseMs' | 'maxAttempts' | 'pollIntervalMs' | 'appSchema'>,
) {
  const concurrency = options.concurrency ?? WORKER_DEFAULTS.concurrency;
  const handlerTimeoutMs = options.handlerTimeoutMs ?? WORKER_DEFAULTS.handlerTimeoutMs;
  const leaseMs = options.leaseMs ?? Math.max(WORKER_DEFAULTS.leaseMs, handlerTimeoutMs * 2);
  const maxAttempts = options.maxAttempts ?? WORKER_DEFAULTS.maxAttempts;
  const pollIntervalMs = options.pollIntervalMs ?? WORKER_DEFAULTS.pollIntervalMs;
  const appSchema = options.appSchema ?? WORKER_DEFAULTS.appSchema;
  const wholeAtLeastOne = { concurrency, maxAttempts };
  for (const [name, value] of Object.entries(wholeAtLeastOne)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1, not ${value}.`);
  }
  for (const [name, value] of Object.entries({ handlerTimeoutMs, leaseMs, pollIntervalMs })) {
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
  return { concurrency, handlerTimeoutMs, leaseMs, maxAttempts, pollIntervalMs, appSchema };
}

/**
 * Creates the worker loop: claim due events, run their handlers on a p-queue, record the outcome, repeat.
 *
 * @example
 * const worker = createWorker({ store, registry, logger });
 * await worker.start();
 */
export function createWorker<Api = unknown>(options: WorkerOptions<Api>): Worker {
  const { store, registry, logger } = options;
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const { concurrency, handlerTimeoutMs, leaseMs, maxAttempts, pollIntervalMs, appSchema } = workerSettings(options);
  const searchPath = setLocalSearchPath(appSearchPath(appSchema));

  const queue = new PQueue({ concurrency });
  const inFlight = new Map<string, InFlight>();
  let running = false;
  let pumping = false;
  let pumpAgain = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let unlisten: (() => Promise<void>) | undefined;

  let pumped: Promise<void> = Promise.resolve();

  /** Claims as many events as there are free slots, until none is due. */
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
        const free = concurrency - inFlight.size;
        if (free <= 0) break;
        const claimed = await claimEvents(store, { workerId, limit: free, leaseMs, maxAttempts, onBuried: reportBuried });
        for (const event of claimed) {
          const entry: InFlight = { event, started: false, abort: new AbortController() };
          inFlight.set(event.eventId, entry);
          void queue
            .add(() => runEvent(entry))
            .finally(() => {
              inFlight.delete(event.eventId);
              // A finished event frees a slot and may unblock the next event of its resource.
              void pump();
            });
        }
        if (claimed.length === free) pumpAgain = true;
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

  async function runEvent(entry: InFlight): Promise<void> {
    entry.started = true;
    const { event } = entry;
    const lease: Lease = { eventId: event.eventId, workerId };
    // Handlers log through this too: a handler that logs the event must not put personal data into the app's logs.
    const log = scrubbingChild(logger, { eventId: event.eventId, eventType: event.eventType, attempt: event.attempt });
    try {
      let json: unknown;
      try {
        json = parseBodyJson(event.rawBody);
      } catch {
        // The receiver only stores JSON; a row written by other means can still be broken, and retrying won't mend it.
        await finishEvent(store, lease, 'invalid', 'The stored body is not valid JSON.');
        return;
      }
      const parsed = parseEvent(json);
      if (!parsed.ok) {
        await finishEvent(store, lease, 'invalid', capText(parsed.error.message));
        log.warn({ issues: parsed.error.issues.map((i) => i.path) }, 'event data does not match its schema; marked invalid');
        return;
      }
      const handlers = registry.for(event.eventType);
      if (handlers.length === 0) {
        // An ignored event is money nobody booked if the type was meant to be handled: say so every time, never silently.
        if (await finishEvent(store, lease, 'ignored')) {
          log.warn(
            { registeredTypes: registry.types },
            `no handler is registered for ${event.eventType}: event ${event.eventId} marked ignored. If it matters, register a handler ` +
              `for ${event.eventType} (a no-op one if the type is deliberately unused, to silence this) and replay it: payhooks replay ${event.eventId}`,
          );
        }
        return;
      }
      const completed = await completedHandlers(store, event.eventId);
      for (const handler of handlers) {
        if (completed.has(handler.name)) continue;
        if (!(await extendLease(store, lease, leaseMs))) {
          log.warn('lost the lease (it expired and another worker took the event); stopping this run');
          return;
        }
        await runHandler(handler, parsed.event, entry, log.child({ handler: handler.name }));
      }
      await finishEvent(store, lease, 'done');
      log.info('event processed');
    } catch (err) {
      await recordFailure(entry, lease, err, log);
    }
  }

  async function runHandler(
    handler: RegisteredHandler<Api>,
    event: Parameters<RegisteredHandler<Api>['run']>[0],
    entry: InFlight,
    log: Logger,
  ): Promise<void> {
    const controller = new AbortController();
    const onShutdown = () => controller.abort(entry.abort.signal.reason);
    entry.abort.signal.addEventListener('abort', onShutdown, { once: true });
    let markedInTransaction = false;
    const ctx: HandlerContext<Api> = {
      attempt: entry.event.attempt,
      logger: log,
      api: options.api,
      signal: controller.signal,
      async transaction<DB, T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
        if (markedInTransaction)
          throw new Error(`ctx.transaction was already used by handler ${handler.name} for this event; call it once.`);
        markedInTransaction = true;
        return store.db.transaction().execute(async (trx: Transaction<PayhooksTables>) => {
          // The handler's own tables are not in the payhooks schema: hand it the connection unqualified, with the
          // app's schema first on the search path, where the app's migrations put them. `local`: for this transaction only.
          const appTrx = trx.withoutPlugins();
          await sql.raw(searchPath).execute(appTrx);
          const result = await fn(appTrx as unknown as Transaction<DB>);
          await markHandlerCompleted(trx, entry.event.eventId, handler.name);
          return result;
        });
      },
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new HandlerTimeoutError(handler.name, handlerTimeoutMs);
        controller.abort(error);
        reject(error);
      }, handlerTimeoutMs);
    });
    try {
      await Promise.race([Promise.resolve(handler.run(event, ctx)), timeout]);
    } finally {
      clearTimeout(timer);
      entry.abort.signal.removeEventListener('abort', onShutdown);
    }
    if (!markedInTransaction) await markHandlerCompleted(store.db, entry.event.eventId, handler.name);
  }

  async function recordFailure(entry: InFlight, lease: Lease, err: unknown, log: Logger): Promise<void> {
    const message = describeThrown(err);
    try {
      if (entry.abort.signal.aborted) return; // shutdown: the lease is given back in stop()
      if (entry.event.attempt >= maxAttempts) {
        await finishEvent(store, lease, 'dead', message);
        log.error({ err }, `handler failed on the last of ${maxAttempts} attempts; event is dead (replay it once fixed)`);
      } else {
        const delay = eventRetryDelay(entry.event.attempt, options.backoff);
        await retryEventLater(store, lease, delay, message);
        log.warn({ err, retryInMs: delay }, 'handler failed; will retry');
      }
    } catch (storeErr) {
      // The lease will expire and another attempt will follow: nothing is lost.
      log.error({ err: storeErr }, 'could not record the failure; the lease will expire and the event run again');
    }
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
      logger.info({ workerId, concurrency }, 'worker started');
      // Resolve after the first claim round: events already due are under way, and what arrives next comes by
      // NOTIFY or polling. (Handlers are not awaited.)
      await pump();
    },
    wake() {
      void pump();
    },
    async stop(timeoutMs = WORKER_DEFAULTS.stopTimeoutMs) {
      if (!running) return;
      running = false;
      clearInterval(pollTimer);
      await unlisten?.().catch(() => undefined);
      // Let a claim under way land, then drop what has not started: those leases are given back below.
      await pumped;
      queue.clear();
      logger.info({ workerId, running: queue.pending, timeoutMs }, 'worker stopping: waiting for running handlers to finish');
      const drained = queue.onIdle();
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        drained.then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
      ]);
      clearTimeout(timer);
      if (!finished) {
        logger.warn({ running: inFlight.size }, 'handlers still running at the stop timeout; aborting them');
        for (const entry of inFlight.values()) entry.abort.abort(new Error('worker shutting down'));
      }
      const held = [...inFlight.values()].map((entry) => ({ eventId: entry.event.eventId, started: entry.started }));
      const released = await releaseLeases(store, workerId, held).catch(() => 0);
      logger.info({ workerId, released }, 'worker stopped');
    },
  };
}
