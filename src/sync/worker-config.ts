import { z } from 'zod';
import type { PayhooksWorkerOptions } from '../payhooks.js';
import { workerSettings } from '../worker/worker.js';

/** The worker's options `payhooks serve` takes from the configuration file's `worker` key: names of `WORKER_DEFAULTS`. */
export type ServiceWorkerOptions = Pick<
  PayhooksWorkerOptions,
  'concurrency' | 'maxPrefetch' | 'maxAttempts' | 'handlerTimeoutMs' | 'leaseMs' | 'pollIntervalMs' | 'stopTimeoutMs' | 'backoff'
>;

/** The options whose range {@link workerSettings} checks (everything but `backoff`, which it does not). */
type CheckedOption = Exclude<keyof ServiceWorkerOptions, 'backoff'>;

/**
 * Why `options` would be refused by the worker, with the option it names: {@link workerSettings}' own rule and
 * words, so that the file, the variables and `createPayhooks` refuse the same values. Undefined when they pass.
 *
 * @example
 * workerOptionProblem({ concurrency: 0 }) // { option: 'concurrency', message: 'must be a whole number of at least 1, not 0.' }
 */
export function workerOptionProblem(options: Pick<ServiceWorkerOptions, CheckedOption>): { option: string; message: string } | undefined {
  try {
    workerSettings(options);
    return undefined;
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    // Its messages start with the option's name (`leaseMs (…) must be longer than handlerTimeoutMs …` included).
    const option = /^[A-Za-z]+/.exec(err.message)?.[0] ?? '';
    const message = err.message.startsWith(`${option} must `) ? err.message.slice(option.length + 1) : err.message;
    return { option, message };
  }
}

/** The backoff's rule, which the worker leaves to its caller: two positive numbers of milliseconds, the cap not below the base. */
function backoffProblems(backoff: NonNullable<ServiceWorkerOptions['backoff']>): { option: 'baseMs' | 'maxMs'; message: string }[] {
  const problems: { option: 'baseMs' | 'maxMs'; message: string }[] = [];
  for (const option of ['baseMs', 'maxMs'] as const) {
    const value = backoff[option];
    if (value !== undefined && (!Number.isFinite(value) || value <= 0)) {
      problems.push({ option, message: `must be a positive number of milliseconds, not ${value}.` });
    }
  }
  if (problems.length === 0 && backoff.baseMs !== undefined && backoff.maxMs !== undefined && backoff.maxMs < backoff.baseMs) {
    problems.push({
      option: 'maxMs',
      message: `(${backoff.maxMs}) must not be shorter than baseMs (${backoff.baseMs}): it caps every delay.`,
    });
  }
  return problems;
}

/**
 * The configuration file's `worker` key (docs/configuration.md#the-worker-of-serve): numbers, in milliseconds for
 * durations (the file's `1m`-style durations stop at seconds, and retry schedules go below them). Each bad value is
 * refused at load under its own key (`worker.concurrency`, `worker.backoff.baseMs`).
 */
export const workerConfigSchema = z
  .strictObject({
    concurrency: z.number().optional(),
    maxPrefetch: z.number().optional(),
    maxAttempts: z.number().optional(),
    handlerTimeoutMs: z.number().optional(),
    leaseMs: z.number().optional(),
    pollIntervalMs: z.number().optional(),
    stopTimeoutMs: z.number().optional(),
    backoff: z.strictObject({ baseMs: z.number().optional(), maxMs: z.number().optional() }).optional(),
  })
  .superRefine((worker, ctx) => {
    const { backoff, ...checked } = worker;
    const problem = workerOptionProblem(checked);
    if (problem) ctx.addIssue({ code: 'custom', path: [problem.option], message: problem.message });
    for (const { option, message } of backoff ? backoffProblems(backoff) : []) {
      ctx.addIssue({ code: 'custom', path: ['backoff', option], message });
    }
  });
