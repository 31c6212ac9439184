import { withEffectSpan } from '../internal/tracing.js';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { PayhooksError } from '../errors.js';
import { runInEffectScope } from '../internal/effect-scope.js';
import { capText, describeThrown } from '../internal/scrub.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import type { PayhooksDatabase } from '../store/database.js';
import { beginStep, completeStep, failStep, markStepIdempotent, type StepRef } from '../store/effect-steps.js';

/** The longest result (as JSON text) a step keeps; a longer one is not kept, and later attempts get `undefined`. */
export const EFFECT_RESULT_MAX_CHARS = 64 * 1024;

/** The longest step name. */
const STEP_NAME_MAX_CHARS = 200;

/** Options of one `ctx.effect` step. */
export interface EffectOptions {
  /**
   * Whether the outside API applies a repeat of the step's idempotency key once, so that a step whose outcome is
   * unknown (its process died between the call and its record) may simply be called again with the same key.
   * Default: true as soon as the step sends its key through the payhooks API client or a connector's `ctx.http`
   * (recorded before that request goes out), false otherwise: such a step, when its outcome is unknown, is held as
   * `needs-review` for an operator instead of being called again.
   */
  idempotent?: boolean | undefined;
}

/** What a step's function gets. */
export interface EffectStepContext {
  /**
   * The step's idempotency key: derived from the event, the handler and the step name, so the same on every attempt
   * and in every process. Pass it to the outside API (the payhooks API client and `ctx.http` do on their own).
   */
  key: string;
  /** Aborted when the handler times out or the worker shuts down. */
  signal: AbortSignal;
  /** How many times this step's function has been started, this call included (1 on the first). */
  calls: number;
}

/** A named step: its function runs at most once per event and handler, unless its outcome is unknown. */
export type EffectRunner = <T>(name: string, fn: (step: EffectStepContext) => Promise<T> | T, options?: EffectOptions) => Promise<T>;

/**
 * Thrown by `ctx.effect` when a step's outcome is unknown and it may not be called again on its own (it is not
 * idempotent): the handler stops there, and the event ends `needs-review` until an operator resolves the step
 * (`payhooks effects resolve <eventId> <step> --done|--redo`, or the console). Let it propagate.
 */
export class EffectNeedsReviewError extends PayhooksError {
  constructor(
    readonly eventId: string,
    readonly handler: string,
    readonly step: string,
  ) {
    super(
      `effect step ${JSON.stringify(step)} of handler ${handler} needs review: it started and never recorded an outcome, and it is not ` +
        `idempotent, so it is not called again on its own. Check whether it happened, then: payhooks effects resolve ${eventId} ${step} --done (it happened) or --redo (call it again)`,
    );
  }
}

/**
 * The idempotency key of one step: stable across attempts and processes, distinct per account, event, handler and
 * step. The default account's keys are those payhooks made before accounts existed (the account is not hashed in for
 * it), so that a step in flight across the upgrade is called again with the key it was first called with.
 *
 * @example
 * effectKey('default', 'evt_1', 'fees', 'late-fee') // 'ph_…' (32 hex digits)
 */
export function effectKey(account: string, eventId: string, handler: string, step: string): string {
  const scope = account === DEFAULT_ACCOUNT ? '' : `${account}\u0000`;
  return `ph_${createHash('sha256').update(`effect\u0000${scope}${eventId}\u0000${handler}\u0000${step}`).digest('hex').slice(0, 32)}`;
}

/** What a handler run's `ctx.effect` works on. */
export interface EffectRunnerOptions {
  store: PayhooksDatabase;
  account: string;
  eventId: string;
  receivedAt: Date;
  handler: string;
  attempt: number;
  signal: AbortSignal;
  logger: Logger;
}

function checkName(name: unknown): asserts name is string {
  if (
    typeof name !== 'string' ||
    name.trim() === '' ||
    name.length > STEP_NAME_MAX_CHARS ||
    [...name].some((ch) => ch.charCodeAt(0) < 0x20)
  ) {
    throw new TypeError(
      `ctx.effect needs a step name of 1 to ${STEP_NAME_MAX_CHARS} characters without control characters, not ${JSON.stringify(name)}.`,
    );
  }
}

/**
 * `ctx.effect` for one run of one handler: records each step's intent before its function runs and its result
 * after, and on a later attempt returns a completed step's result without calling it again. Nothing touches the
 * database until the handler calls it.
 */
export function createEffectRunner(options: EffectRunnerOptions): EffectRunner {
  const { store, account, eventId, handler, logger } = options;
  const used = new Set<string>();
  return async function effect<T>(
    name: string,
    fn: (step: EffectStepContext) => Promise<T> | T,
    stepOptions: EffectOptions = {},
  ): Promise<T> {
    checkName(name);
    if (typeof fn !== 'function') throw new TypeError(`ctx.effect(${JSON.stringify(name)}, fn): fn must be a function, not ${typeof fn}.`);
    const declared = stepOptions.idempotent;
    if (declared !== undefined && typeof declared !== 'boolean')
      throw new TypeError(`ctx.effect(${JSON.stringify(name)}): idempotent must be true or false, not ${JSON.stringify(declared)}.`);
    // Two steps of one name in one run would share a record and a key: the second would return the first's result.
    if (used.has(name))
      throw new TypeError(
        `ctx.effect: handler ${handler} used the step name ${JSON.stringify(name)} twice in one run; name each step once.`,
      );
    used.add(name);
    const ref: StepRef = { account, eventId, handler, step: name };
    const key = effectKey(account, eventId, handler, name);
    const log = logger.child({ step: name });
    const decision = await beginStep(store, {
      ...ref,
      receivedAt: options.receivedAt,
      idempotencyKey: key,
      idempotent: declared === true,
      attempt: options.attempt,
    });
    if (decision.action === 'completed') {
      log.debug('effect step completed on an earlier attempt: its recorded result is returned, it is not called again');
      return (decision.result === null ? undefined : JSON.parse(decision.result)) as T;
    }
    if (decision.action === 'review') {
      log.error('effect step has an unknown outcome and is not idempotent: the event waits for an operator (needs-review)');
      throw new EffectNeedsReviewError(eventId, handler, name);
    }
    if (decision.unknownBefore)
      log.warn(
        { calls: decision.calls },
        'effect step has an unknown outcome (an earlier run died before recording it); it is idempotent, so it is called again with the same key',
      );
    // Undeclared: the step becomes idempotent when its calls carry its key (the API client, ctx.http).
    const keyed = declared === undefined ? () => markStepIdempotent(store, ref) : async () => {};
    let value: T;
    try {
      // A span of its own under the handler's (docs/tracing.md): only a step that is called gets one.
      value = await withEffectSpan(
        name,
        async () => runInEffectScope({ key, keyed }, () => fn({ key, signal: options.signal, calls: decision.calls })),
        { 'payhooks.effect.calls': decision.calls, 'payhooks.effect.unknown_before': decision.unknownBefore },
      );
    } catch (err) {
      // Cut off mid-call (timeout, shutdown), a step that is not idempotent may or may not have happened: left started,
      // so that the next attempt holds it for review. Otherwise its throw says it did not happen: called again next time.
      if (declared !== true && options.signal.aborted) throw err;
      await failStep(store, ref, capText(describeThrown(err))).catch((recordErr: unknown) =>
        log.warn({ err: recordErr }, 'could not record the failure of an effect step; the next attempt will find its outcome unknown'),
      );
      throw err;
    }
    let text: string | null;
    try {
      text = value === undefined ? null : JSON.stringify(value);
    } catch (err) {
      log.warn({ err }, 'the result of an effect step is not JSON; it is not kept, and later attempts get undefined');
      text = null;
    }
    if (text !== null && text.length > EFFECT_RESULT_MAX_CHARS) {
      log.warn(
        { chars: text.length, max: EFFECT_RESULT_MAX_CHARS },
        'the result of an effect step is too long to keep; later attempts get undefined',
      );
      text = null;
    }
    const recorded = await completeStep(store, ref, text);
    if (!recorded) log.warn('effect step completed but its record was taken over by another run (this run lost its lease)');
    // Every attempt sees the result the same way: as its JSON, parsed (a Date as its string, no undefined fields).
    return (text === null ? value : JSON.parse(text)) as T;
  };
}
