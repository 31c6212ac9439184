// The inbox operations the command line runs, by name, so that `payhooks events` and `payhooks replay` can run them
// in a `serve` that holds the embedded database (which admits one process) as well as on the database itself. The
// same functions run either way, so the output is the same.
import { z } from 'zod';
import type { PayhooksDatabase } from '../store/database.js';
import {
  countEventsByStatus,
  countEventsByTypeAndStatus,
  type EventsFilter,
  getEvent,
  type ListEventsFilter,
  listEvents,
  type OldestPending,
  oldestPendingEvent,
  type StatusCounts,
  type StoredEvent,
  type StoredEventDetail,
  type TypeStatusCount,
} from '../store/inbox.js';
import {
  type ArrivalPosition,
  countReplayable,
  newestArrival,
  pageReplayable,
  type ReplaySelection,
  replayEvents,
} from '../store/maintenance.js';
import { EVENT_STATUSES, type EventStatus } from '../store/schema.js';
import { MAX_EVENT_PAGE, pageEvents } from '../store/console-queries.js';
import { arrivalPosition, identifierText } from './inputs.js';

const status = z.enum(EVENT_STATUSES);
const replayable = z.enum(['dead', 'invalid', 'ignored', 'done']);
const filter = z.strictObject({ status: status.optional(), eventType: identifierText.optional() });
const selection = z.union([
  z.strictObject({ eventIds: z.array(identifierText).max(10_000), status: replayable.optional() }),
  z.strictObject({ status: replayable, eventType: identifierText.optional() }),
]);

/** The inbox operations the command line needs, whichever way they reach the database. */
export interface Inbox {
  listEvents(filter?: ListEventsFilter): Promise<StoredEvent[]>;
  countEventsByStatus(filter?: EventsFilter): Promise<StatusCounts>;
  getEvent(eventId: string): Promise<StoredEventDetail | undefined>;
  countEventsByTypeAndStatus(): Promise<TypeStatusCount[]>;
  oldestPendingEvent(): Promise<OldestPending | undefined>;
  newestArrival(): Promise<ArrivalPosition | null>;
  countReplayable(which: ReplaySelection): Promise<number>;
  pageReplayable(which: ReplaySelection, page: ReplayPage): Promise<{ eventId: string; position: ArrivalPosition }[]>;
  replayEvents(which: ReplaySelection): Promise<string[]>;
}

type ReplayPage = Parameters<typeof pageReplayable>[2];

/** The operations over a database this process opened. */
export function localInbox(store: PayhooksDatabase): Inbox {
  return {
    listEvents: (f) => listEvents(store, f),
    countEventsByStatus: (f) => countEventsByStatus(store, f),
    getEvent: (eventId) => getEvent(store, eventId),
    countEventsByTypeAndStatus: () => countEventsByTypeAndStatus(store),
    oldestPendingEvent: () => oldestPendingEvent(store),
    newestArrival: () => newestArrival(store),
    countReplayable: (which) => countReplayable(store, which),
    pageReplayable: (which, page) => pageReplayable(store, which, page),
    replayEvents: (which) => replayEvents(store, which),
  };
}

/** The name of an inbox operation. */
export type InboxOpName = keyof Inbox;

/**
 * The operations a running serve runs for the command line: the inbox's, except that events are listed a page
 * at a time ({@link MAX_EVENT_PAGE} at most, like the console's list), so that no request asks for an unbounded
 * number of rows; the client pages through them (`listEvents` of with-inbox.ts).
 */
export type RemoteOpName = Exclude<InboxOpName, 'listEvents'> | 'pageEvents';

/** The arguments of `pageEvents`: a filter, the `nextCursor` of the page before, and a page size. */
export interface RemotePageRequest {
  status?: EventStatus | undefined;
  eventType?: string | undefined;
  cursor?: string | undefined;
  limit: number;
}

/** The arguments each operation takes over HTTP, checked before it runs. */
// An optional argument left out arrives as null (JSON has no undefined in arrays): taken as left out.
const optional = <S extends z.ZodType>(schema: S) => schema.nullish().transform((value) => value ?? undefined);

const ARGS: Record<RemoteOpName, z.ZodType<unknown[]>> = {
  pageEvents: z.tuple([
    z.strictObject({
      status: status.optional(),
      eventType: identifierText.optional(),
      cursor: arrivalPosition.optional(),
      limit: z.number().int().min(1).max(MAX_EVENT_PAGE),
    }),
  ]),
  countEventsByStatus: z.tuple([optional(filter)]),
  getEvent: z.tuple([identifierText]),
  countEventsByTypeAndStatus: z.tuple([]),
  oldestPendingEvent: z.tuple([]),
  newestArrival: z.tuple([]),
  countReplayable: z.tuple([selection]),
  pageReplayable: z.tuple([
    selection,
    z.strictObject({
      limit: z.number().int().positive().max(10_000),
      after: arrivalPosition.optional(),
      through: arrivalPosition.optional(),
    }),
  ]),
  replayEvents: z.tuple([selection]),
};

/** Every operation's name, for a client that calls them by name. */
export const REMOTE_OP_NAMES = Object.keys(ARGS) as RemoteOpName[];

/** A call the console's API refuses: an unknown operation or arguments that do not fit it. */
export class InboxOpError extends Error {}

/**
 * Runs one named operation with arguments that came over HTTP, after checking them against the operation's
 * schema; resolves to its result (undefined when the operation found nothing).
 */
export async function runInboxOp(store: PayhooksDatabase, op: unknown, args: unknown): Promise<unknown> {
  if (typeof op !== 'string' || !Object.hasOwn(ARGS, op)) throw new InboxOpError(`Unknown operation ${JSON.stringify(op)}.`);
  const parsed = ARGS[op as RemoteOpName].safeParse(args ?? []);
  if (!parsed.success)
    throw new InboxOpError(
      `Invalid arguments of ${op}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}.`,
    );
  if (op === 'pageEvents') return pageEvents(store, parsed.data[0] as RemotePageRequest);
  const run = localInbox(store)[op as Exclude<RemoteOpName, 'pageEvents'>] as (...args: unknown[]) => Promise<unknown>;
  return run(...parsed.data);
}

const DATE_FIELDS = new Set(['receivedAt', 'nextAttemptAt', 'processedAt']);

/** JSON.parse reviver that gives an operation's result its dates back, as the local call returns them. */
export function reviveInboxResult(key: string, value: unknown): unknown {
  return DATE_FIELDS.has(key) && typeof value === 'string' ? new Date(value) : value;
}
