-- The work queue leaves inbox_events for a table of its own that holds only unfinished events.
--
-- Before, workers claimed from inbox_events itself: every claim and every outcome rewrote a whole row (body
-- included), and the claim walked index entries left behind by finished rows, so each event cost more the more
-- events had been processed. Now inbox_events is the record (one row per eventId, for deduplication and history)
-- and is written twice per event: at receipt, and once with the outcome. inbox_queue holds a small row per
-- unfinished event; a row leaves it when the event is finished, so what a claim scans stays the size of the backlog.

CREATE TABLE inbox_queue (
  event_id      text PRIMARY KEY REFERENCES inbox_events (event_id) ON DELETE CASCADE,
  -- inbox_events.seq: per-resource order is by receipt.
  seq           bigint NOT NULL,
  resource_key  text,
  -- Waiting (no lease_owner): when the event is due. Leased: when the lease runs out, after which the event is due
  -- again, for any worker. One column for both keeps the claim a range scan over due rows only.
  run_at        timestamptz NOT NULL DEFAULT now(),
  lease_owner   text,
  -- Claims so far, counted at claim time (see claim.ts).
  attempts      integer NOT NULL DEFAULT 0
);

CREATE INDEX inbox_queue_due_idx ON inbox_queue (run_at, seq);
-- Per-resource ordering: an event is claimable only if no earlier event of its resource is still queued.
CREATE INDEX inbox_queue_resource_idx ON inbox_queue (resource_key, seq) WHERE resource_key IS NOT NULL;

-- Unfinished events move over as they are; a lease held now stays held until it runs out.
INSERT INTO inbox_queue (event_id, seq, resource_key, run_at, lease_owner, attempts)
SELECT event_id, seq, resource_key,
       CASE WHEN status = 'processing' THEN coalesce(lease_expires_at, now()) ELSE next_attempt_at END,
       CASE WHEN status = 'processing' THEN coalesce(lease_owner, 'migration') END,
       attempts
  FROM inbox_events
 WHERE status IN ('pending', 'processing');
-- "processing" is now a queue row with a lease, not a stored state.
UPDATE inbox_events SET status = 'pending' WHERE status = 'processing';

-- The queue's indexes replace these; the lease lives in the queue.
DROP INDEX inbox_events_due_idx;
DROP INDEX inbox_events_resource_idx;
ALTER TABLE inbox_events DROP COLUMN lease_owner, DROP COLUMN lease_expires_at;

-- Every new event is queued and workers are woken once per statement, whoever inserted it: a batch of receipts
-- costs one queue insert and one notification, not one trigger call per row. Rows the statement only counted as
-- repeat deliveries (ON CONFLICT … DO UPDATE) are not in new_events.
DROP TRIGGER inbox_events_notify ON inbox_events;
DROP FUNCTION notify_new_event();

-- SET search_path FROM CURRENT: the trigger runs with the inserting session's search path, which need not hold
-- this schema; the function keeps the one this migration runs with (the payhooks schema).
CREATE FUNCTION enqueue_new_events() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO inbox_queue (event_id, seq, resource_key, run_at)
  SELECT event_id, seq, resource_key, next_attempt_at FROM new_events WHERE status = 'pending';
  IF FOUND THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_new_event', '');
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER inbox_events_enqueue AFTER INSERT ON inbox_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION enqueue_new_events();

-- What operators see: the record with the queue's live state folded in ("processing" while a lease is held).
CREATE VIEW inbox_event_states AS
SELECT e.event_id,
       e.event_type,
       e.resource_key,
       e.raw_body,
       e.payload,
       e.headers,
       e.received_at,
       e.deliveries,
       CASE WHEN q.lease_owner IS NOT NULL THEN 'processing' ELSE e.status END AS status,
       coalesce(q.attempts, e.attempts) AS attempts,
       CASE WHEN q.event_id IS NOT NULL AND q.lease_owner IS NULL THEN q.run_at ELSE e.next_attempt_at END AS next_attempt_at,
       q.lease_owner,
       CASE WHEN q.lease_owner IS NOT NULL THEN q.run_at END AS lease_expires_at,
       e.last_error,
       e.processed_at,
       e.seq
  FROM inbox_events e
  LEFT JOIN inbox_queue q ON q.event_id = e.event_id;
