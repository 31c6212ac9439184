-- The operator's lookups of migration 021 (a resource's story, an event by the id its sender gave the delivery) read
-- the ledger instead of the history (issue 48's drain).
--
-- Every outcome rewrites an event's history row (its status is indexed, so the update is never HOT), and a row version
-- that is not HOT takes an entry in every index of the table. 021's two indexes on the history therefore cost an entry
-- each at receipt and again at every outcome: one process drained 8% faster without the story's index alone (30,000
-- events, medians of 3 rounds; PostgreSQL's CPU per event 175 µs against 190). The ledger holds one row per event
-- received, written once at receipt and only counted on again by a repeat delivery (an unindexed column, a HOT
-- update): the same lookups index it once per event. The story's order of arrival is the history's seq, which the
-- receiver now takes for the ledger row and gives the history row; the sender's id is the first of the headers that
-- find-by-id.ts names (SENDER_ID_HEADERS, in this order), as 021's index expression was. A ledger row outlives its
-- history (retention); both lookups join the history, so an event whose history is pruned is not told.
ALTER TABLE event_ledger
  ADD COLUMN resource_key text,
  ADD COLUMN seq bigint,
  ADD COLUMN sender_id text;

-- The events already received: one pass over the history, each row's ledger row by its key.
UPDATE event_ledger l
   SET resource_key = e.resource_key,
       seq = e.seq,
       sender_id = coalesce(e.headers ->> 'x-webhook-event-id', e.headers ->> 'webhook-id', e.headers ->> 'svix-id')
  FROM inbox_events e
 WHERE e.event_id = l.event_id AND e.account = l.account AND e.received_at = l.first_received_at;

DROP INDEX inbox_events_resource_seq_idx;
DROP INDEX inbox_events_sender_id_idx;

-- Partial, as 021's were: events without a resource, or deliveries without a sender's id, cost nothing here.
CREATE INDEX event_ledger_resource_seq_idx ON event_ledger (resource_key, seq) WHERE resource_key IS NOT NULL;
CREATE INDEX event_ledger_sender_id_idx ON event_ledger (sender_id) WHERE sender_id IS NOT NULL;
