-- The receiver's mark on a body whose data it found certainly valid (issue 27): the fingerprint of the schemas it
-- checked against (src/events/parse-event.ts, dataCheckFingerprint). A worker of a build with the same fingerprint
-- hands such an event to its handlers without parsing the body first (its data is read when a handler first reads
-- it); any other value, or null (stored before this migration, by other means, or not certainly valid), and the worker
-- parses and checks the body in full before any handler runs, as before. A plain ADD COLUMN, on the partitioned table.

ALTER TABLE inbox_events ADD COLUMN data_valid_under text;
