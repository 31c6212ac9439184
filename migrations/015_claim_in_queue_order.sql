-- The claim becomes a function, so that the planner must read the queue in its order (issue 27).
--
-- The claim takes the first due events in (run_at, seq) order whose resource lets them run, up to its limit. Read in
-- the order of inbox_queue_due_idx, it stops once it has them: a claim of 1,000 probes the resource index about 1,000
-- times however long the queue. But the planner picks its plan from the queue's statistics, and those are taken when
-- a vacuum or analyze happens to run: after a drain, say, with a few hundred rows left, in pages the queue keeps. When
-- the next burst arrives the planner still counts a few hundred due rows, fewer than the claim asks for, so reading
-- them all and sorting looks cheaper; it then reads the whole queue, probing the resource index for every row, on every
-- claim until the next analyze (a claim of 1,000 from a queue of 20,000: 80,000 buffers and 50 ms instead of 5,000 and
-- 15). No statistics can be right for a queue whose size swings by orders of magnitude between two analyzes, so the
-- plan is fixed here instead: with sequential and bitmap scans and sorts disabled inside this function, the ordered
-- index scan is the only way left to find the due events, whatever the statistics say. Every other part of the claim
-- finds its rows by key through an index anyway (the events handed out are sorted by seq regardless: there is no other
-- way to do it). A setting of a function applies only while it runs.
--
-- The whole claim is the function's one statement, not only the choice of due events: a function that locks rows is
-- VOLATILE and reads with a snapshot of its own, so a claim that chose its events in a function but read their owed
-- and settled handlers outside it would read those as of an earlier moment (an event whose earlier one had just been
-- set to wait for a retry could then run the handler the earlier one still owes, out of order).
--
-- The statement is the one src/store/claim.ts ran until now (claimEvents calls this), with the same comments.

CREATE FUNCTION claim_events(claimant text, max_count integer, lease_seconds double precision, max_attempts integer, data_check text)
  RETURNS TABLE (event_id text, event_type text, resource_key text, raw_body text, attempts integer,
                 received_at timestamptz, trace_parent text, data_checked boolean, seq bigint, buried boolean,
                 runs json, blocked text[])
  LANGUAGE sql VOLATILE
  SET search_path FROM CURRENT
  SET enable_seqscan = off
  SET enable_bitmapscan = off
  SET enable_sort = off
AS $$
  WITH due AS (
    SELECT q.event_id, (q.lease_owner IS NOT NULL AND q.attempts >= max_attempts) AS buried
      FROM inbox_queue q
     WHERE q.run_at <= now()
       AND (q.resource_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM inbox_queue other
              WHERE other.resource_key = q.resource_key
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
           attempts = q.attempts + 1,
           parked = false,
           run_at = now() + make_interval(secs => lease_seconds)
     -- The ids as an index condition, not a join with the CTE: the planner guesses the CTE's size from the queue's
     -- statistics, and statistics taken while the queue was empty made it rescan the CTE for each row (a claim of
     -- 1,000 took 160 ms instead of 20).
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE NOT d.buried))
    RETURNING q.event_id, q.attempts, q.seq, q.resource_key, q.received_at, q.run_at
  ),
  -- The due, never-run events queued behind each leased one: they could not run before it finishes, and left due every
  -- claim would walk them again (a backlog of one resource cost each claim a probe per waiting event). Parked until
  -- the lease runs out; the leased event's outcome makes the next one due at once (outcomes.ts). A row another
  -- statement holds is left. Only when the claim found fewer events than it asked for, the sign that what is due ran
  -- out or waits behind others: a full claim (a drain in bulk) spends no probe of the resource index per event on it.
  behind AS (
    SELECT f.event_id
      FROM leased l
      CROSS JOIN LATERAL (
        SELECT f.event_id FROM inbox_queue f
         WHERE f.resource_key = l.resource_key AND f.seq > l.seq AND f.lease_owner IS NULL AND f.owed IS NULL
           AND f.run_at <= now()
           FOR UPDATE SKIP LOCKED) f
     WHERE (SELECT count(*) FROM due) < max_count
  ),
  set_aside AS (
    -- Until the end of the leases just taken (the same for the whole claim).
    UPDATE inbox_queue f
       SET parked = true, run_at = now() + make_interval(secs => lease_seconds)
     WHERE f.event_id = ANY (ARRAY(SELECT b.event_id FROM behind b))
  ),
  unqueued AS (
    DELETE FROM inbox_queue q
     WHERE q.event_id = ANY (ARRAY(SELECT d.event_id FROM due d WHERE d.buried))
    RETURNING q.event_id, q.attempts, q.received_at
  ),
  buried AS (
    UPDATE inbox_events e
       SET status = 'dead',
           attempts = u.attempts,
           processed_at = now(),
           last_error = 'Its last allowed attempt never recorded an outcome: the process running it died (or lost its lease) after '
                        || u.attempts || ' claims of ' || max_attempts || ' allowed. Replay it once the handler is fixed.'
      FROM unqueued u
     WHERE e.event_id = u.event_id AND e.received_at = u.received_at
    RETURNING e.event_id, e.event_type, e.attempts, e.seq
  )
  SELECT e.event_id, e.event_type, e.resource_key, e.raw_body, l.attempts, e.received_at, e.trace_parent,
         e.data_valid_under = data_check, l.seq, false,
         -- Null for most events, which no handler has settled yet: one probe of the primary key.
         (SELECT json_agg(json_build_array(r.handler, r.outcome, r.error)) FROM handler_runs r
           WHERE r.event_id = e.event_id AND r.received_at = e.received_at),
         -- Earlier queued events of the key are all waiting (the claim's condition): what they owe waits for them.
         CASE WHEN l.resource_key IS NOT NULL THEN
           ARRAY(SELECT DISTINCT h FROM inbox_queue o CROSS JOIN unnest(o.owed) h
                  WHERE o.resource_key = l.resource_key AND o.seq < l.seq AND o.owed IS NOT NULL) END
    -- By the whole key, receipt time included: one partition's index is probed, not each partition's.
    FROM leased l JOIN inbox_events e ON e.event_id = l.event_id AND e.received_at = l.received_at
  UNION ALL
  SELECT b.event_id, b.event_type, NULL, NULL, b.attempts, NULL, NULL, NULL, b.seq, true, NULL, NULL FROM buried b
  -- RETURNING follows no particular order: events are handed out in the order received.
  ORDER BY 9
$$;
