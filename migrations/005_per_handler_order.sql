-- Sinks and handlers settle each event on their own (issue 22, findings 7 and 8).
--
-- Before, an event's handlers retried and died together: a sink that dead-lettered was sent the event again on
-- every retry of another sink, and the later events of a resource waited, every handler of them, until the
-- earliest one was finished. Now a handler that gives up is recorded as given up for that event and not run again,
-- and order holds per (resource, handler): a later event of a resource runs the handlers that no earlier event of
-- it still owes, and waits for the others.

-- outcome: 'done' (completed), or 'dead' (gave up: a DeadLetterError, or its attempts ran out; error says why).
-- Either way the handler does not run again for the event; replay removes the 'dead' marks.
ALTER TABLE handler_runs
  ADD COLUMN outcome text NOT NULL DEFAULT 'done' CHECK (outcome IN ('done', 'dead')),
  ADD COLUMN error text;

-- owed: the handlers a waiting event must still run before later events of its resource may run them; null (a new,
-- replayed or migrated event, or a failure outside any handler) holds back every handler of the later events.
-- parked: the event waits only for earlier events of its resource (nothing of its own to retry): its run_at follows
-- theirs, and the outcome of an earlier event that settles a handler makes it due at once.
ALTER TABLE inbox_queue
  ADD COLUMN owed text[],
  ADD COLUMN parked boolean NOT NULL DEFAULT false;

-- The events that owe something (waiting for a retry, or parked): few at any time. A claim looks here for what the
-- earlier events of its resource owe, and an outcome for the parked events behind it; for the usual event, with
-- nothing owed before or after it, both look at an index that is all but empty.
CREATE INDEX inbox_queue_owing_idx ON inbox_queue (resource_key, seq) WHERE owed IS NOT NULL;
