import type { Span } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { parseBodyJson, parseJsonEvent, type UnknownEvent, type WebhookEvent } from '../events/index.js';
import { storedValidEvent } from '../events/parse-event.js';
import { capText } from '../internal/scrub.js';
import { lazyScrubbingChild } from '../logger.js';
import type { ClaimedEvent } from '../store/claim.js';
import type { Outcome } from '../store/outcomes.js';

/** An event this worker claimed and has not yet recorded: running, waiting to run, or having its outcome written. */
export interface InFlight {
  event: ClaimedEvent;
  started: boolean;
  /** Set by stop() when it aborts the run (the reason): the lease is given back there, and nothing is recorded. */
  shutdown?: Error | undefined;
  /** The shutdown signal's controller, made only when a handler asks for a signal (see {@link shutdownSignal}). */
  abort?: AbortController | undefined;
  /** By this process's clock, when the lease runs out unless extended (with a margin: see the lease keeper). */
  leaseUntil: number;
  /** Another worker has taken the event (its lease ran out): run no further handler, record nothing. */
  lost: boolean;
  /** Outcomes of this run noted and not yet handed over to be written (see the outcome writer's `note`). */
  noted?: Outcome[] | undefined;
  /** The writing of the run's final outcome, once handed over: stop() waits for it. */
  recording?: Promise<void> | undefined;
  /** The attempt's `webhook.process` span, once it runs: told how the attempt ended. */
  span?: Span | undefined;
}

/**
 * The shutdown signal of a run, made when something first asks for it (most runs never do): aborted by stop(), or at
 * once when stop() already has.
 */
export function shutdownSignal(entry: InFlight): AbortSignal {
  entry.abort ??= new AbortController();
  if (entry.shutdown && !entry.abort.signal.aborted) entry.abort.abort(entry.shutdown);
  return entry.abort.signal;
}

/** What the handlers of one attempt of an event share. */
export class AttemptRun {
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

/** A stored body as its handlers get it, or why the event is invalid (with the failing paths, for the log). */
export type StoredEvent =
  | { ok: true; event: WebhookEvent | UnknownEvent }
  | { ok: false; lastError: string; issues?: string[] | undefined };

/** The claimed event's body, read for its handlers. */
export function readStoredEvent({ eventId, eventType, rawBody, dataChecked }: ClaimedEvent): StoredEvent {
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
