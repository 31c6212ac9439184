import type { Logger } from 'pino';

/**
 * What a worker tells its subscribers, by event name: metrics, tracing and logs listen here instead of each being a
 * callback of the worker's. Payloads carry ids, names, counts and durations, never an event's body or data.
 */
export interface WorkerEventMap {
  /** A claim brought events into this worker (not emitted for a claim that found none). */
  'events:claimed': { workerId: string; eventIds: readonly string[] };
  /** A handler starts its run for an attempt of an event. */
  'run:started': { eventId: string; eventType: string; attempt: number; handler: string };
  /** A handler's run ended: completed, or `failed` with its `error` (retried or given up: see the event's outcome). */
  'run:ended': {
    account: string;
    eventId: string;
    eventType: string;
    attempt: number;
    handler: string;
    failed: boolean;
    seconds: number;
    error?: unknown;
  };
  /** The event goes back to waiting and runs again after `delayMs`, owing `handlers` (null: all of them). */
  'event:retry-scheduled': { eventId: string; eventType: string; attempt: number; delayMs: number; handlers: readonly string[] | null };
  /** Nothing failed, but `handlers` wait for an earlier event of the resource. */
  'event:parked': { eventId: string; eventType: string; handlers: readonly string[] };
  /** A handler is held at an effect step of unknown outcome until an operator resolves it. */
  'event:needs-review': { eventId: string; eventType: string; handlers: readonly string[] };
  /** The event ended dead: a handler gave up, or the last attempt failed outside the handlers. */
  'event:dead': { eventId: string; eventType: string; attempt: number; lastError: string | null };
  /** The event ended another way: `done`, `ignored` (no handler) or `invalid` (its data failed its schema). */
  'event:finished': { eventId: string; eventType: string; status: 'done' | 'ignored' | 'invalid' };
  /** This worker lost the lease of an event (it ran out, or another worker took it): the run stops, records nothing. */
  'lease:lost': { eventId: string };
  /** One batch of outcomes was written. */
  'outcomes:written': { count: number; seconds: number };
  /** The worker vacuumed the work queue (`error` when it failed). */
  'queue:vacuumed': { seconds: number; error?: unknown };
  /** `stop()` began: claiming has stopped, `running` handlers are given the stop timeout. */
  'worker:stopping': { workerId: string; running: number };
  /** The worker stopped and gave `released` unfinished leases back. */
  'worker:stopped': { workerId: string; released: number };
}

/** The name of a worker event. */
export type WorkerEventName = keyof WorkerEventMap;
/** A subscriber of one worker event. */
export type WorkerEventListener<K extends WorkerEventName> = (payload: WorkerEventMap[K]) => void;

/**
 * The worker's events. A listener runs synchronously, in the worker's own path, so it should be quick; one that throws
 * is logged and changes nothing else (the other listeners still run, the worker goes on), as graphile-worker's
 * `safeEmit` does.
 *
 * @example
 * const hooks = createPayhooks({ secret });
 * hooks.events.on('event:dead', ({ eventId, lastError }) => alertOnCall(eventId, lastError));
 */
export class WorkerEvents {
  readonly #listeners = new Map<WorkerEventName, Set<WorkerEventListener<never>>>();
  #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  /** Where a throwing listener is reported; the worker sets its own when it starts, unless one was given. */
  useLogger(logger: Logger): void {
    this.#logger ??= logger;
  }

  /** Subscribes `listener` to `name`; returns the function that unsubscribes it. */
  on<K extends WorkerEventName>(name: K, listener: WorkerEventListener<K>): () => void {
    const set = this.#listeners.get(name) ?? new Set();
    this.#listeners.set(name, set);
    set.add(listener as WorkerEventListener<never>);
    return () => {
      set.delete(listener as WorkerEventListener<never>);
    };
  }

  /** Whether anything listens to `name`: the worker builds a payload only then. */
  has(name: WorkerEventName): boolean {
    return (this.#listeners.get(name)?.size ?? 0) > 0;
  }

  /** Tells each listener of `name`; a listener that throws is logged and skipped. */
  emit<K extends WorkerEventName>(name: K, payload: WorkerEventMap[K]): void {
    const set = this.#listeners.get(name);
    if (!set) return;
    for (const listener of set) {
      try {
        (listener as WorkerEventListener<K>)(payload);
      } catch (err) {
        this.#logger?.error({ err, workerEvent: name }, `a listener of the worker event ${name} threw; the worker goes on`);
      }
    }
  }
}
