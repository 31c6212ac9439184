-- Deduplication moves to a ledger of its own: one small row per eventId ever accepted (issue 24, item 1).
--
-- Before, the inbox_events row was both the record (body, headers, outcome) and the proof that an eventId had been
-- seen, so deleting old history (payhooks prune) could let a redelivered eventId in again, and prune refused any age
-- inside the sender's retry horizon (4 days 7 hours). Now the receiver answers "duplicate" from event_ledger, which
-- keeps about 100 bytes per eventId and nothing of the payload; the history may be pruned to any age. The ledger is
-- a table apart (not a column of inbox_events) so that the history can later move into time partitions and be
-- dropped a partition at a time while the ledger stays.

CREATE TABLE event_ledger (
  event_id           text PRIMARY KEY,
  first_received_at  timestamptz NOT NULL DEFAULT now(),
  -- SHA-256 of the exact body bytes of the first delivery: tells a redelivery from a different body sent under a
  -- reused eventId, after the body itself is gone.
  body_sha256        bytea NOT NULL,
  -- Every delivery of this eventId, the first included.
  deliveries         integer NOT NULL DEFAULT 1
);

-- Every eventId stored so far is known to the ledger. convert_to gives back the bytes the receiver decoded (it
-- decodes UTF-8 strictly and keeps a byte order mark), so the hash is that of the signed body.
INSERT INTO event_ledger (event_id, first_received_at, body_sha256, deliveries)
SELECT event_id, received_at, sha256(convert_to(raw_body, 'UTF8')), deliveries
  FROM inbox_events;

-- The ledger counts deliveries from now on (a repeat no longer rewrites the inbox row, body and all); the view
-- operators read takes the count from it. Same columns, in the same order, as migrations/004 made it.
CREATE OR REPLACE VIEW inbox_event_states AS
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
