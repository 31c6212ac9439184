-- The trace context each event arrived with (issue 28): the W3C traceparent of the span that received it (or, without
-- tracing, the one its delivery carried), so that every processing attempt, however much later, links to it.
-- Null: stored before this migration, or received without any trace context. A plain ADD COLUMN, which works on the
-- table as it is and on the time-partitioned one it becomes (migration 009).

ALTER TABLE inbox_events ADD COLUMN trace_parent text;
