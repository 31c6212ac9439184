-- The gap sweeper's record (issue 26, item 2): one row per run of `serve`'s sweeper (reconcile, then a sampled
-- verify of the mirror) or of a verify started from the console, with what it found and what it repaired.
--
-- /metrics, GET /admin/api/health and the console read the newest row, so every process on this database (serve's
-- receiver and its worker child, several replicas) shows the same last run, and the record outlives a restart.
-- Events are named by event_id text inside `findings`, never by a foreign key: the event history is being
-- partitioned by received_at, and a run's record must not hold those partitions.

CREATE TABLE sweeper_runs (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- sweeper: the periodic run of serve; console: POST /admin/api/verify.
  trigger              text NOT NULL CHECK (trigger IN ('sweeper', 'console')),
  started_at           timestamptz NOT NULL,
  finished_at          timestamptz NOT NULL DEFAULT now(),
  -- clean: nothing found; found: gaps or drift (repaired or not); failed: a part of the run threw (see error).
  outcome              text NOT NULL CHECK (outcome IN ('clean', 'found', 'failed')),
  -- Reconciliation's counts; null when it did not run (a console verify, no API key).
  reconcile_listed     integer,
  reconcile_missing    integer,
  reconcile_resent     integer,
  reconcile_unrecovered integer,
  -- The verify's counts; null when it did not run (no mirror in this database, say).
  verify_sample        integer,
  verify_checked       integer,
  verify_drift         integer,
  verify_repaired      integer,
  -- What was found, one JSON object each, at most a few hundred (the counts above are complete).
  findings             jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- Parts skipped and why, and warnings of the parts that ran.
  notes                jsonb NOT NULL DEFAULT '[]'::jsonb,
  error                text
);

-- The newest run (of either trigger, or of one) is what every reader asks for.
CREATE INDEX sweeper_runs_newest_idx ON sweeper_runs (finished_at DESC, id DESC);
