-- Failures grouped into issues (issue 50, item 1).
--
-- When a handler breaks and 4,000 events die, the operator should see one problem, not 4,000 rows. An issue is the
-- failures of one (handler or sink, error class, event type): first and last seen, how many failed attempts, the
-- affected events, and a state the operator moves (open, acknowledged, resolved, ignored).
--
-- Where it is kept. Two ways were weighed:
--
-- a) Derive the groups on read from handler_attempts (GROUP BY handler, error class, event type over the failed rows)
--    and keep only the operator's states in a small table. Nothing on the worker's path; but "a resolved issue that
--    recurs reopens" and "a new issue notifies" then need someone to notice new failures: a periodic scan of the
--    attempts since the last one, whose cursor and timing are a second moving part, and each read of the list groups
--    every failure in the history's retention (5,000 failures in 100,000 events: fine; a month of a broken sink: not).
-- b) Record each batch's failures in the statement that already writes the batch's outcomes (store/outcomes.ts):
--    one INSERT … ON CONFLICT DO UPDATE of the batch's distinct (handler, error class, event type), a handful of rows
--    at most, in the transaction that stores the attempts themselves, so that an issue and its attempts can never
--    disagree, and the reopening is decided by the row's own state under its row lock. No statement more, and no work
--    at all when nothing failed (the CTE's input is empty).
--
-- (b) is taken, with one refinement of (a): the affected events are not copied into a second table (that would be a
-- row per failure on the hot path); each failed attempt row carries its issue's id, and an index over the failed
-- rows only finds an issue's events. The cost per batch does not grow with the history: the upsert probes the unique
-- index of this small table, and the partial index takes one entry per failed attempt (none for completed ones).
-- Listing issues reads this table; one issue's events are an index range. A row lock per issue is held for the
-- outcome statement's few milliseconds; workers failing on one issue at once queue on it briefly (the upsert takes
-- its rows in key order, so two batches cannot deadlock on two issues).
--
-- Accounts (migration 018): issues group across accounts; the accounts affected are read from the failed attempts'
-- account column, as the events are (no column here), and a filter by account narrows the events an issue lists and
-- replays.

CREATE TABLE issues (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The handler's name as completion records it: a sink's is `<prefix>:<name>` (sync/sink-registry.ts).
  handler       text NOT NULL,
  -- The failure's class: the thrown error's constructor name (TypeError, DeadLetterError, …), see worker/handler-errors.ts.
  error_class   text NOT NULL,
  event_type    text NOT NULL,
  state         text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'acknowledged', 'resolved', 'ignored')),
  first_seen_at timestamptz NOT NULL,
  last_seen_at  timestamptz NOT NULL,
  -- Failed attempts counted since it was first seen (an event retried three times counts three).
  failures      bigint NOT NULL DEFAULT 0,
  -- The newest failure's message (capped as handler_attempts.error is), so that the list says what went wrong.
  last_error    text,
  -- When it was last opened: first seen, or reopened by a failure after it was resolved. The notifier tells every
  -- opening once: it compares this with notified_at.
  opened_at     timestamptz NOT NULL DEFAULT now(),
  reopened      integer NOT NULL DEFAULT 0,
  -- When the operator (or a reopening) last moved its state.
  state_at      timestamptz NOT NULL DEFAULT now(),
  notified_at   timestamptz,
  UNIQUE (handler, error_class, event_type)
);

-- The notifier's question: issues opened and not told yet (a few rows at most).
CREATE INDEX issues_to_notify_idx ON issues (opened_at) WHERE state = 'open' AND notified_at IS NULL;

-- No foreign key: the attempts are partitioned by receipt time and dropped with their partition, an issue outlives them.
ALTER TABLE handler_attempts ADD COLUMN issue_id bigint;

CREATE INDEX handler_attempts_issue_idx ON handler_attempts (issue_id, event_id) WHERE issue_id IS NOT NULL;
