import { z } from 'zod';
import { WORKER_DEFAULTS, type WorkerTunable } from './defaults.js';
import type { WorkerOptions } from './worker.js';

/**
 * The worker's tunable options as data, each optional: the one list the configuration file's `worker` key and the
 * service's resolved configuration are made from (`workerSettings` checks their values). Numbers are milliseconds
 * where they are durations.
 */
export const workerTunablesShape = {
  concurrency: z.number().optional(),
  maxPrefetch: z.number().optional(),
  maxAttempts: z.number().optional(),
  handlerTimeoutMs: z.number().optional(),
  leaseMs: z.number().optional(),
  pollIntervalMs: z.number().optional(),
  stopTimeoutMs: z.number().optional(),
  backoff: z.strictObject({ baseMs: z.number().optional(), maxMs: z.number().optional() }).optional(),
};

/** The worker's tunable options, as a library user or the configuration file gives them. */
export type WorkerTunables = z.infer<z.ZodObject<typeof workerTunablesShape>>;

/**
 * The tunables with `WORKER_DEFAULTS` filled in, all but `leaseMs`, whose default follows `handlerTimeoutMs` (the
 * worker works it out).
 *
 * @example
 * withWorkerDefaults({ concurrency: 8 }).maxAttempts // WORKER_DEFAULTS.maxAttempts
 */
export function withWorkerDefaults(given: WorkerTunables) {
  const { backoff, leaseMs, ...rest } = given;
  const { appSchema: _appSchema, backoff: defaultBackoff, leaseMs: _leaseFloor, ...numbers } = WORKER_DEFAULTS;
  const filled = { ...numbers } as { -readonly [K in keyof typeof numbers]: number };
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) filled[key as keyof typeof numbers] = value;
  return {
    ...filled,
    leaseMs,
    backoff: { baseMs: backoff?.baseMs ?? defaultBackoff.baseMs, maxMs: backoff?.maxMs ?? defaultBackoff.maxMs },
  };
}

/** True when two types are each assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/**
 * The list above is the worker's own tunables (`WORKER_DEFAULTS`' names but `appSchema`, which the service sets
 * apart): an option added to one and not the other fails the typecheck here.
 */
export const TUNABLES_MATCH_THE_WORKER: Same<
  Required<WorkerTunables>,
  Required<Pick<WorkerOptions, Exclude<WorkerTunable, 'appSchema'>>>
> = true;
