-- The fair claim's probe of each account for due work reads the account's due index (issue 48's drain with 200
-- accounts, `npm run bench accounts`).
--
-- `active` asks each account of the ring whether it has a due event: a lateral `SELECT 1 … LIMIT 1` per account.
-- Planned at each call (LANGUAGE sql), under the queue's statistics as a drain left them, the planner answered it
-- with a walk of the primary key, filtering each row by account and due time until one matched: 0.06 to 0.16 ms per
-- account, 11 to 31 ms of every claim of 500 from 200 accounts (40 to 48 ms in all; auto_explain of a drain of
-- 30,000, every sampled claim that found work). A loop of claims over a static queue, its statistics taken at several
-- sizes or never, did not bring that plan about. Asked in the order of the due index (account, run_at), which no other
-- index gives and a sort may not (`enable_sort = off`), it is one descent of that index per account. Only the
-- lateral changes; the rest is 024's.

CREATE OR REPLACE FUNCTION claim_events_fair(claimant text, max_count integer, lease_seconds double precision, max_attempts integer, data_check text)
  RETURNS TABLE (event_id text, account text, event_type text, resource_key text, raw_body text, attempts integer,
                 received_at timestamptz, trace_parent text, data_checked boolean, seq bigint, buried boolean,
                 runs json, blocked text[], lease_token bigint)
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
