import { DEFAULT_APP_SCHEMA } from '../store/migrate.js';
import type { WorkerOptions } from './worker.js';

/**
 * Every default of the worker, in one place: {@link createWorker}, {@link eventRetryDelay} and `stop()` read
 * them from here, and the docs quote them from here.
 *
 * `leaseMs` is a floor: the default lease is the longer of it and twice `handlerTimeoutMs`, so that raising the
 * handler timeout alone never lets another worker take an event whose handler still runs.
 */
export const WORKER_DEFAULTS = {
  /** Events run at once by one process. */
  concurrency: 4,
  /**
   * Events a process claims beyond those it runs, at most, so that fast handlers are not kept waiting for the next
   * claim. The worker holds fewer when handlers are slow: about one second of work (see docs/event-states.md).
   */
  maxPrefetch: 1000,
  /** How long a claim holds an event (at least; see above). */
  leaseMs: 60_000,
  /** A handler running longer fails, and its signal aborts. */
  handlerTimeoutMs: 30_000,
  /** Attempts before an event is dead. */
  maxAttempts: 10,
  /** Polling for due events when no notification arrives. */
  pollIntervalMs: 1000,
  /** Retry spacing: exponential from `baseMs`, capped at `maxMs`, with jitter. */
  backoff: { baseMs: 1000, maxMs: 3_600_000 },
  /**
   * How long `stop()` lets running handlers finish before aborting them. `serve` exits at most 1.5 s after it: under a
   * supervisor that kills after a grace period (Kubernetes: 30 s), set it below that (`PAYHOOKS_STOP_TIMEOUT_MS`).
   */
  stopTimeoutMs: 30_000,
  /** The schema `ctx.transaction` puts first on the search path: where the app's own tables live. */
  appSchema: DEFAULT_APP_SCHEMA,
} as const satisfies AllSet<Pick<WorkerOptions, WorkerTunable>>;

/**
 * The worker's default poll interval behind a transaction pooler (`database.pooler: 'transaction'`), where it cannot
 * LISTEN and polling is its only wake-up: an idle worker then picks a new event up within about this long. Each poll
 * is one claim statement (a few a second per worker process).
 */
export const POOLED_POLL_INTERVAL_MS = 200;

/** The worker's options that have a default here (every one `createPayhooks` and `serve` take, and `appSchema`). */
export type WorkerTunable =
  | 'concurrency'
  | 'maxPrefetch'
  | 'leaseMs'
  | 'handlerTimeoutMs'
  | 'maxAttempts'
  | 'pollIntervalMs'
  | 'backoff'
  | 'stopTimeoutMs'
  | 'appSchema';

/** Every option present and defined, nested objects too: what a complete set of defaults looks like. */
type AllSet<T> = { [K in keyof T]-?: NonNullable<T[K]> extends object ? AllSet<NonNullable<T[K]>> : NonNullable<T[K]> };
