-- Many organizations (accounts) in one payhooks (issue 48): the account becomes part of every stored key.
--
-- Every organization of the Payment Collection Service has its own event ids, resources, keys and secrets. Two
-- organizations may send the same eventId (nothing in the spec makes ids unique across them), and the same resource
-- id means two different resources in two organizations. So every key that held an eventId or a resource key now
-- holds the account as well: the ledger deduplicates per account, the queue orders a resource's events per account,
-- the outcomes and effect steps are per (event, account).
--
-- The account goes second in each key, after the eventId: a lookup by eventId alone (an operator's `events show ID`)
-- still reads the key's index, and the account narrows it.
--
-- The database refuses rows for accounts it was not told of: `accounts` holds the configured ones (the service keeps
-- it in step with its configuration at start: src/store/accounts.ts), and the tables into which events arrive from
-- outside (the ledger, the history, the quarantine) refer to it. The tables written only for an event already stored
-- (queue, outcomes, attempts, effect steps) take their account from that event; a foreign key on each would take a
-- share lock on the account's row for every write on the worker's hot path, for no row it could refuse that the
-- history had not refused first.
--
-- Existing rows belong to the implicit account `default`, which a single-account installation keeps using with no
-- configuration change. The columns keep no default: a write that forgets its account fails loudly instead of
-- landing in `default`.

CREATE TABLE accounts (
  id            text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  -- Its weight in the fair claim: its share of each claim is in proportion to it, among the accounts with due work.
  worker_share  integer NOT NULL DEFAULT 1 CHECK (worker_share BETWEEN 1 AND 1000),
  added_at      timestamptz NOT NULL DEFAULT now()
);
INSERT INTO accounts (id) VALUES ('default');

-- A counter the claim advances by one on every call: where in the ring of accounts the claim starts (claim_events).
CREATE SEQUENCE claim_rounds CYCLE;

ALTER TABLE event_ledger ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE inbox_events ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE quarantine ADD COLUMN account text NOT NULL DEFAULT 'default' REFERENCES accounts (id);
ALTER TABLE inbox_queue ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE handler_runs ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE handler_attempts ADD COLUMN account text NOT NULL DEFAULT 'default';
ALTER TABLE effect_steps ADD COLUMN account text NOT NULL DEFAULT 'default';

ALTER TABLE event_ledger ALTER COLUMN account DROP DEFAULT;
ALTER TABLE inbox_events ALTER COLUMN account DROP DEFAULT;
ALTER TABLE quarantine ALTER COLUMN account DROP DEFAULT;
ALTER TABLE inbox_queue ALTER COLUMN account DROP DEFAULT;
ALTER TABLE handler_runs ALTER COLUMN account DROP DEFAULT;
ALTER TABLE handler_attempts ALTER COLUMN account DROP DEFAULT;
ALTER TABLE effect_steps ALTER COLUMN account DROP DEFAULT;

ALTER TABLE event_ledger DROP CONSTRAINT event_ledger_pkey, ADD PRIMARY KEY (event_id, account);
ALTER TABLE inbox_events DROP CONSTRAINT inbox_events_pkey, ADD PRIMARY KEY (event_id, account, received_at);
ALTER TABLE inbox_queue DROP CONSTRAINT inbox_queue_pkey, ADD PRIMARY KEY (event_id, account);
ALTER TABLE handler_runs DROP CONSTRAINT handler_runs_pkey, ADD PRIMARY KEY (event_id, account, handler, received_at);
ALTER TABLE effect_steps DROP CONSTRAINT effect_steps_pkey, ADD PRIMARY KEY (event_id, account, handler, step, received_at);
-- The same body delivered to two accounts is two deliveries, each quarantined (and released) under its own account.
ALTER TABLE quarantine DROP CONSTRAINT quarantine_body_sha256_key, ADD UNIQUE (body_sha256, account);

-- A resource's events are ordered per account: the resource indexes lead with the key and then the account, as the
-- claim compares them.
DROP INDEX inbox_queue_behind_idx;
DROP INDEX inbox_queue_owing_idx;
DROP INDEX inbox_queue_resource_idx;
CREATE INDEX inbox_queue_behind_idx ON inbox_queue (resource_key, account, seq) WHERE parked AND owed IS NULL;
CREATE INDEX inbox_queue_owing_idx ON inbox_queue (resource_key, account, seq) WHERE owed IS NOT NULL;
CREATE INDEX inbox_queue_resource_idx ON inbox_queue (resource_key, account, seq) WHERE resource_key IS NOT NULL;
-- The fair claim reads each account's due events in order.
CREATE INDEX inbox_queue_account_due_idx ON inbox_queue (account, run_at, seq);

-- The view operators read: the same columns in the same order, joined per account, with the account last.
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
       e.seq,
       e.account
  FROM inbox_events e
  LEFT JOIN inbox_queue q ON q.event_id = e.event_id AND q.account = e.account
  LEFT JOIN event_ledger l ON l.event_id = e.event_id AND l.account = e.account;

CREATE OR REPLACE FUNCTION enqueue_new_events() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO inbox_queue (event_id, account, seq, resource_key, run_at, received_at)
  SELECT event_id, account, seq, resource_key, next_attempt_at, received_at FROM new_events WHERE status = 'pending';
  IF FOUND THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_new_event', '');
  END IF;
  RETURN NULL;
END;
$$;

-- The claim, as migration 015 made it (its comments hold), made fair between accounts and keyed per account.
--
-- Fairness. The accounts stand in a ring (ordered by id), and each claim starts max_count places further round it than
-- the one before (claim_rounds). The first max_count accounts with due work from there (all of them when they fit) share
-- the claim in proportion to their worker_share: account a is offered floor(max_count * share(a) / their total share),
-- at least 1, read from its own due events in (run_at, seq) order; when those minimums would overfill the claim (a large
-- share beside small ones), each is offered 1 plus its proportion of the room the minimums leave. Every account taken is
-- offered at least one event, so every account's turn comes within ceil(accounts / max_count) claims, whatever the
-- others have queued or their shares. Room the fair share leaves unused (an account with fewer due events than its
-- share, or events held back by their resource's order) is then filled from every account's due events in queue
-- order, so no claim comes back short while anything is due. With one account (a single-account installation) the
-- claim is the one of 015 with the account as a key.
DROP FUNCTION claim_events(text, integer, double precision, integer, text);
CREATE FUNCTION claim_events(claimant text, max_count integer, lease_seconds double precision, max_attempts integer, data_check text)
  RETURNS TABLE (event_id text, account text, event_type text, resource_key text, raw_body text, attempts integer,
                 received_at timestamptz, trace_parent text, data_checked boolean, seq bigint, buried boolean,
                 runs json, blocked text[])
  LANGUAGE sql VOLATILE
  SET search_path FROM CURRENT
  SET enable_seqscan = off
  SET enable_bitmapscan = off
  SET enable_sort = off
  SET jit = off
AS $$
  WITH ring AS MATERIALIZED (
    SELECT a.id, a.worker_share, row_number() OVER (ORDER BY a.id) - 1 AS place, count(*) OVER () AS size
      FROM accounts a
  ),
  round AS MATERIALIZED (
    SELECT nextval('claim_rounds') AS n
  ),
  active AS MATERIALIZED (
    SELECT r.id, r.worker_share,
           -- Places round the ring from where this claim starts.
           (r.place - (round.n * max_count) % r.size + r.size) % r.size AS turn
      FROM ring r CROSS JOIN round
     -- One probe of the account's due index per account: a lateral with a limit, which the planner cannot turn (as
     -- it did an EXISTS) into a hash of every due event of the queue.
     CROSS JOIN LATERAL (SELECT 1 FROM inbox_queue q WHERE q.account = r.id AND q.run_at <= now() LIMIT 1) due_one
  ),
  -- The accounts this claim offers a share to: the first max_count with due work, in turn order.
  considered AS MATERIALIZED (
    SELECT a.id, a.worker_share, a.turn FROM active a ORDER BY a.turn LIMIT max_count
  ),
  weighed AS MATERIALIZED (
    SELECT c.id,
           greatest(1, floor(max_count::numeric * c.worker_share / sum(c.worker_share) OVER ()))::int AS proportional,
           1 + floor((max_count - count(*) OVER ())::numeric * c.worker_share / sum(c.worker_share) OVER ())::int AS guaranteed
      FROM considered c
  ),
  -- The proportional shares, or, when their minimums of 1 would overfill the claim, 1 each plus a proportion of the
  -- rest: never more than max_count in all, so that no account taken is left out (cut, one of them would be left out
  -- at every claim that starts at the same place of the ring: with as many accounts as max_count, at every claim).
  shares AS MATERIALIZED (
    SELECT w.id, CASE WHEN sum(w.proportional) OVER () <= max_count THEN w.proportional ELSE w.guaranteed END AS offered
      FROM weighed w
  ),
  fair AS (
    SELECT d.*
      FROM shares s
      CROSS JOIN LATERAL (
        SELECT q.event_id, q.account, (q.lease_owner IS NOT NULL AND q.attempts >= max_attempts) AS buried
          FROM inbox_queue q
         WHERE q.account = s.id
           AND q.run_at <= now()
           AND (q.resource_key IS NULL OR NOT EXISTS (
                 SELECT 1 FROM inbox_queue other
                  WHERE other.resource_key = q.resource_key
                    -- The account as an expression no index leads with (here and in fill): the resource index finds the
                    -- few rows of the key. Compared as a column, it let the planner, under statistics taken at another
                    -- size of the queue, walk the account's whole due index instead, once per event claimed.
                    AND (other.account || '') = q.account
                    AND other.event_id <> q.event_id
                    AND ((other.lease_owner IS NOT NULL AND other.run_at > now())
                         OR (other.seq < q.seq AND (other.run_at <= now() OR other.owed IS NULL)))))
         ORDER BY q.run_at, q.seq
         LIMIT s.offered
         FOR UPDATE OF q SKIP LOCKED
      ) d
  ),
  fill AS (
    SELECT q.event_id, q.account, (q.lease_owner IS NOT NULL AND q.attempts >= max_attempts) AS buried
      FROM inbox_queue q
     WHERE q.run_at <= now()
       AND (SELECT count(*) FROM active) > 1
       AND NOT EXISTS (SELECT 1 FROM fair f WHERE f.event_id = q.event_id AND f.account = q.account)
       AND (q.resource_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM inbox_queue other
              WHERE other.resource_key = q.resource_key
                AND (other.account || '') = q.account
                AND other.event_id <> q.event_id
                AND ((other.lease_owner IS NOT NULL AND other.run_at > now())
                     OR (other.seq < q.seq AND (other.run_at <= now() OR other.owed IS NULL)))))
     ORDER BY q.run_at, q.seq
     LIMIT greatest(0, max_count - (SELECT count(*) FROM fair))
     FOR UPDATE OF q SKIP LOCKED
  ),
  due AS (
    SELECT * FROM fair UNION ALL SELECT * FROM fill
  ),
  leased AS (
    UPDATE inbox_queue q
       SET lease_owner = claimant,
           attempts = q.attempts + 1,
           parked = false,
           run_at = now() + make_interval(secs => lease_seconds)
     -- The ids as an index condition, not a join (migration 015 says what a join cost): each one probe of the primary
     -- key, then held to its account by the whole key as one text (account, newline, id: an account id holds no
     -- newline). Joined with the pairs unnested instead, the planner, under statistics taken at another size of the
     -- queue, walked an index of the whole queue and probed the pairs for each of its rows.
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE NOT d.buried))
       AND q.account || E'\n' || q.event_id = ANY (ARRAY(SELECT d.account || E'\n' || d.event_id FROM due d WHERE NOT d.buried))
    RETURNING q.event_id, q.account, q.attempts, q.seq, q.resource_key, q.received_at, q.run_at
  ),
  behind AS (
    SELECT f.event_id, f.account
      FROM leased l
      CROSS JOIN LATERAL (
        SELECT f.event_id, f.account FROM inbox_queue f
         WHERE f.resource_key = l.resource_key AND f.account = l.account AND f.seq > l.seq AND f.lease_owner IS NULL
           AND f.owed IS NULL AND f.run_at <= now()
           FOR UPDATE SKIP LOCKED) f
     WHERE (SELECT count(*) FROM due) < max_count
  ),
  set_aside AS (
    UPDATE inbox_queue f
       SET parked = true, run_at = now() + make_interval(secs => lease_seconds)
     WHERE f.event_id = ANY (ARRAY(SELECT b.event_id FROM behind b))
       AND f.account || E'\n' || f.event_id = ANY (ARRAY(SELECT b.account || E'\n' || b.event_id FROM behind b))
  ),
  unqueued AS (
    DELETE FROM inbox_queue q
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE d.buried))
       AND q.account || E'\n' || q.event_id = ANY (ARRAY(SELECT d.account || E'\n' || d.event_id FROM due d WHERE d.buried))
    RETURNING q.event_id, q.account, q.attempts, q.received_at
  ),
  buried AS (
    UPDATE inbox_events e
       SET status = 'dead',
           attempts = u.attempts,
           processed_at = now(),
           last_error = 'Its last allowed attempt never recorded an outcome: the process running it died (or lost its lease) after '
                        || u.attempts || ' claims of ' || max_attempts || ' allowed. Replay it once the handler is fixed.'
      FROM unqueued u
     WHERE e.event_id = u.event_id AND e.account = u.account AND e.received_at = u.received_at
    RETURNING e.event_id, e.account, e.event_type, e.attempts, e.seq
  )
  SELECT e.event_id, e.account, e.event_type, e.resource_key, e.raw_body, l.attempts, e.received_at, e.trace_parent,
         e.data_valid_under = data_check, l.seq, false,
         (SELECT json_agg(json_build_array(r.handler, r.outcome, r.error)) FROM handler_runs r
           WHERE r.event_id = e.event_id AND r.account = e.account AND r.received_at = e.received_at),
         CASE WHEN l.resource_key IS NOT NULL THEN
           ARRAY(SELECT DISTINCT h FROM inbox_queue o CROSS JOIN unnest(o.owed) h
                  WHERE o.resource_key = l.resource_key AND o.account = l.account AND o.seq < l.seq AND o.owed IS NOT NULL) END
    FROM leased l JOIN inbox_events e ON e.event_id = l.event_id AND e.account = l.account AND e.received_at = l.received_at
  UNION ALL
  SELECT b.event_id, b.account, b.event_type, NULL, NULL, b.attempts, NULL, NULL, NULL, b.seq, true, NULL, NULL FROM buried b
  ORDER BY 10
$$;
