-- Every handler attempt kept (issue 24, item 5).
--
-- Before, an event kept only its attempt count and last error, and handler_runs one row per handler that settled it:
-- an operator could not see the attempts themselves. Now each run of a handler or sink for an event is a row, written
-- by the worker in the statement that records the run's outcome (no statement more per event).

CREATE TABLE handler_attempts (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id    text NOT NULL REFERENCES inbox_events (event_id) ON DELETE CASCADE,
  -- The event's receipt time: what time partitions of the history will key on (issue 24, item 2), so that an
  -- event's attempts are dropped with its partition.
  received_at timestamptz NOT NULL,
  handler     text NOT NULL,
  -- The event's attempt (claim) it ran in: 1, 2, … (a replay starts again at 1). Null on rows carried over below.
  attempt     integer,
  -- Null on rows carried over below: the start was never recorded.
  started_at  timestamptz,
  ended_at    timestamptz NOT NULL,
  -- completed, or failed (then retried, or given up: handler_runs says which handlers gave up).
  outcome     text NOT NULL CHECK (outcome IN ('completed', 'failed')),
  -- Why it failed, capped as last_error is (8 KB).
  error       text
);

CREATE INDEX handler_attempts_event_idx ON handler_attempts (event_id, id);

-- What handler_runs knew: the attempt that settled each handler, without its start, its number or the failed attempts
-- before it (those were never recorded; the event's last_error holds the last failure only).
INSERT INTO handler_attempts (event_id, received_at, handler, attempt, started_at, ended_at, outcome, error)
SELECT r.event_id, e.received_at, r.handler, NULL, NULL, r.completed_at,
       CASE WHEN r.outcome = 'done' THEN 'completed' ELSE 'failed' END, r.error
  FROM handler_runs r
  JOIN inbox_events e ON e.event_id = r.event_id
 ORDER BY r.completed_at;
