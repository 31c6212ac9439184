-- Effects that happen once: an effect ledger (issue 25). See docs/effects.md.
--
-- A handler's call to the outside world (create an invoice, send a message, publish) is a named step,
-- `ctx.effect(name, fn)`. Before fn runs its intent is recorded here; after it returns, its result. A later attempt of
-- the same event finds a completed step and returns its result without calling again. A step that started and never
-- recorded an outcome (its process died) is "unknown": called again with the same idempotency key when it declared
-- the outside API honours it, otherwise held for an operator (needs-review).
--
-- Part of the history: partitioned by the event's receipt time like inbox_events (migration 009), a partition of the
-- same range beside each of its partitions, dropped with them by retention. No foreign key (the history has none).

CREATE TABLE effect_steps (
  event_id        text NOT NULL,
  -- The event's receipt time: the key of the history's time partitions.
  received_at     timestamptz NOT NULL,
  handler         text NOT NULL,
  step            text NOT NULL,
  -- Derived from (event, handler, step): the same on every attempt, in every process.
  idempotency_key text NOT NULL,
  -- Whether the outside API applies a repeat of the key once: an unknown step is then called again, not held.
  idempotent      boolean NOT NULL,
  -- started: called, no outcome recorded yet (seen by a later attempt: the outcome is unknown);
  -- completed: returned, its result kept; failed: threw (called again on the next attempt);
  -- needs-review: unknown and not idempotent, held for an operator; redo: the operator said to call it again.
  state           text NOT NULL CHECK (state IN ('started', 'completed', 'failed', 'needs-review', 'redo')),
  -- The event's attempt that last started it.
  attempt         integer NOT NULL,
  -- How many times fn was started for it.
  calls           integer NOT NULL DEFAULT 1,
  -- The JSON text of fn's result (capped; null when over the cap or undefined).
  result          text,
  -- The last failure, or why it needs review.
  error           text,
  started_at      timestamptz NOT NULL DEFAULT now(),
  ended_at        timestamptz,
  -- An operator's answer to needs-review: done (it happened) or redo (call it again), and when.
  resolution      text CHECK (resolution IN ('done', 'redo')),
  resolved_at     timestamptz,
  PRIMARY KEY (event_id, handler, step, received_at)
) PARTITION BY RANGE (received_at);

-- A twin of each partition the history already has (the legacy one of 009, those made since).
DO $$
DECLARE
  p record;
BEGIN
  FOR p IN
    SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'inbox_events'::regclass
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF effect_steps %s', replace(p.relname, 'inbox_events', 'effect_steps'), p.bound);
  END LOOP;
END;
$$;

-- What waits for an operator: counted by the metrics and the alarms, listed by the console.
CREATE INDEX effect_steps_review_idx ON effect_steps (event_id) WHERE state = 'needs-review';

-- needs-review: an event whose handler holds a step of unknown outcome that is not safe to call again. It leaves the
-- queue like a final state and goes back when an operator resolves the step. The status check is found by what it
-- checks, not by name: the history's tables are being rebuilt as partitions (009), which may name it otherwise.
DO $$
DECLARE
  c record;
BEGIN
  FOR c IN
    SELECT con.conname FROM pg_constraint con
     WHERE con.conrelid = 'inbox_events'::regclass AND con.contype = 'c'
       AND pg_get_constraintdef(con.oid) LIKE '%status%'
  LOOP
    EXECUTE format('ALTER TABLE inbox_events DROP CONSTRAINT %I', c.conname);
  END LOOP;
  -- A partition attached with a check of its own (009's legacy partition, the old table) keeps it when the
  -- partitioned table's goes.
  FOR c IN
    SELECT con.conrelid::regclass AS rel, con.conname FROM pg_constraint con
      JOIN pg_inherits i ON i.inhrelid = con.conrelid
     WHERE i.inhparent = 'inbox_events'::regclass AND con.contype = 'c'
       AND pg_get_constraintdef(con.oid) LIKE '%status%'
  LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
  END LOOP;
END;
$$;
ALTER TABLE inbox_events ADD CONSTRAINT inbox_events_status_check
  CHECK (status IN ('pending', 'processing', 'done', 'dead', 'ignored', 'invalid', 'needs-review'));
