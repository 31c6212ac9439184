import { z } from 'zod';
import { type WorkerTunables, workerTunablesShape } from '../worker/options-schema.js';
import { WorkerOptionError, workerSettings } from '../worker/worker.js';

/** The worker's options `payhooks serve` takes from the configuration file's `worker` key: the worker's own tunables. */
export type ServiceWorkerOptions = WorkerTunables;

/**
 * Why `options` would be refused by the worker, with the option it names (`backoff.baseMs` for a nested one):
 * {@link workerSettings}' own rule and words, so that the file, the variables and `createPayhooks` refuse the same
 * values. Undefined when they pass.
 *
 * @example
 * workerOptionProblem({ concurrency: 0 }) // { option: 'concurrency', message: 'must be a whole number of at least 1, not 0.' }
 */
export function workerOptionProblem(options: ServiceWorkerOptions): { option: string; message: string } | undefined {
  try {
    workerSettings(options);
    return undefined;
  } catch (err) {
    if (!(err instanceof WorkerOptionError)) throw err;
    return { option: err.option, message: err.reason };
  }
}

/**
 * The configuration file's `worker` key (docs/configuration.md#the-worker-of-serve): numbers, in milliseconds for
 * durations (the file's `1m`-style durations stop at seconds, and retry schedules go below them). Each bad value is
 * refused at load under its own key (`worker.concurrency`, `worker.backoff.baseMs`).
 */
export const workerConfigSchema = z.strictObject(workerTunablesShape).superRefine((worker, ctx) => {
  const problem = workerOptionProblem(worker);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.option.split('.'), message: problem.message });
});
