import { eventKey } from './accounts.js';
import type { PayhooksDatabase } from './database.js';
import { type EventRef, ofEvents } from './event-refs.js';

/** One run of a handler for an event (a `handler_attempts` row, or a completion the worker recorded). */
export interface HandlerAttempt {
  handler: string;
  /** The event's attempt it ran in (1, 2, …; a replay starts again at 1); null when carried over by migration 008. */
  attempt: number | null;
  /** Null when carried over by migration 008 (the start was not recorded), as is `durationMs`. */
  startedAt: Date | null;
  endedAt: Date;
  durationMs: number | null;
  outcome: 'completed' | 'failed';
  /** Why it failed (capped at 8 KB); null when it completed. */
  error: string | null;
}

/** What the handlers did with one event: its runs in order, and which handlers settled it. */
export interface HandlerTimeline {
  /** Every run of a handler, oldest first. */
  attempts: HandlerAttempt[];
  /** Handlers that completed for it. */
  completed: string[];
  /** Handlers that gave up on it (dead-lettered, or ran out of attempts). */
  givenUp: string[];
}

/**
 * The handler timelines of some events, by {@link eventKey} of their account and eventId (every event asked for has
 * one, empty when nothing ran): two queries whatever the number of events, each through the event's key. Failed runs (and completions marked in
 * a handler's own transaction) are handler_attempts rows; a completion the worker recorded is its handler_runs row,
 * which carries its start (migrations/009).
 *
 * @example
 * const timeline = (await handlerTimelines(store, [{ account: 'default', eventId: 'evt_1' }])).get(eventKey('default', 'evt_1'))!;
 */
export async function handlerTimelines(store: PayhooksDatabase, events: readonly EventRef[]): Promise<Map<string, HandlerTimeline>> {
  const timelines = new Map<string, HandlerTimeline>();
  for (const { account, eventId } of events) timelines.set(eventKey(account, eventId), { attempts: [], completed: [], givenUp: [] });
  if (events.length === 0) return timelines;
  const ids = ofEvents(events);
  const runs = await store.db
    .selectFrom('handler_runs')
    .select(['event_id', 'account', 'handler', 'outcome', 'attempt', 'started_at', 'completed_at'])
    .where(ids)
    .orderBy('completed_at')
    .orderBy('handler')
    .execute();
  const attempts = await store.db
    .selectFrom('handler_attempts')
    .select(['event_id', 'account', 'handler', 'attempt', 'started_at', 'ended_at', 'outcome', 'error', 'id'])
    .where(ids)
    .execute();
  const rows = [
    ...attempts.map((a) => ({ ...a, order: Number(a.id) })),
    ...runs.flatMap((r) =>
      r.outcome === 'done' && r.started_at
        ? [{ ...r, ended_at: r.completed_at, outcome: 'completed' as const, error: null, order: Number.MAX_SAFE_INTEGER }]
        : [],
    ),
  ]
    // In the order they ran; rows carried over by migration 008 (no start) by when they ended.
    .sort((a, b) => (a.started_at ?? a.ended_at).getTime() - (b.started_at ?? b.ended_at).getTime() || a.order - b.order);
  for (const a of rows)
    timelines.get(eventKey(a.account, a.event_id))?.attempts.push({
      handler: a.handler,
      attempt: a.attempt,
      startedAt: a.started_at,
      endedAt: a.ended_at,
      durationMs: a.started_at ? a.ended_at.getTime() - a.started_at.getTime() : null,
      outcome: a.outcome,
      error: a.error,
    });
  for (const run of runs)
    timelines.get(eventKey(run.account, run.event_id))?.[run.outcome === 'done' ? 'completed' : 'givenUp'].push(run.handler);
  return timelines;
}
