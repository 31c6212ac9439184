-- The inbox: one row per eventId, written by the receiver, claimed by workers.
-- Unqualified names: the migrator runs this with search_path set to the configured schema.

CREATE TABLE inbox_events (
  event_id          text PRIMARY KEY,
  event_type        text NOT NULL,
  -- Events with the same key never run concurrently (invoice:…, customer:…, payment:…); null = no ordering.
  resource_key      text,
  -- The exact request body. payload is the same document as jsonb for querying; it is null only when the
  -- body holds a \u0000 escape, which jsonb cannot store (the raw body is always kept).
  raw_body          text NOT NULL,
  payload           jsonb,
  headers           jsonb NOT NULL DEFAULT '{}'::jsonb,
  received_at       timestamptz NOT NULL DEFAULT now(),
  deliveries        integer NOT NULL DEFAULT 1,
  status            text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'processing', 'done', 'dead', 'ignored', 'invalid')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  lease_owner       text,
  lease_expires_at  timestamptz,
  last_error        text,
  processed_at      timestamptz,
  -- Order of receipt: received_at can tie, this cannot.
  seq               bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);

-- What a worker scans for: unfinished events by due time.
CREATE INDEX inbox_events_due_idx ON inbox_events (next_attempt_at) WHERE status IN ('pending', 'processing');
-- Per-resource ordering: the earliest unfinished event of a key goes first.
CREATE INDEX inbox_events_resource_idx ON inbox_events (resource_key, seq) WHERE status IN ('pending', 'processing');
-- Operators list by status and type.
CREATE INDEX inbox_events_status_type_idx ON inbox_events (status, event_type, seq);

-- Completion per (event, handler): on a retry only handlers without a row here run again.
CREATE TABLE handler_runs (
  event_id      text NOT NULL REFERENCES inbox_events (event_id) ON DELETE CASCADE,
  handler       text NOT NULL,
  completed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (event_id, handler)
);

-- Wake workers as soon as a new event is stored, whoever stored it. The channel is per schema, so two
-- payhooks installations in one database do not wake each other.
CREATE FUNCTION notify_new_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || '_new_event', NEW.event_id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER inbox_events_notify AFTER INSERT ON inbox_events
  FOR EACH ROW EXECUTE FUNCTION notify_new_event();
