import { type ResolveOutcome, resolveStep, type StepResolution } from '../store/effect-steps.js';
import { discardQuarantined, type ReleaseOptions, type ReleaseOutcome, releaseQuarantined } from '../receiver/release-quarantined.js';
import type { PayhooksDatabase } from '../store/database.js';
import { type FoundId, findById } from '../store/find-by-id.js';
import { type ResourceStory, resourceStory } from '../store/resource-story.js';
import {
  getQuarantined,
  listQuarantined,
  type QuarantinedDelivery,
  type QuarantinedDetail,
  type QuarantineFilter,
} from '../store/quarantine.js';
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
  previewReplay,
  type ReplayBatch,
  type ReplayPreview,
  type ReplaySelection,
  replayBatch,
} from '../store/maintenance.js';

/**
 * What `payhooks events` and `payhooks replay` ask of the inbox: the store's operations on a database this process
 * opened ({@link localInbox}), or the console's REST API of a `serve` that holds the embedded database
 * (with-inbox.ts). Either way the same answers, so the commands print the same.
 */
export interface Inbox {
  /** Events newest first, at most `limit` (default 100). */
  listEvents(filter: ListEventsFilter): Promise<StoredEvent[]>;
  /** How many events match, per state. */
  countEventsByStatus(filter: EventsFilter): Promise<StatusCounts>;
  /** One event as stored, personal data included; undefined when there is none. */
  getEvent(eventId: string, account?: string): Promise<StoredEventDetail | undefined>;
  countEventsByTypeAndStatus(account?: string): Promise<TypeStatusCount[]>;
  oldestPendingEvent(): Promise<OldestPending | undefined>;
  previewReplay(which: ReplaySelection, sampleSize: number): Promise<ReplayPreview>;
  /** Quarantined deliveries, newest first (held ones by default). */
  listQuarantined(filter: QuarantineFilter): Promise<QuarantinedDelivery[]>;
  /** One quarantined delivery with its exact bytes; undefined when there is none. */
  getQuarantined(id: string): Promise<QuarantinedDetail | undefined>;
  releaseQuarantined(id: string, options: ReleaseOptions): Promise<ReleaseOutcome>;
  discardQuarantined(id: string): Promise<void>;
  /** An operator's answer to an effect step held for review; the event goes back to the queue once none is held. */
  resolveStep(ref: { eventId: string; step: string; handler?: string | undefined }, resolution: StepResolution): Promise<ResolveOutcome>;
  replayBatch(
    which: ReplaySelection,
    batch: { limit: number; after?: ArrivalPosition | undefined; through?: ArrivalPosition | undefined },
  ): Promise<ReplayBatch>;
  /**
   * A resource's story, personal data as stored. `mirrorSchema` is where a database this process opened keeps its
   * mirror; beside serve, serve's own mirror is read.
   */
  resourceStory(
    resource: string,
    options: { limit?: number | undefined; mirrorSchema: string; account?: string | undefined },
  ): Promise<ResourceStory>;
  /** What an id names (an eventId, a sender's id, a quarantine number), in one account or any; undefined when nothing does. */
  findById(id: string, account?: string): Promise<FoundId | undefined>;
}

/** The inbox of a database this process opened. */
export function localInbox(store: PayhooksDatabase): Inbox {
  return {
    listEvents: (filter) => listEvents(store, filter),
    countEventsByStatus: (filter) => countEventsByStatus(store, filter),
    getEvent: (eventId, account) => getEvent(store, eventId, account),
    countEventsByTypeAndStatus: (account) => countEventsByTypeAndStatus(store, account),
    oldestPendingEvent: () => oldestPendingEvent(store),
    previewReplay: (which, sampleSize) => previewReplay(store, which, sampleSize),
    listQuarantined: (filter) => listQuarantined(store, filter),
    getQuarantined: (id) => getQuarantined(store, id),
    releaseQuarantined: (id, options) => releaseQuarantined(store, id, options),
    discardQuarantined: (id) => discardQuarantined(store, id),
    resolveStep: (ref, resolution) => resolveStep(store, ref, resolution),
    replayBatch: (which, batch) => replayBatch(store, which, batch),
    resourceStory: (resource, options) => resourceStory(store, resource, options),
    findById: (id, account) => findById(store, id, account),
  };
}
