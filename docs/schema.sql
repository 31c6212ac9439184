-- The schema that payhooks' migrations produce, dumped by `npm run schema:dump` (scripts/dump-schema.ts).
-- Generated: edit migrations/, never this file; test/store/schema-dump.test.ts holds the two together.
--
-- PostgreSQL database dump
--

--
-- Name: payhooks; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA payhooks;

--
-- Name: payhooks_mirror; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA payhooks_mirror;

--
-- Name: claim_events(text, integer, double precision, integer, text); Type: FUNCTION; Schema: payhooks; Owner: -
--

CREATE FUNCTION payhooks.claim_events(claimant text, max_count integer, lease_seconds double precision, max_attempts integer, data_check text) RETURNS TABLE(event_id text, account text, event_type text, resource_key text, raw_body text, attempts integer, received_at timestamp with time zone, trace_parent text, data_checked boolean, seq bigint, buried boolean, runs json, blocked text[], lease_token bigint)
    LANGUAGE plpgsql
    SET search_path TO 'payhooks'
    SET jit TO 'off'
    AS $$
DECLARE
  configured text[] := ARRAY(SELECT a.id FROM accounts a LIMIT 2);
BEGIN
  -- A plan of its own for each call (LANGUAGE sql, planned where it runs), chosen by the accounts there are now.
  IF cardinality(configured) > 1 THEN
    RETURN QUERY SELECT * FROM claim_events_fair(claimant, max_count, lease_seconds, max_attempts, data_check);
  ELSE
    RETURN QUERY SELECT * FROM claim_events_single(configured[1], claimant, max_count, lease_seconds, max_attempts, data_check);
  END IF;
END;
$$;

--
-- Name: claim_events_fair(text, integer, double precision, integer, text); Type: FUNCTION; Schema: payhooks; Owner: -
--

CREATE FUNCTION payhooks.claim_events_fair(claimant text, max_count integer, lease_seconds double precision, max_attempts integer, data_check text) RETURNS TABLE(event_id text, account text, event_type text, resource_key text, raw_body text, attempts integer, received_at timestamp with time zone, trace_parent text, data_checked boolean, seq bigint, buried boolean, runs json, blocked text[], lease_token bigint)
    LANGUAGE sql
    SET search_path TO 'payhooks'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
  WITH ring AS MATERIALIZED (
    SELECT a.id, a.worker_share, row_number() OVER (ORDER BY a.id) - 1 AS place, count(*) OVER () AS size
      FROM accounts a
  ),
  round AS MATERIALIZED (
    SELECT nextval('claim_rounds') AS n
  ),
  -- One token for the claim: the fencing compares it with the event's row, so it need only differ from every earlier
  -- claim's (a nextval per row cost 500 of them per claim).
  token AS MATERIALIZED (
    SELECT nextval('lease_tokens') AS t
  ),
  active AS MATERIALIZED (
    SELECT r.id, r.worker_share,
           -- Places round the ring from where this claim starts.
           (r.place - (round.n * max_count) % r.size + r.size) % r.size AS turn
      FROM ring r CROSS JOIN round
     -- One probe of the account's due index per account: a lateral with a limit, which the planner cannot turn (as
     -- it did an EXISTS) into a hash of every due event of the queue. In the index's order (026): without an order,
     -- a plan made while the queue was full walked the primary key for each account until a row of it came up.
     CROSS JOIN LATERAL (
       SELECT 1 FROM inbox_queue q WHERE q.account = r.id AND q.run_at <= now() ORDER BY q.account, q.run_at LIMIT 1
     ) due_one
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
  -- What the shares left unused, from the same accounts in the same turn order, each one's oldest first (the queue has
  -- no index of its due events across accounts: each account's own index serves, and a claim stops reading as soon
  -- as it has its room).
  fill AS (
    SELECT d.*
      FROM considered c
      CROSS JOIN LATERAL (
        SELECT q.event_id, q.account, (q.lease_owner IS NOT NULL AND q.attempts >= max_attempts) AS buried
          FROM inbox_queue q
         WHERE q.account = c.id
           AND q.run_at <= now()
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
      ) d
     WHERE (SELECT count(*) FROM active) > 1
     LIMIT greatest(0, max_count - (SELECT count(*) FROM fair))
  ),
  due AS (
    SELECT * FROM fair UNION ALL SELECT * FROM fill
  ),
  leased AS (
    UPDATE inbox_queue q
       SET lease_owner = claimant,
           lease_token = (SELECT token.t FROM token),
           attempts = q.attempts + 1,
           parked = false,
           run_at = now() + make_interval(secs => lease_seconds)
     -- The ids as an index condition, not a join (migration 015 says what a join cost): each one probe of the primary
     -- key, then held to its account by the whole key as one text (account, newline, id: an account id holds no
     -- newline), looked up in a jsonb object of the picked keys: a binary search per row. Joined with the pairs
     -- unnested instead, the planner, under statistics taken at another size of the queue, walked an index of the
     -- whole queue and probed the pairs for each of its rows; compared with an array of the keys, each row was
     -- compared with every key (a claim of 500: 250,000 comparisons, 5 of its 32 ms).
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE NOT d.buried))
       AND (SELECT jsonb_object_agg(d.account || E'\n' || d.event_id, true) FROM due d WHERE NOT d.buried)
           ? (q.account || E'\n' || q.event_id)
    RETURNING q.event_id, q.account, q.attempts, q.seq, q.resource_key, q.received_at, q.run_at, q.lease_token
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
       AND (SELECT jsonb_object_agg(b.account || E'\n' || b.event_id, true) FROM behind b) ? (f.account || E'\n' || f.event_id)
  ),
  unqueued AS (
    DELETE FROM inbox_queue q
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE d.buried))
       AND (SELECT jsonb_object_agg(d.account || E'\n' || d.event_id, true) FROM due d WHERE d.buried)
           ? (q.account || E'\n' || q.event_id)
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
                  WHERE o.resource_key = l.resource_key AND o.account = l.account AND o.seq < l.seq AND o.owed IS NOT NULL) END,
         l.lease_token
    FROM leased l JOIN inbox_events e ON e.event_id = l.event_id AND e.account = l.account AND e.received_at = l.received_at
  UNION ALL
  SELECT b.event_id, b.account, b.event_type, NULL, NULL, b.attempts, NULL, NULL, NULL, b.seq, true, NULL, NULL, NULL FROM buried b
  ORDER BY 10
$$;

--
-- Name: claim_events_single(text, text, integer, double precision, integer, text); Type: FUNCTION; Schema: payhooks; Owner: -
--

CREATE FUNCTION payhooks.claim_events_single(only_account text, claimant text, max_count integer, lease_seconds double precision, max_attempts integer, data_check text) RETURNS TABLE(event_id text, account text, event_type text, resource_key text, raw_body text, attempts integer, received_at timestamp with time zone, trace_parent text, data_checked boolean, seq bigint, buried boolean, runs json, blocked text[], lease_token bigint)
    LANGUAGE sql
    SET search_path TO 'payhooks'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
  WITH token AS MATERIALIZED (SELECT nextval('lease_tokens') AS t),
  due AS (
    SELECT q.event_id, q.account, (q.lease_owner IS NOT NULL AND q.attempts >= max_attempts) AS buried
      FROM inbox_queue q
     WHERE q.account = only_account
       AND q.run_at <= now()
       AND (q.resource_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM inbox_queue other
              WHERE other.resource_key = q.resource_key
                AND (other.account || '') = q.account
                AND other.event_id <> q.event_id
                AND ((other.lease_owner IS NOT NULL AND other.run_at > now())
                     OR (other.seq < q.seq AND (other.run_at <= now() OR other.owed IS NULL)))))
     ORDER BY q.run_at, q.seq
     LIMIT max_count
     FOR UPDATE OF q SKIP LOCKED
  ),
  leased AS (
    UPDATE inbox_queue q
       SET lease_owner = claimant,
           lease_token = (SELECT token.t FROM token),
           attempts = q.attempts + 1,
           parked = false,
           run_at = now() + make_interval(secs => lease_seconds)
     -- The ids as an index condition, not a join (migration 015 says what a join cost): each one probe of the primary
     -- key, held to the one account as an expression no index leads with (as outcomes' ofEvents does): compared as a
     -- column, the planner (the queue's statistics taken while it was nearly empty) walked the account's whole due
     -- index instead, testing each row against the list of ids (415 ms of a claim of 1,000 in a queue of 10,000,
     -- auto_explain in a draining worker).
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE NOT d.buried)) AND (q.account || '') = only_account
    RETURNING q.event_id, q.account, q.attempts, q.seq, q.resource_key, q.received_at, q.run_at, q.lease_token
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
     WHERE f.event_id = ANY (ARRAY(SELECT b.event_id FROM behind b)) AND (f.account || '') = only_account
  ),
  unqueued AS (
    DELETE FROM inbox_queue q
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE d.buried)) AND (q.account || '') = only_account
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
                  WHERE o.resource_key = l.resource_key AND o.account = l.account AND o.seq < l.seq AND o.owed IS NOT NULL) END,
         l.lease_token
    FROM leased l JOIN inbox_events e ON e.event_id = l.event_id AND e.account = l.account AND e.received_at = l.received_at
  UNION ALL
  SELECT b.event_id, b.account, b.event_type, NULL, NULL, b.attempts, NULL, NULL, NULL, b.seq, true, NULL, NULL, NULL FROM buried b
  ORDER BY 10
$$;

--
-- Name: enqueue_new_events(); Type: FUNCTION; Schema: payhooks; Owner: -
--

CREATE FUNCTION payhooks.enqueue_new_events() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'payhooks'
    AS $$
BEGIN
  INSERT INTO inbox_queue (event_id, account, seq, resource_key, run_at, received_at)
  SELECT event_id, account, seq, resource_key, next_attempt_at, received_at FROM new_events WHERE status = 'pending';
  IF FOUND THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_new_event', '');
  END IF;
  RETURN NULL;
END;
$$;

--
-- Name: accounts; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.accounts (
    id text NOT NULL COLLATE pg_catalog."C",
    worker_share integer DEFAULT 1 NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT accounts_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text)),
    CONSTRAINT accounts_worker_share_check CHECK (((worker_share >= 1) AND (worker_share <= 1000)))
);

--
-- Name: api_rate_budget; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.api_rate_budget (
    budget text DEFAULT 'default'::text NOT NULL COLLATE pg_catalog."C",
    window_start timestamp with time zone NOT NULL,
    used integer NOT NULL,
    CONSTRAINT api_rate_budget_used_check CHECK ((used >= 0))
);

--
-- Name: claim_rounds; Type: SEQUENCE; Schema: payhooks; Owner: -
--

CREATE SEQUENCE payhooks.claim_rounds
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
    CYCLE;

--
-- Name: effect_steps; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.effect_steps (
    event_id text NOT NULL COLLATE pg_catalog."C",
    received_at timestamp with time zone NOT NULL,
    handler text NOT NULL COLLATE pg_catalog."C",
    step text NOT NULL COLLATE pg_catalog."C",
    idempotency_key text NOT NULL,
    idempotent boolean NOT NULL,
    state text NOT NULL,
    attempt integer NOT NULL,
    calls integer DEFAULT 1 NOT NULL,
    result text,
    error text,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    ended_at timestamp with time zone,
    resolution text,
    resolved_at timestamp with time zone,
    account text NOT NULL COLLATE pg_catalog."C",
    CONSTRAINT effect_steps_resolution_check CHECK ((resolution = ANY (ARRAY['done'::text, 'redo'::text]))),
    CONSTRAINT effect_steps_state_check CHECK ((state = ANY (ARRAY['started'::text, 'completed'::text, 'failed'::text, 'needs-review'::text, 'redo'::text])))
)
PARTITION BY RANGE (received_at);

--
-- Name: event_ledger; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.event_ledger (
    event_id text NOT NULL COLLATE pg_catalog."C",
    first_received_at timestamp with time zone DEFAULT now() NOT NULL,
    body_sha256 bytea NOT NULL,
    deliveries integer DEFAULT 1 NOT NULL,
    account text NOT NULL COLLATE pg_catalog."C",
    resource_key text COLLATE pg_catalog."C",
    seq bigint,
    sender_id text COLLATE pg_catalog."C"
);

--
-- Name: handler_attempts; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.handler_attempts (
    id bigint NOT NULL,
    event_id text NOT NULL COLLATE pg_catalog."C",
    received_at timestamp with time zone NOT NULL,
    handler text NOT NULL COLLATE pg_catalog."C",
    attempt integer,
    started_at timestamp with time zone,
    ended_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    error text,
    account text NOT NULL COLLATE pg_catalog."C",
    issue_id bigint,
    CONSTRAINT handler_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['completed'::text, 'failed'::text])))
)
PARTITION BY RANGE (received_at);

--
-- Name: handler_attempts_id_seq; Type: SEQUENCE; Schema: payhooks; Owner: -
--

CREATE SEQUENCE payhooks.handler_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: handler_attempts_id_seq; Type: SEQUENCE OWNED BY; Schema: payhooks; Owner: -
--

ALTER SEQUENCE payhooks.handler_attempts_id_seq OWNED BY payhooks.handler_attempts.id;

--
-- Name: handler_runs; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.handler_runs (
    event_id text NOT NULL COLLATE pg_catalog."C",
    handler text NOT NULL COLLATE pg_catalog."C",
    received_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome text DEFAULT 'done'::text NOT NULL,
    error text,
    started_at timestamp with time zone,
    attempt integer,
    account text NOT NULL COLLATE pg_catalog."C",
    CONSTRAINT handler_runs_outcome_check CHECK ((outcome = ANY (ARRAY['done'::text, 'dead'::text])))
)
PARTITION BY RANGE (received_at);

--
-- Name: inbox_events; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.inbox_events (
    event_id text NOT NULL COLLATE pg_catalog."C",
    event_type text NOT NULL COLLATE pg_catalog."C",
    resource_key text COLLATE pg_catalog."C",
    raw_body text NOT NULL,
    payload jsonb,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    deliveries integer DEFAULT 1 NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL COLLATE pg_catalog."C",
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    processed_at timestamp with time zone,
    seq bigint NOT NULL,
    trace_parent text,
    data_valid_under text,
    account text NOT NULL COLLATE pg_catalog."C",
    CONSTRAINT inbox_events_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'processing'::text, 'done'::text, 'dead'::text, 'ignored'::text, 'invalid'::text, 'needs-review'::text])))
)
PARTITION BY RANGE (received_at);
ALTER TABLE ONLY payhooks.inbox_events ALTER COLUMN raw_body SET COMPRESSION lz4;

--
-- Name: inbox_queue; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.inbox_queue (
    event_id text NOT NULL COLLATE pg_catalog."C",
    seq bigint NOT NULL,
    resource_key text COLLATE pg_catalog."C",
    run_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_owner text,
    attempts integer DEFAULT 0 NOT NULL,
    owed text[],
    parked boolean DEFAULT false NOT NULL,
    received_at timestamp with time zone NOT NULL,
    account text NOT NULL COLLATE pg_catalog."C",
    lease_token bigint
);

--
-- Name: inbox_event_states; Type: VIEW; Schema: payhooks; Owner: -
--

CREATE VIEW payhooks.inbox_event_states AS
 SELECT e.event_id,
    e.event_type,
    e.resource_key,
    e.raw_body,
    e.payload,
    e.headers,
    e.received_at,
    COALESCE(l.deliveries, e.deliveries) AS deliveries,
        CASE
            WHEN (q.lease_owner IS NOT NULL) THEN 'processing'::text
            ELSE e.status
        END AS status,
    COALESCE(q.attempts, e.attempts) AS attempts,
        CASE
            WHEN ((q.event_id IS NOT NULL) AND (q.lease_owner IS NULL)) THEN q.run_at
            ELSE e.next_attempt_at
        END AS next_attempt_at,
    q.lease_owner,
        CASE
            WHEN (q.lease_owner IS NOT NULL) THEN q.run_at
            ELSE NULL::timestamp with time zone
        END AS lease_expires_at,
    e.last_error,
    e.processed_at,
    e.seq,
    e.account
   FROM ((payhooks.inbox_events e
     LEFT JOIN payhooks.inbox_queue q ON (((q.event_id = e.event_id) AND (q.account = e.account))))
     LEFT JOIN payhooks.event_ledger l ON (((l.event_id = e.event_id) AND (l.account = e.account))));

--
-- Name: inbox_events_seq; Type: SEQUENCE; Schema: payhooks; Owner: -
--

CREATE SEQUENCE payhooks.inbox_events_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: inbox_events_seq; Type: SEQUENCE OWNED BY; Schema: payhooks; Owner: -
--

ALTER SEQUENCE payhooks.inbox_events_seq OWNED BY payhooks.inbox_events.seq;

--
-- Name: issues; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.issues (
    id bigint NOT NULL,
    handler text NOT NULL COLLATE pg_catalog."C",
    error_class text NOT NULL COLLATE pg_catalog."C",
    event_type text NOT NULL COLLATE pg_catalog."C",
    state text DEFAULT 'open'::text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    failures bigint DEFAULT 0 NOT NULL,
    last_error text,
    opened_at timestamp with time zone DEFAULT now() NOT NULL,
    reopened integer DEFAULT 0 NOT NULL,
    state_at timestamp with time zone DEFAULT now() NOT NULL,
    notified_at timestamp with time zone,
    CONSTRAINT issues_state_check CHECK ((state = ANY (ARRAY['open'::text, 'acknowledged'::text, 'resolved'::text, 'ignored'::text])))
);

--
-- Name: issues_id_seq; Type: SEQUENCE; Schema: payhooks; Owner: -
--

ALTER TABLE payhooks.issues ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME payhooks.issues_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: lease_tokens; Type: SEQUENCE; Schema: payhooks; Owner: -
--

CREATE SEQUENCE payhooks.lease_tokens
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: quarantine; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.quarantine (
    id bigint NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    last_received_at timestamp with time zone DEFAULT now() NOT NULL,
    deliveries integer DEFAULT 1 NOT NULL,
    kind text NOT NULL,
    reason text NOT NULL,
    event_id text COLLATE pg_catalog."C",
    event_type text COLLATE pg_catalog."C",
    raw_body bytea NOT NULL,
    headers text NOT NULL,
    body_sha256 bytea NOT NULL,
    state text DEFAULT 'held'::text NOT NULL,
    released_event_id text COLLATE pg_catalog."C",
    resolved_at timestamp with time zone,
    account text NOT NULL COLLATE pg_catalog."C",
    CONSTRAINT quarantine_kind_check CHECK ((kind = ANY (ARRAY['not_utf8'::text, 'not_json'::text, 'not_envelope'::text, 'unstorable_resource'::text, 'unstorable_event'::text]))),
    CONSTRAINT quarantine_state_check CHECK ((state = ANY (ARRAY['held'::text, 'released'::text, 'discarded'::text])))
);

--
-- Name: quarantine_id_seq; Type: SEQUENCE; Schema: payhooks; Owner: -
--

ALTER TABLE payhooks.quarantine ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME payhooks.quarantine_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: schema_migrations; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.schema_migrations (
    name text NOT NULL COLLATE pg_catalog."C",
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: sweeper_runs; Type: TABLE; Schema: payhooks; Owner: -
--

CREATE TABLE payhooks.sweeper_runs (
    id bigint NOT NULL,
    trigger text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome text NOT NULL,
    reconcile_listed integer,
    reconcile_missing integer,
    reconcile_resent integer,
    reconcile_unrecovered integer,
    verify_sample integer,
    verify_checked integer,
    verify_drift integer,
    verify_repaired integer,
    findings jsonb DEFAULT '[]'::jsonb NOT NULL,
    notes jsonb DEFAULT '[]'::jsonb NOT NULL,
    error text,
    account text COLLATE pg_catalog."C",
    CONSTRAINT sweeper_runs_outcome_check CHECK ((outcome = ANY (ARRAY['clean'::text, 'found'::text, 'failed'::text]))),
    CONSTRAINT sweeper_runs_trigger_check CHECK ((trigger = ANY (ARRAY['sweeper'::text, 'console'::text])))
);

--
-- Name: sweeper_runs_id_seq; Type: SEQUENCE; Schema: payhooks; Owner: -
--

ALTER TABLE payhooks.sweeper_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME payhooks.sweeper_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: accounts; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.accounts (
    id text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT accounts_id_check CHECK ((id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'::text))
);

--
-- Name: backfill_cursors; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.backfill_cursors (
    resource text NOT NULL,
    since_key text NOT NULL,
    next_skip integer DEFAULT 0 NOT NULL,
    written integer DEFAULT 0 NOT NULL,
    finished_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL
);

--
-- Name: customers; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.customers (
    id text NOT NULL,
    username text,
    name text,
    email text,
    phone_number text,
    archived boolean DEFAULT false NOT NULL,
    archived_at timestamp with time zone,
    created_at timestamp with time zone,
    updated_at timestamp with time zone,
    meta jsonb DEFAULT '{}'::jsonb NOT NULL,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT customers_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: disputes; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.disputes (
    id text NOT NULL,
    payment_id text,
    customer_id text,
    status text NOT NULL,
    reason text,
    respond_by timestamp with time zone,
    created_at timestamp with time zone,
    resolved_at timestamp with time zone,
    lost_reason text,
    response_id text,
    response_created_at timestamp with time zone,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT disputes_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: invoice_items; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.invoice_items (
    invoice_id text NOT NULL,
    "position" integer NOT NULL,
    description text,
    amount numeric NOT NULL,
    currency text NOT NULL,
    quantity numeric NOT NULL,
    concept_id text,
    account text DEFAULT 'default'::text NOT NULL
);

--
-- Name: invoices; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.invoices (
    id text NOT NULL,
    customer_id text,
    status text NOT NULL,
    amount numeric NOT NULL,
    currency text NOT NULL,
    description text,
    due_date timestamp with time zone,
    expire_date timestamp with time zone,
    collection_method text,
    is_paid boolean NOT NULL,
    paid_at timestamp with time zone,
    canceled_at timestamp with time zone,
    created_at timestamp with time zone,
    meta jsonb DEFAULT '{}'::jsonb NOT NULL,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT invoices_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: mirror_migrations; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.mirror_migrations (
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: payment_methods; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.payment_methods (
    id text NOT NULL,
    customer_id text,
    type text NOT NULL,
    confirmed boolean,
    charges_consented boolean,
    card_brand text,
    card_last4 text,
    bank_name text,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT payment_methods_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: payments; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.payments (
    id text NOT NULL,
    invoice_id text,
    customer_id text,
    amount numeric NOT NULL,
    currency text NOT NULL,
    type text,
    status text,
    is_completed boolean,
    payment_time timestamp with time zone,
    authorization_code text,
    created_at timestamp with time zone,
    meta jsonb DEFAULT '{}'::jsonb NOT NULL,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT payments_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: refunds; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.refunds (
    id text NOT NULL,
    payment_id text,
    customer_id text,
    amount numeric NOT NULL,
    currency text NOT NULL,
    status text NOT NULL,
    reason text,
    created_at timestamp with time zone,
    status_updated_at timestamp with time zone,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT refunds_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: subscriptions; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.subscriptions (
    id text NOT NULL,
    customer_id text,
    description text,
    status text,
    is_active boolean NOT NULL,
    is_completed boolean NOT NULL,
    first_collection_date timestamp with time zone,
    last_collection_date timestamp with time zone,
    next_collection_date timestamp with time zone,
    number_of_payments integer,
    collection_method text,
    meta jsonb DEFAULT '{}'::jsonb NOT NULL,
    data jsonb NOT NULL,
    source text NOT NULL,
    state_at timestamp with time zone NOT NULL,
    state_rank smallint NOT NULL,
    state_hash text NOT NULL,
    last_event_id text,
    last_event_type text,
    synced_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT subscriptions_source_check CHECK ((source = ANY (ARRAY['api'::text, 'event'::text])))
);

--
-- Name: verify_cursors; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.verify_cursors (
    resource text NOT NULL,
    since_key text NOT NULL,
    next_skip integer DEFAULT 0 NOT NULL,
    checked integer DEFAULT 0 NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL
);

--
-- Name: verify_findings; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.verify_findings (
    resource text NOT NULL,
    since_key text NOT NULL,
    id text NOT NULL,
    kind text NOT NULL,
    diff jsonb DEFAULT '[]'::jsonb NOT NULL,
    repaired_at timestamp with time zone,
    found_at timestamp with time zone DEFAULT now() NOT NULL,
    account text DEFAULT 'default'::text NOT NULL,
    CONSTRAINT verify_findings_kind_check CHECK ((kind = ANY (ARRAY['missing'::text, 'stale'::text, 'different'::text, 'extra'::text])))
);

--
-- Name: verify_seen; Type: TABLE; Schema: payhooks_mirror; Owner: -
--

CREATE TABLE payhooks_mirror.verify_seen (
    resource text NOT NULL,
    since_key text NOT NULL,
    id text NOT NULL,
    account text DEFAULT 'default'::text NOT NULL
);

--
-- Name: handler_attempts id; Type: DEFAULT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.handler_attempts ALTER COLUMN id SET DEFAULT nextval('payhooks.handler_attempts_id_seq'::regclass);

--
-- Name: inbox_events seq; Type: DEFAULT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.inbox_events ALTER COLUMN seq SET DEFAULT nextval('payhooks.inbox_events_seq'::regclass);

--
-- Name: accounts accounts_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

--
-- Name: api_rate_budget api_rate_budget_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.api_rate_budget
    ADD CONSTRAINT api_rate_budget_pkey PRIMARY KEY (budget, window_start);

--
-- Name: effect_steps effect_steps_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.effect_steps
    ADD CONSTRAINT effect_steps_pkey PRIMARY KEY (event_id, account, handler, step, received_at);

--
-- Name: event_ledger event_ledger_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.event_ledger
    ADD CONSTRAINT event_ledger_pkey PRIMARY KEY (event_id, account);

--
-- Name: handler_attempts handler_attempts_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.handler_attempts
    ADD CONSTRAINT handler_attempts_pkey PRIMARY KEY (id, received_at);

--
-- Name: handler_runs handler_runs_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.handler_runs
    ADD CONSTRAINT handler_runs_pkey PRIMARY KEY (event_id, account, handler, received_at);

--
-- Name: inbox_events inbox_events_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.inbox_events
    ADD CONSTRAINT inbox_events_pkey PRIMARY KEY (event_id, account, received_at);

--
-- Name: inbox_queue inbox_queue_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.inbox_queue
    ADD CONSTRAINT inbox_queue_pkey PRIMARY KEY (event_id, account);

--
-- Name: issues issues_handler_error_class_event_type_key; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.issues
    ADD CONSTRAINT issues_handler_error_class_event_type_key UNIQUE (handler, error_class, event_type);

--
-- Name: issues issues_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.issues
    ADD CONSTRAINT issues_pkey PRIMARY KEY (id);

--
-- Name: quarantine quarantine_body_sha256_account_key; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.quarantine
    ADD CONSTRAINT quarantine_body_sha256_account_key UNIQUE (body_sha256, account);

--
-- Name: quarantine quarantine_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.quarantine
    ADD CONSTRAINT quarantine_pkey PRIMARY KEY (id);

--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (name);

--
-- Name: sweeper_runs sweeper_runs_pkey; Type: CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.sweeper_runs
    ADD CONSTRAINT sweeper_runs_pkey PRIMARY KEY (id);

--
-- Name: accounts accounts_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

--
-- Name: backfill_cursors backfill_cursors_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.backfill_cursors
    ADD CONSTRAINT backfill_cursors_pkey PRIMARY KEY (account, resource, since_key);

--
-- Name: customers customers_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.customers
    ADD CONSTRAINT customers_pkey PRIMARY KEY (account, id);

--
-- Name: disputes disputes_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.disputes
    ADD CONSTRAINT disputes_pkey PRIMARY KEY (account, id);

--
-- Name: invoice_items invoice_items_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.invoice_items
    ADD CONSTRAINT invoice_items_pkey PRIMARY KEY (account, invoice_id, "position");

--
-- Name: invoices invoices_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.invoices
    ADD CONSTRAINT invoices_pkey PRIMARY KEY (account, id);

--
-- Name: mirror_migrations mirror_migrations_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.mirror_migrations
    ADD CONSTRAINT mirror_migrations_pkey PRIMARY KEY (name);

--
-- Name: payment_methods payment_methods_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.payment_methods
    ADD CONSTRAINT payment_methods_pkey PRIMARY KEY (account, id);

--
-- Name: payments payments_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.payments
    ADD CONSTRAINT payments_pkey PRIMARY KEY (account, id);

--
-- Name: refunds refunds_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.refunds
    ADD CONSTRAINT refunds_pkey PRIMARY KEY (account, id);

--
-- Name: subscriptions subscriptions_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.subscriptions
    ADD CONSTRAINT subscriptions_pkey PRIMARY KEY (account, id);

--
-- Name: verify_cursors verify_cursors_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.verify_cursors
    ADD CONSTRAINT verify_cursors_pkey PRIMARY KEY (account, resource, since_key);

--
-- Name: verify_findings verify_findings_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.verify_findings
    ADD CONSTRAINT verify_findings_pkey PRIMARY KEY (account, resource, since_key, id);

--
-- Name: verify_seen verify_seen_pkey; Type: CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.verify_seen
    ADD CONSTRAINT verify_seen_pkey PRIMARY KEY (account, resource, since_key, id);

--
-- Name: effect_steps_review_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX effect_steps_review_idx ON ONLY payhooks.effect_steps USING btree (event_id) WHERE (state = 'needs-review'::text);

--
-- Name: event_ledger_resource_seq_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX event_ledger_resource_seq_idx ON payhooks.event_ledger USING btree (resource_key, seq) WHERE (resource_key IS NOT NULL);

--
-- Name: event_ledger_sender_id_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX event_ledger_sender_id_idx ON payhooks.event_ledger USING btree (sender_id) WHERE (sender_id IS NOT NULL);

--
-- Name: handler_attempts_event_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX handler_attempts_event_idx ON ONLY payhooks.handler_attempts USING btree (event_id, id);

--
-- Name: handler_attempts_issue_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX handler_attempts_issue_idx ON ONLY payhooks.handler_attempts USING btree (issue_id, event_id) WHERE (issue_id IS NOT NULL);

--
-- Name: inbox_events_seq_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX inbox_events_seq_idx ON ONLY payhooks.inbox_events USING btree (seq);

--
-- Name: inbox_events_status_type_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX inbox_events_status_type_idx ON ONLY payhooks.inbox_events USING btree (status, event_type, seq);

--
-- Name: inbox_queue_account_due_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX inbox_queue_account_due_idx ON payhooks.inbox_queue USING btree (account, run_at, seq);

--
-- Name: inbox_queue_behind_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX inbox_queue_behind_idx ON payhooks.inbox_queue USING btree (resource_key, account, seq) WHERE (parked AND (owed IS NULL));

--
-- Name: inbox_queue_owing_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX inbox_queue_owing_idx ON payhooks.inbox_queue USING btree (resource_key, account, seq) WHERE (owed IS NOT NULL);

--
-- Name: inbox_queue_resource_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX inbox_queue_resource_idx ON payhooks.inbox_queue USING btree (resource_key, account, seq) WHERE (resource_key IS NOT NULL);

--
-- Name: issues_to_notify_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX issues_to_notify_idx ON payhooks.issues USING btree (opened_at) WHERE ((state = 'open'::text) AND (notified_at IS NULL));

--
-- Name: quarantine_held_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX quarantine_held_idx ON payhooks.quarantine USING btree (id) WHERE (state = 'held'::text);

--
-- Name: sweeper_runs_account_newest_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX sweeper_runs_account_newest_idx ON payhooks.sweeper_runs USING btree (account, finished_at DESC, id DESC);

--
-- Name: sweeper_runs_newest_idx; Type: INDEX; Schema: payhooks; Owner: -
--

CREATE INDEX sweeper_runs_newest_idx ON payhooks.sweeper_runs USING btree (finished_at DESC, id DESC);

--
-- Name: customers_email_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX customers_email_idx ON payhooks_mirror.customers USING btree (account, email);

--
-- Name: disputes_payment_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX disputes_payment_idx ON payhooks_mirror.disputes USING btree (account, payment_id);

--
-- Name: invoices_customer_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX invoices_customer_idx ON payhooks_mirror.invoices USING btree (account, customer_id);

--
-- Name: invoices_status_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX invoices_status_idx ON payhooks_mirror.invoices USING btree (account, status, due_date);

--
-- Name: payment_methods_customer_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX payment_methods_customer_idx ON payhooks_mirror.payment_methods USING btree (account, customer_id);

--
-- Name: payments_invoice_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX payments_invoice_idx ON payhooks_mirror.payments USING btree (account, invoice_id);

--
-- Name: payments_time_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX payments_time_idx ON payhooks_mirror.payments USING btree (account, payment_time);

--
-- Name: refunds_payment_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX refunds_payment_idx ON payhooks_mirror.refunds USING btree (account, payment_id);

--
-- Name: subscriptions_customer_idx; Type: INDEX; Schema: payhooks_mirror; Owner: -
--

CREATE INDEX subscriptions_customer_idx ON payhooks_mirror.subscriptions USING btree (account, customer_id);

--
-- Name: inbox_events inbox_events_enqueue; Type: TRIGGER; Schema: payhooks; Owner: -
--

CREATE TRIGGER inbox_events_enqueue AFTER INSERT ON payhooks.inbox_events REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION payhooks.enqueue_new_events();

--
-- Name: event_ledger event_ledger_account_fkey; Type: FK CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.event_ledger
    ADD CONSTRAINT event_ledger_account_fkey FOREIGN KEY (account) REFERENCES payhooks.accounts(id);

--
-- Name: inbox_events inbox_events_account_fkey; Type: FK CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE payhooks.inbox_events
    ADD CONSTRAINT inbox_events_account_fkey FOREIGN KEY (account) REFERENCES payhooks.accounts(id);

--
-- Name: quarantine quarantine_account_fkey; Type: FK CONSTRAINT; Schema: payhooks; Owner: -
--

ALTER TABLE ONLY payhooks.quarantine
    ADD CONSTRAINT quarantine_account_fkey FOREIGN KEY (account) REFERENCES payhooks.accounts(id);

--
-- Name: backfill_cursors backfill_cursors_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.backfill_cursors
    ADD CONSTRAINT backfill_cursors_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: customers customers_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.customers
    ADD CONSTRAINT customers_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: disputes disputes_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.disputes
    ADD CONSTRAINT disputes_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: invoice_items invoice_items_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.invoice_items
    ADD CONSTRAINT invoice_items_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: invoice_items invoice_items_invoice_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.invoice_items
    ADD CONSTRAINT invoice_items_invoice_fkey FOREIGN KEY (account, invoice_id) REFERENCES payhooks_mirror.invoices(account, id) ON DELETE CASCADE;

--
-- Name: invoices invoices_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.invoices
    ADD CONSTRAINT invoices_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: payment_methods payment_methods_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.payment_methods
    ADD CONSTRAINT payment_methods_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: payments payments_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.payments
    ADD CONSTRAINT payments_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: refunds refunds_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.refunds
    ADD CONSTRAINT refunds_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: subscriptions subscriptions_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.subscriptions
    ADD CONSTRAINT subscriptions_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: verify_cursors verify_cursors_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.verify_cursors
    ADD CONSTRAINT verify_cursors_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: verify_findings verify_findings_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.verify_findings
    ADD CONSTRAINT verify_findings_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- Name: verify_seen verify_seen_account_fkey; Type: FK CONSTRAINT; Schema: payhooks_mirror; Owner: -
--

ALTER TABLE ONLY payhooks_mirror.verify_seen
    ADD CONSTRAINT verify_seen_account_fkey FOREIGN KEY (account) REFERENCES payhooks_mirror.accounts(id);

--
-- PostgreSQL database dump complete
--
