import type { ColumnType, Generated } from 'kysely';

/** The states an inbox event moves through (see docs/event-states.md). */
export const EVENT_STATUSES = ['pending', 'processing', 'done', 'dead', 'ignored', 'invalid'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<unknown, string | null, string | null>;

/** The `inbox_events` table of migrations/001_inbox.sql. */
export interface InboxEventTable {
  event_id: string;
  event_type: string;
  resource_key: string | null;
  raw_body: string;
  payload: Json;
  headers: ColumnType<Record<string, string>, string | undefined, string>;
  received_at: Generated<Date>;
  deliveries: Generated<number>;
  status: ColumnType<EventStatus, EventStatus | undefined, EventStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  lease_owner: string | null;
  lease_expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_error: string | null;
  processed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  seq: ColumnType<string, never, never>;
}

/** The `handler_runs` table: one row per handler that completed for an event. */
export interface HandlerRunTable {
  event_id: string;
  handler: string;
  completed_at: Generated<Date>;
}

/** The Kysely database type of the payhooks schema. */
export interface PayhooksTables {
  inbox_events: InboxEventTable;
  handler_runs: HandlerRunTable;
}
