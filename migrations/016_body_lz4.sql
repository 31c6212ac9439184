-- Bodies compressed with lz4 instead of pglz, where the server has it (issue 27).
--
-- A delivery's body (about 2 KB of JSON) makes its history row pass the size at which PostgreSQL compresses a row, so
-- every stored event pays for compressing its body, in the receiver's store statement, and every claim for
-- decompressing it. pglz compresses slowly: storing 1,000 bench bodies cost 16 to 19 µs more per row with pglz than
-- with lz4, a third of PostgreSQL's CPU per stored delivery; reading them back, 1 µs more. lz4 keeps a little more
-- (889 bytes per 2,048-byte body against 838: 6% more for the bodies, less for the history as a whole).
--
-- The setting is the column's, on the partitioned table and on each partition it has: PostgreSQL 15 does not pass it
-- down to existing partitions, while partitions created later (src/store/history-partitions.ts) take the parent's.
-- Rows already stored keep the compression they were written with, and both are read the same way: nothing is
-- rewritten, and each ALTER only changes the catalog.
--
-- A server built without lz4 (PGlite among them) refuses the first ALTER with feature_not_supported; the block then
-- changes nothing, and bodies stay pglz.
DO $$
DECLARE
  partition regclass;
BEGIN
  ALTER TABLE inbox_events ALTER COLUMN raw_body SET COMPRESSION lz4;
  FOR partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'inbox_events'::regclass LOOP
    EXECUTE format('ALTER TABLE %s ALTER COLUMN raw_body SET COMPRESSION lz4', partition);
  END LOOP;
EXCEPTION
  WHEN feature_not_supported THEN NULL;
END
$$;
