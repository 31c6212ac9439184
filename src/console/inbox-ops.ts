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
import { EVENT_STATUSES } from '../store/schema.js';

const status = z.enum(EVENT_STATUSES);
const replayable = z.enum(['dead', 'invalid', 'ignored', 'done']);
const filter = z.strictObject({ status: status.optional(), eventType: z.string().optional() });
const selection = z.union([
  z.strictObject({ eventIds: z.array(z.string()).max(10_000), status: replayable.optional() }),
  z.strictObject({ status: replayable, eventType: z.string().optional() }),
]);
const position = z.string().regex(/^\d+$/);

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

/** The arguments each operation takes over HTTP, checked before it runs. */
// An optional argument left out arrives as null (JSON has no undefined in arrays): taken as left out.
const optional = <S extends z.ZodType>(schema: S) => schema.nullish().transform((value) => value ?? undefined);

const ARGS: Record<InboxOpName, z.ZodType<unknown[]>> = {
  listEvents: z.tuple([optional(filter.extend({ limit: z.number().int().positive().optional() }))]),
  countEventsByStatus: z.tuple([optional(filter)]),
  getEvent: z.tuple([z.string()]),
  countEventsByTypeAndStatus: z.tuple([]),
  oldestPendingEvent: z.tuple([]),
  newestArrival: z.tuple([]),
  countReplayable: z.tuple([selection]),
  pageReplayable: z.tuple([
    selection,
    z.strictObject({ limit: z.number().int().positive().max(10_000), after: position.optional(), through: position.optional() }),
  ]),
  replayEvents: z.tuple([selection]),
};

/** Every operation's name, for a client that calls them by name. */
export const INBOX_OP_NAMES = Object.keys(ARGS) as InboxOpName[];

/** A call the console's API refuses: an unknown operation or arguments that do not fit it. */
export class InboxOpError extends Error {}

/**
 * Runs one named operation with arguments that came over HTTP, after checking them against the operation's
 * schema; resolves to its result (undefined when the operation found nothing).
 */
export async function runInboxOp(store: PayhooksDatabase, op: unknown, args: unknown): Promise<unknown> {
  if (typeof op !== 'string' || !Object.hasOwn(ARGS, op)) throw new InboxOpError(`Unknown operation ${JSON.stringify(op)}.`);
  const parsed = ARGS[op as InboxOpName].safeParse(args ?? []);
  if (!parsed.success)
    throw new InboxOpError(
      `Invalid arguments of ${op}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}.`,
    );
  const run = localInbox(store)[op as InboxOpName] as (...args: unknown[]) => Promise<unknown>;
  return run(...parsed.data);
}

const DATE_FIELDS = new Set(['receivedAt', 'nextAttemptAt', 'processedAt']);

/** JSON.parse reviver that gives an operation's result its dates back, as the local call returns them. */
export function reviveInboxResult(key: string, value: unknown): unknown {
  return DATE_FIELDS.has(key) && typeof value === 'string' ? new Date(value) : value;
}
