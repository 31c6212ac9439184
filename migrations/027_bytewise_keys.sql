-- The keys of the store compare bytewise (COLLATE "C"), not by the database's collation (issue 48's drain).
--
-- Every text column an index holds (event ids, accounts, resource keys, handlers, ...) and every column that holds one
-- of those keys elsewhere. Under any collation but "C" (PostgreSQL 15 counts a database's C.UTF-8 as such a one), each
-- comparison of two texts in a B-tree copies both and asks the C library's strcoll; under "C" it is a memcmp. A drained
-- event descends about a dozen text-keyed indexes (the claim's lease and the outcome each write a new version of the
-- queue row and of the history row, so an entry in each of their indexes, beside the probes of the primary keys and
-- the ledger), and since accounts every key of the queue and the history has two texts. One process draining 30,000
-- events alternately with and without this change, 7 rounds: PostgreSQL's CPU 103 µs per event against 109, 9,609
-- against 9,030 events/s (medians; the build before accounts, 53666d0, 9,695 beside them).
--
-- Equality is the same under both (every collation here is deterministic), so no stored row changes meaning and no
-- unique key admits or refuses anything it did not before. Orders do change under a linguistic collation (an id in
-- capitals sorts before one in small letters); under C.UTF-8 they do not (code point order is byte order in UTF-8).
--
-- A comparison of two columns is made under the collation of the one that is not the default, and an index serves a
-- comparison only under its own collation: so every column that is compared with one of these keys changes with them
-- (test/store/bytewise-keys.test.ts holds the schema to that), or a join would read past an index it used to probe.
-- No table is rewritten (the type is the same); every index on a changed column is built again, which for a history of
-- millions of events takes a while (docs/storage.md, Upgrading).

-- The view reads changed columns of three tables: dropped and made again as 018 made it.
DROP VIEW inbox_event_states;

ALTER TABLE accounts ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE api_rate_budget ALTER COLUMN budget TYPE text COLLATE "C";
ALTER TABLE schema_migrations ALTER COLUMN name TYPE text COLLATE "C";

ALTER TABLE inbox_queue
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C",
  ALTER COLUMN resource_key TYPE text COLLATE "C";

ALTER TABLE inbox_events
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C",
  ALTER COLUMN resource_key TYPE text COLLATE "C",
  ALTER COLUMN event_type TYPE text COLLATE "C",
  ALTER COLUMN status TYPE text COLLATE "C";

ALTER TABLE event_ledger
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C",
  ALTER COLUMN resource_key TYPE text COLLATE "C",
  ALTER COLUMN sender_id TYPE text COLLATE "C";

ALTER TABLE handler_runs
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C",
  ALTER COLUMN handler TYPE text COLLATE "C";

ALTER TABLE handler_attempts
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C",
  ALTER COLUMN handler TYPE text COLLATE "C";

ALTER TABLE effect_steps
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C",
  ALTER COLUMN handler TYPE text COLLATE "C",
  ALTER COLUMN step TYPE text COLLATE "C";

ALTER TABLE issues
  ALTER COLUMN handler TYPE text COLLATE "C",
  ALTER COLUMN error_class TYPE text COLLATE "C",
  ALTER COLUMN event_type TYPE text COLLATE "C";

ALTER TABLE quarantine
  ALTER COLUMN event_id TYPE text COLLATE "C",
  ALTER COLUMN released_event_id TYPE text COLLATE "C",
  ALTER COLUMN event_type TYPE text COLLATE "C",
  ALTER COLUMN account TYPE text COLLATE "C";

ALTER TABLE sweeper_runs ALTER COLUMN account TYPE text COLLATE "C";

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
       e.seq,
       e.account
  FROM inbox_events e
  LEFT JOIN inbox_queue q ON q.event_id = e.event_id AND q.account = e.account
  LEFT JOIN event_ledger l ON l.event_id = e.event_id AND l.account = e.account;
