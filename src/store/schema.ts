import type { ColumnType, Generated } from 'kysely';

/** The states an inbox event moves through (see docs/event-states.md). */
export const EVENT_STATUSES = ['pending', 'processing', 'done', 'dead', 'ignored', 'invalid', 'needs-review'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<unknown, string | null, string | null>;

/** The `inbox_events` table of migrations/001_inbox.sql. */
export interface InboxEventTable {
  event_id: string;
  /** The account (organization) it belongs to: part of its key (migrations/018). */
  account: string;
  event_type: string;
  resource_key: string | null;
  raw_body: string;
  payload: Json;
  headers: ColumnType<Record<string, string>, string | undefined, string>;
  received_at: Generated<Date>;
  deliveries: Generated<number>;
  status: ColumnType<EventStatus, EventStatus | undefined, EventStatus>;
  attempts: Generated<number>;
  /** When a retry was last scheduled for; while queued, the queue's `run_at` is what counts. */
  next_attempt_at: Timestamp;
  last_error: string | null;
  processed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  seq: ColumnType<string, never, never>;
  /** migrations/012: the W3C traceparent it was received under; null: none. */
  trace_parent: ColumnType<string | null, string | null | undefined, string | null>;
  /** migrations/014: the fingerprint of the schemas the receiver found the data certainly valid under; null: not checked. */
  data_valid_under: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The `inbox_queue` table of migrations/004: one row per unfinished event. */
export interface InboxQueueTable {
  event_id: string;
  /** The account (organization) it belongs to: part of its key (migrations/018). */
  account: string;
  seq: ColumnType<string, string | number | bigint, never>;
  resource_key: string | null;
  /** Waiting: when it is due. Leased: when the lease runs out. */
  run_at: Timestamp;
  lease_owner: string | null;
  /** migrations/019: the token of the claim that leased it; writes under the lease compare it (fencing). */
  lease_token: ColumnType<string | null, never, never>;
  attempts: Generated<number>;
  /**
   * migrations/005: the handlers this event must still run before later events of its resource may run them; null
   * (not run yet, replayed, or failed outside any handler) holds back every handler of the later events.
   */
  owed: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
  /**
   * Waits only for earlier events of its resource; their outcomes move its `run_at`. With `owed` (migrations/005): it
   * ran what it could; without (migrations/013): set aside, never run, behind a leased event, until that lease's end.
   */
  parked: Generated<boolean>;
  /** migrations/009: the event's receipt time, so that its history row is reached in one partition. */
  received_at: Date;
}

type NullableTimestamp = ColumnType<Date | null, never, never>;

/**
 * The `inbox_event_states` view: an inbox row with the queue's live state folded in. Read-only; `status` is
 * `processing` while a worker holds a lease.
 */
export interface InboxEventStateView {
  event_id: ColumnType<string, never, never>;
  event_type: ColumnType<string, never, never>;
  resource_key: ColumnType<string | null, never, never>;
  raw_body: ColumnType<string, never, never>;
  payload: ColumnType<unknown, never, never>;
  headers: ColumnType<Record<string, string>, never, never>;
  received_at: ColumnType<Date, never, never>;
  deliveries: ColumnType<number, never, never>;
  status: ColumnType<EventStatus, never, never>;
  attempts: ColumnType<number, never, never>;
  next_attempt_at: ColumnType<Date, never, never>;
  lease_owner: ColumnType<string | null, never, never>;
  lease_expires_at: NullableTimestamp;
  last_error: ColumnType<string | null, never, never>;
  processed_at: NullableTimestamp;
  seq: ColumnType<string, never, never>;
  account: ColumnType<string, never, never>;
}

/** How a handler settled an event: it completed, or it gave up (dead-lettered, or its attempts ran out). */
/** The accounts the service is configured with (migrations/018): the database refuses events of any other. */
export interface AccountTable {
  id: string;
  worker_share: ColumnType<number, number | undefined, number>;
  added_at: Generated<Date>;
}

export type HandlerOutcome = 'done' | 'dead';

/**
 * The `handler_runs` table: one row per handler that settled an event, so that it does not run again for it:
 * completed (`done`), or gave up (`dead`, with the error; replay removes these).
 */
export interface HandlerRunTable {
  event_id: string;
  /** The account (organization) it belongs to: part of its key (migrations/018). */
  account: string;
  handler: string;
  /** migrations/009: the event's receipt time, the partition key. */
  received_at: Date;
  /** When it completed or gave up. */
  completed_at: Generated<Date>;
  outcome: ColumnType<HandlerOutcome, HandlerOutcome | undefined, HandlerOutcome>;
  /** Why it gave up; null when done. */
  error: ColumnType<string | null, string | null | undefined, string | null>;
  /** migrations/009: a completed run's start and attempt, as the worker records them (null otherwise). */
  started_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  attempt: ColumnType<number | null, number | null | undefined, number | null>;
}

/**
 * The `event_ledger` table of migrations/006: one row per eventId ever accepted, kept when its history is pruned;
 * the receiver's deduplication answers from it.
 */
export interface EventLedgerTable {
  event_id: string;
  /** The account (organization) it belongs to: part of its key (migrations/018). */
  account: string;
  first_received_at: Generated<Date>;
  /** SHA-256 of the first delivery's body bytes. */
  body_sha256: ColumnType<Uint8Array, Uint8Array, Uint8Array>;
  /** Every delivery of the eventId, the first included. */
  deliveries: Generated<number>;
  /** migrations/025: its resource key, for a resource's story; null: none (or received before 025 and pruned since). */
  resource_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** migrations/025: its history row's seq (order of arrival), taken for both at receipt. */
  seq: ColumnType<string | null, string | null | undefined, string | null>;
  /** migrations/025: the id its sender gave the first delivery (internal/sender-id.ts SENDER_ID_HEADERS); null: none. */
  sender_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The `handler_attempts` table of migrations/008: one row per run of a handler for an event. */
export interface HandlerAttemptTable {
  id: ColumnType<string, never, never>;
  event_id: string;
  /** The account (organization) it belongs to: part of its key (migrations/018). */
  account: string;
  /** The event's receipt time (the key of future time partitions). */
  received_at: Date;
  handler: string;
  /** Null on rows carried over from handler_runs by the migration. */
  attempt: number | null;
  started_at: Date | null;
  ended_at: Date;
  outcome: 'completed' | 'failed';
  error: string | null;
  /** migrations/020: the issue a failed attempt was counted into (store/issues.ts); null for completions. */
  issue_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The states of an effect step (migrations/011, docs/effects.md#states). */
export type EffectStepState = 'started' | 'completed' | 'failed' | 'needs-review' | 'redo';

/** The `effect_steps` table of migrations/011: one row per `ctx.effect` step of a handler for an event. */
export interface EffectStepTable {
  event_id: string;
  /** The account (organization) it belongs to: part of its key (migrations/018). */
  account: string;
  received_at: Date;
  handler: string;
  step: string;
  idempotency_key: string;
  idempotent: boolean;
  state: EffectStepState;
  attempt: number;
  calls: Generated<number>;
  result: string | null;
  error: string | null;
  started_at: Generated<Date>;
  ended_at: Date | null;
  resolution: 'done' | 'redo' | null;
  resolved_at: Date | null;
}

/** The Kysely database type of the payhooks schema. */
export interface PayhooksTables {
  accounts: AccountTable;
  inbox_events: InboxEventTable;
  inbox_queue: InboxQueueTable;
  inbox_event_states: InboxEventStateView;
  handler_runs: HandlerRunTable;
  event_ledger: EventLedgerTable;
  handler_attempts: HandlerAttemptTable;
  effect_steps: EffectStepTable;
}
