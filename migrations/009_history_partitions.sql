-- The history moves into time partitions (issue 24, item 2).
--
-- inbox_events (bodies, headers, outcomes), handler_runs (which handlers settled an event) and handler_attempts (every
-- failed run) become tables partitioned by the event's receipt time, so that retention drops whole partitions: disk is
-- returned the same day, in constant time, with no dead tuples. Deduplication no longer needs a unique eventId in the
-- history (event_ledger of migration 006 answers it), which is what makes the partitioning possible: a primary key of a
-- partitioned table must hold the partition key, so the history's key becomes (event_id, received_at).
--
-- What an installation holds is not copied: each old table is attached, as it is, as the partition of everything
-- received up to the end of the day the migration runs (its `_legacy` partition), which costs one index build and one
-- scan per table instead of a rewrite. Partitions for later days (or weeks) are created ahead of time by payhooks
-- (src/store/history-partitions.ts); there is no DEFAULT partition, so no row can land where it would block dropping.
--
-- Rolling upgrade: a receiver of an earlier version cannot store into the partitioned table (its ON CONFLICT names the
-- old unique key) and answers 503; the sender retries, so nothing is lost, but replace old receivers promptly.
--
-- Works on PostgreSQL 13 and later and on PGlite: no identity column on a partitioned table (PostgreSQL 17 only), no
-- MERGE, no DETACH CONCURRENTLY inside a transaction.

-- What refers to the old tables by name or by key goes first, and comes back at the end.
DROP VIEW inbox_event_states;
DROP TRIGGER inbox_events_enqueue ON inbox_events;
ALTER TABLE inbox_queue DROP CONSTRAINT inbox_queue_event_id_fkey;
ALTER TABLE handler_runs DROP CONSTRAINT handler_runs_event_id_fkey;
ALTER TABLE handler_attempts DROP CONSTRAINT handler_attempts_event_id_fkey;

-- The queue carries each event's receipt time, so that the worker reaches its history row in one partition.
ALTER TABLE inbox_queue ADD COLUMN received_at timestamptz;
UPDATE inbox_queue q SET received_at = e.received_at FROM inbox_events e WHERE e.event_id = q.event_id;
-- A queue row whose event is gone cannot run anyway (the foreign key above forbade it).
DELETE FROM inbox_queue WHERE received_at IS NULL;
ALTER TABLE inbox_queue ALTER COLUMN received_at SET NOT NULL;

-- A completed run the worker records keeps its start and attempt on its handler_runs row, so the usual run writes one
-- row, not two; handler_attempts keeps failed runs (and completions marked inside a handler's own transaction, whose
-- mark carries no timing). Rows written before stay as they are: events show reads both.
ALTER TABLE handler_runs ADD COLUMN received_at timestamptz, ADD COLUMN started_at timestamptz, ADD COLUMN attempt integer;
UPDATE handler_runs r SET received_at = e.received_at FROM inbox_events e WHERE e.event_id = r.event_id;
ALTER TABLE handler_runs ALTER COLUMN received_at SET NOT NULL;

-- The old tables step aside under the names of their partitions.
ALTER TABLE inbox_events RENAME TO inbox_events_legacy;
ALTER INDEX inbox_events_pkey RENAME TO inbox_events_legacy_pkey;
ALTER INDEX inbox_events_seq_key RENAME TO inbox_events_legacy_seq_key;
ALTER INDEX inbox_events_status_type_idx RENAME TO inbox_events_legacy_status_type_idx;
ALTER TABLE inbox_events_legacy ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE handler_runs RENAME TO handler_runs_legacy;
ALTER INDEX handler_runs_pkey RENAME TO handler_runs_legacy_pkey;
ALTER TABLE handler_attempts RENAME TO handler_attempts_legacy;
ALTER INDEX handler_attempts_pkey RENAME TO handler_attempts_legacy_pkey;
ALTER INDEX handler_attempts_event_idx RENAME TO handler_attempts_legacy_event_idx;
ALTER TABLE handler_attempts_legacy ALTER COLUMN id DROP IDENTITY;

CREATE SEQUENCE inbox_events_seq;
SELECT setval('inbox_events_seq', coalesce((SELECT max(seq) FROM inbox_events_legacy), 0) + 1, false);
CREATE SEQUENCE handler_attempts_id_seq;
SELECT setval('handler_attempts_id_seq', coalesce((SELECT max(id) FROM handler_attempts_legacy), 0) + 1, false);

CREATE TABLE inbox_events (
  event_id          text NOT NULL,
  event_type        text NOT NULL,
  resource_key      text,
  raw_body          text NOT NULL,
  payload           jsonb,
  headers           jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- The ledger's first_received_at of the event: the partition key.
  received_at       timestamptz NOT NULL DEFAULT now(),
  deliveries        integer NOT NULL DEFAULT 1,
  status            text NOT NULL DEFAULT 'pending'
                    CONSTRAINT inbox_events_status_check CHECK (status IN ('pending', 'processing', 'done', 'dead', 'ignored', 'invalid')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  last_error        text,
  processed_at      timestamptz,
  -- Order of receipt. Unique by its sequence; a unique index would have to hold received_at, and say nothing more.
  seq               bigint NOT NULL DEFAULT nextval('inbox_events_seq'),
  PRIMARY KEY (event_id, received_at)
) PARTITION BY RANGE (received_at);
ALTER SEQUENCE inbox_events_seq OWNED BY inbox_events.seq;
CREATE INDEX inbox_events_seq_idx ON inbox_events (seq);
CREATE INDEX inbox_events_status_type_idx ON inbox_events (status, event_type, seq);

CREATE TABLE handler_runs (
  event_id      text NOT NULL,
  handler       text NOT NULL,
  received_at   timestamptz NOT NULL,
  completed_at  timestamptz NOT NULL DEFAULT now(),
  outcome       text NOT NULL DEFAULT 'done' CONSTRAINT handler_runs_outcome_check CHECK (outcome IN ('done', 'dead')),
  error         text,
  -- A completed run's start and attempt (null when recorded by markHandlerCompleted, or carried over without them).
  started_at    timestamptz,
  attempt       integer,
  PRIMARY KEY (event_id, handler, received_at)
) PARTITION BY RANGE (received_at);

CREATE TABLE handler_attempts (
  id          bigint NOT NULL DEFAULT nextval('handler_attempts_id_seq'),
  event_id    text NOT NULL,
  received_at timestamptz NOT NULL,
  handler     text NOT NULL,
  attempt     integer,
  started_at  timestamptz,
  ended_at    timestamptz NOT NULL,
  outcome     text NOT NULL CONSTRAINT handler_attempts_outcome_check CHECK (outcome IN ('completed', 'failed')),
  error       text,
  PRIMARY KEY (id, received_at)
) PARTITION BY RANGE (received_at);
ALTER SEQUENCE handler_attempts_id_seq OWNED BY handler_attempts.id;
CREATE INDEX handler_attempts_event_idx ON handler_attempts (event_id, id);

-- A partition cannot keep a primary key of its own: the partitioned keys (built when attaching) replace the old ones.
ALTER TABLE inbox_events_legacy DROP CONSTRAINT inbox_events_legacy_pkey;
ALTER TABLE inbox_events_legacy DROP CONSTRAINT inbox_events_legacy_seq_key;
ALTER TABLE handler_runs_legacy DROP CONSTRAINT handler_runs_legacy_pkey;
ALTER TABLE handler_attempts_legacy DROP CONSTRAINT handler_attempts_legacy_pkey;

-- Everything received up to the end of today (UTC), or of the latest receipt if a clock ran ahead, is the legacy
-- partition of each table. Attaching checks each row against the range and builds the indexes the old table lacks. A
-- new installation has nothing to keep: its empty tables go, and its first partitions are made by payhooks at start.
DO $$
DECLARE
  upto timestamptz := date_trunc('day', greatest(now(), (SELECT max(received_at) FROM inbox_events_legacy)) AT TIME ZONE 'UTC')
                      AT TIME ZONE 'UTC' + interval '1 day';
BEGIN
  IF NOT EXISTS (SELECT 1 FROM inbox_events_legacy) THEN
    DROP TABLE inbox_events_legacy, handler_runs_legacy, handler_attempts_legacy;
  ELSE
    EXECUTE format('ALTER TABLE inbox_events ATTACH PARTITION inbox_events_legacy FOR VALUES FROM (MINVALUE) TO (%L)', upto);
    EXECUTE format('ALTER TABLE handler_runs ATTACH PARTITION handler_runs_legacy FOR VALUES FROM (MINVALUE) TO (%L)', upto);
    EXECUTE format('ALTER TABLE handler_attempts ATTACH PARTITION handler_attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', upto);
  END IF;
END
$$;

-- New events enter the queue as before, now with their receipt time.
CREATE OR REPLACE FUNCTION enqueue_new_events() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO inbox_queue (event_id, seq, resource_key, run_at, received_at)
  SELECT event_id, seq, resource_key, next_attempt_at, received_at FROM new_events WHERE status = 'pending';
  IF FOUND THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_new_event', '');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER inbox_events_enqueue AFTER INSERT ON inbox_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION enqueue_new_events();

-- Same columns, in the same order, as migrations 004 and 006 made it.
CREATE VIEW inbox_event_states AS
SELECT e.event_id,
       e.event_type,
       e.resource_key,
       e.raw_body,
       e.payload,
       e.headers,
       e.received_at,
       coalesce(l.deliveries, e.deliveries) AS deliveries,
       CASE WHEN q.lease_owner IS NOT NULL THEN 'processing' ELSE e.status END AS status,
       coalesce(q.attempts, e.attempts) AS attempts,
       CASE WHEN q.event_id IS NOT NULL AND q.lease_owner IS NULL THEN q.run_at ELSE e.next_attempt_at END AS next_attempt_at,
       q.lease_owner,
       CASE WHEN q.lease_owner IS NOT NULL THEN q.run_at END AS lease_expires_at,
       e.last_error,
       e.processed_at,
       e.seq
  FROM inbox_events e
  LEFT JOIN inbox_queue q ON q.event_id = e.event_id
  LEFT JOIN event_ledger l ON l.event_id = e.event_id;
