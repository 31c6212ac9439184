import type { Logger } from 'pino';
import { describeThrown } from '../internal/scrub.js';
import { failSpan, type InSpanOptions, inSpan, linksTo, markSpanFailed, SPAN_KIND } from '../internal/tracing.js';
import type { ClaimedEvent } from '../store/claim.js';
import type { Outcome } from '../store/outcomes.js';
import { EffectNeedsReviewError } from './effects.js';
import { DeadLetterError, errorClassOf, type HandlerFailure, unstorableTextExplained } from './handler-errors.js';
import type { HandlerRunner } from './handler-runner.js';
import type { HandlerRegistry, RegisteredHandler } from './handlers.js';
import { AttemptRun, type InFlight, readStoredEvent } from './in-flight.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { OutcomeWriter } from './outcome-writer.js';
import { type SettleRules, type Settlement, settleAttempt, settleFailureOutsideHandlers } from './settle-policy.js';
import type { WorkerEvents } from './worker-events.js';

const INTERNAL_SPAN: InSpanOptions = {};

/** What an {@link AttemptRunner} needs. */
export interface AttemptRunnerOptions<Api> {
  registry: HandlerRegistry<Api>;
  logger: Logger;
  leases: LeaseKeeper;
  outcomes: OutcomeWriter;
  handlers: HandlerRunner<Api>;
  rules: SettleRules;
  events: WorkerEvents;
}

/** How an attempt ended, for its span's `payhooks.event.outcome`. */
function spanOutcome(outcome: Outcome): string {
  return outcome.kind === 'finished' ? outcome.status : outcome.kind;
}

/** A handler's run of this attempt, ended now: what its completion or attempt record carries. */
function handlerRun(event: ClaimedEvent, startedAt: Date): { attempt: number; startedAt: Date; endedAt: Date } {
  return { attempt: event.attempt, startedAt, endedAt: new Date() };
}

/**
 * Runs one attempt of a claimed event: reads its body, runs each of its handlers not yet settled (one handler's
 * failure holds back no other), and hands the settle policy's verdict to the outcome writer, telling the worker's
 * events what happened. Each attempt is a trace of its own (`webhook.process`), linked to the span that received it.
 */
export class AttemptRunner<Api> {
  readonly #options: AttemptRunnerOptions<Api>;

  constructor(options: AttemptRunnerOptions<Api>) {
    this.#options = options;
  }

  /** Runs the attempt in its span; resolves once its final outcome is handed over (or it stopped without one). */
  run(entry: InFlight): Promise<void> {
    entry.started = true;
    // Each attempt is a trace of its own, linked to the span that received the event (a retry may come hours later):
    // the OpenTelemetry messaging conventions' consumer span (docs/tracing.md).
    return inSpan(
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
        return this.#runHandlers(entry);
      },
    );
  }

  async #runHandlers(entry: InFlight): Promise<void> {
    const { registry, leases, outcomes } = this.#options;
    const { event } = entry;
    const attemptRun = new AttemptRun(entry, this.#options.logger);
    try {
      if (!leases.holds(attemptRun)) return;
      const parsed = readStoredEvent(event);
      // Not needed again here: dropped, or the body would stay in memory until the outcome batch that finishes the event
      // is written (a few thousand events at a time, surviving each young-generation GC). A checked event's lazy data
      // keeps its own reference, for as long as its handlers hold the event.
      event.rawBody = '';
      if (!parsed.ok) {
        this.#finish(entry, 'invalid', parsed.lastError);
        if (parsed.issues) attemptRun.log.warn({ issues: parsed.issues }, 'event data does not match its schema; marked invalid');
        return;
      }
      // A handler limited to other accounts (a sink filtered by account) is not due for this event.
      const handlers = registry.for(event.eventType, event.account);
      if (handlers.length === 0) {
        // An ignored event is money nobody booked if the type was meant to be handled: say so every time, never silently.
        this.#finish(entry, 'ignored', null, (stillHeld) => {
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
        outcomes.handOver(entry);
        if (!leases.holds(attemptRun)) return;
        const failure = await this.#runOne(handler, parsed.event, attemptRun);
        if (entry.shutdown) return; // shutdown: the lease is given back in stop()
        if (failure instanceof EffectNeedsReviewError) reviews.push({ handler: handler.name, error: failure });
        else if (failure !== undefined) failures.push({ handler: handler.name, error: failure });
      }
      if (entry.shutdown) return;
      this.#settle(attemptRun, settleAttempt({ ...this.#attempt(event), failures, skipped, reviews }, this.#options.rules), skipped);
    } catch (err) {
      if (entry.shutdown) return;
      const settlement = settleFailureOutsideHandlers(event, event.attempt, err, this.#options.rules);
      this.#settle(attemptRun, settlement, [], err);
    } finally {
      // A run that ends without a final outcome (shutdown, a lost lease) still writes what its handlers did.
      outcomes.handOver(entry);
    }
  }

  #attempt(event: ClaimedEvent) {
    return {
      account: event.account,
      eventId: event.eventId,
      attempt: event.attempt,
      resourceKey: event.resourceKey,
      givenUpBefore: event.givenUp,
    };
  }

  /** Runs one handler in its span and notes its run; resolves to what it threw (undefined when it completed). */
  async #runOne(
    handler: RegisteredHandler<Api>,
    data: Parameters<RegisteredHandler<Api>['run']>[0],
    attemptRun: AttemptRun,
  ): Promise<unknown> {
    const { entry } = attemptRun;
    const { event } = entry;
    const { events, outcomes } = this.#options;
    const started = performance.now();
    const startedAt = new Date();
    if (events.has('run:started')) {
      events.emit('run:started', { eventId: event.eventId, eventType: event.eventType, attempt: event.attempt, handler: handler.name });
    }
    try {
      const markedInTransaction = await inSpan('webhook.handler', INTERNAL_SPAN, async (span) => {
        if (span.isRecording()) span.setAttribute('payhooks.handler.name', handler.name);
        try {
          return await this.#options.handlers.run(handler, data, attemptRun);
        } catch (err) {
          // Named for what the worker makes of it: retried, or given up (DeadLetterError).
          failSpan(span, err);
          throw err;
        }
      });
      this.#ended(handler, event, started, undefined);
      // Written with the event's outcome, or before it: the batches go out in order. Every run is kept, in the batch
      // that carries the outcome (no statement more): a completion carries its run.
      const run = handlerRun(event, startedAt);
      if (!markedInTransaction)
        outcomes.note(entry, { kind: 'completed', account: event.account, eventId: event.eventId, handler: handler.name, run });
      else
        outcomes.note(entry, {
          kind: 'attempt',
          account: event.account,
          eventId: event.eventId,
          handler: handler.name,
          error: null,
          ...run,
        });
      return undefined;
    } catch (thrown) {
      if (entry.shutdown) return thrown;
      const err = unstorableTextExplained(thrown);
      this.#ended(handler, event, started, err);
      outcomes.note(entry, {
        kind: 'attempt',
        account: event.account,
        eventId: event.eventId,
        handler: handler.name,
        error: describeThrown(err),
        // What groups the failure into an issue (migrations/020), counted in the same statement.
        errorClass: errorClassOf(err),
        eventType: event.eventType,
        ...handlerRun(event, startedAt),
      });
      if (!(err instanceof EffectNeedsReviewError)) attemptRun.log.warn({ err, handler: handler.name }, 'handler failed');
      return err;
    }
  }

  #ended(handler: RegisteredHandler<Api>, event: ClaimedEvent, started: number, error: unknown): void {
    const { events } = this.#options;
    if (!events.has('run:ended')) return;
    const failed = error !== undefined;
    const seconds = (performance.now() - started) / 1000;
    events.emit('run:ended', {
      account: event.account,
      eventId: event.eventId,
      eventType: event.eventType,
      attempt: event.attempt,
      handler: handler.name,
      failed,
      seconds,
      ...(failed ? { error } : {}),
    });
  }

  /** Hands the final state of an event no handler ran for (`ignored`, `invalid`) over to be written, told once it is. */
  #finish(entry: InFlight, status: 'ignored' | 'invalid', lastError: string | null, then?: (held: boolean) => void): void {
    this.#record(
      entry,
      { kind: 'finished', account: entry.event.account, eventId: entry.event.eventId, status, lastError },
      (stillHeld) => {
        if (stillHeld) this.#tell(entry, status);
        then?.(stillHeld);
      },
    );
  }

  /** Hands an outcome over to be written, after telling the attempt's span how it ended. */
  #record(entry: InFlight, outcome: Outcome, then?: (held: boolean) => void): void {
    if (entry.span?.isRecording()) {
      const ended = spanOutcome(outcome);
      entry.span.setAttribute('payhooks.event.outcome', ended);
      if (ended === 'retry' || ended === 'dead' || ended === 'invalid') markSpanFailed(entry.span, ended);
    }
    this.#options.outcomes.record(entry, outcome, then);
  }

  #tell(entry: InFlight, status: 'done' | 'ignored' | 'invalid'): void {
    const { events } = this.#options;
    if (events.has('event:finished'))
      events.emit('event:finished', { eventId: entry.event.eventId, eventType: entry.event.eventType, status });
  }

  /**
   * Records the settle policy's verdict: given-up handlers marked, then the event's next state, each told to the
   * worker's events and logged as before. `error` is the failure outside the handlers, when that is what ended it.
   */
  #settle(attemptRun: AttemptRun, settlement: Settlement, skipped: readonly string[], error?: unknown): void {
    const { entry } = attemptRun;
    const { account, eventId, eventType, attempt } = entry.event;
    const { outcomes, events, rules, logger } = this.#options;
    for (const { handler, error: thrown } of settlement.gaveUp) {
      outcomes.note(entry, { kind: 'gaveUp', account, eventId, handler, error: describeThrown(thrown) });
      attemptRun.log.error(
        { handler },
        thrown instanceof DeadLetterError
          ? `handler ${handler} gave up on the event (DeadLetterError): retrying cannot help; it is not run for it again, and the event ends dead once its other handlers are through (replay it once fixed)`
          : `handler ${handler} failed on the last of ${rules.maxAttempts} attempts and gave up on the event; it ends dead once its other handlers are through (replay it once fixed)`,
      );
    }
    const { outcome } = settlement;
    if (outcome.kind === 'retry') {
      this.#record(entry, outcome);
      events.emit('event:retry-scheduled', { eventId, eventType, attempt, delayMs: outcome.delayMs, handlers: outcome.owed });
      if (settlement.kind === 'retry')
        attemptRun.log.warn({ failed: settlement.retried, retryInMs: outcome.delayMs }, 'handler failed; will retry');
      else attemptRun.log.warn({ err: error, retryInMs: outcome.delayMs }, 'running the event failed; will retry');
      return;
    }
    if (outcome.kind === 'park') {
      this.#record(entry, outcome);
      events.emit('event:parked', { eventId, eventType, handlers: skipped });
      if (settlement.kind === 'park')
        attemptRun.log.info({ waitingFor: skipped }, `event waits for ${settlement.waitingFor}; its other handlers ran`);
      return;
    }
    if (settlement.kind === 'failed-outside-handlers') {
      this.#record(entry, outcome, (stillHeld) => {
        if (stillHeld) events.emit('event:dead', { eventId, eventType, attempt, lastError: outcome.lastError });
      });
      attemptRun.log.error(
        { err: error },
        `running the event failed on the last of ${rules.maxAttempts} attempts; event is dead (replay it once fixed)`,
      );
      return;
    }
    this.#record(entry, outcome, (stillHeld) => {
      if (!stillHeld) return;
      if (settlement.kind === 'needs-review') {
        events.emit('event:needs-review', { eventId, eventType, handlers: settlement.held });
        attemptRun.log.error(
          { held: settlement.held },
          'event needs review: an effect step has an unknown outcome and is not idempotent; its other handlers are through',
        );
      } else if (settlement.kind === 'dead') {
        events.emit('event:dead', { eventId, eventType, attempt, lastError: outcome.lastError });
        attemptRun.log.error(
          { gaveUp: settlement.deadHandlers },
          'event is dead: a handler gave up on it (the others completed); replay it once fixed',
        );
      } else {
        this.#tell(entry, 'done');
        // Asked of the parent first: at a level above info, the event's logger is never made.
        if (logger.isLevelEnabled('info')) attemptRun.log.info('event processed');
      }
    });
  }
}
