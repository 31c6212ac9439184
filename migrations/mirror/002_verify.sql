-- `payhooks verify` (src/sync/verify/): where each resource's pass stands, what it has found so far and which
-- ids the service listed, so that an interrupted run resumes at its cursor with its findings, and the last
-- pass's result stays readable after it ends. since_key: the --since time (ISO) or '' for all, as backfill's.

CREATE TABLE verify_cursors (
  resource     text NOT NULL,
  since_key    text NOT NULL,
  next_skip    integer NOT NULL DEFAULT 0,
  checked      integer NOT NULL DEFAULT 0,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (resource, since_key)
);

-- One row per drifted record of the current (or last) pass; replaced when a new pass starts.
CREATE TABLE verify_findings (
  resource     text NOT NULL,
  since_key    text NOT NULL,
  id           text NOT NULL,
  -- missing: listed by the service, no row; stale: the row predates the record's last change;
  -- different: the row was written after that change and still differs; extra: a row the service does not know
  kind         text NOT NULL CHECK (kind IN ('missing', 'stale', 'different', 'extra')),
  diff         jsonb NOT NULL DEFAULT '[]',
  repaired_at  timestamptz,
  found_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (resource, since_key, id)
);

-- The ids the service listed in the current pass: the rows not among them are the candidates for "extra".
CREATE TABLE verify_seen (
  resource   text NOT NULL,
  since_key  text NOT NULL,
  id         text NOT NULL,
  PRIMARY KEY (resource, since_key, id)
);
