-- nmtune tuning database, schema version 2: the device's copy bandwidth beside every measurement.
--
-- copy_gbps is the GB/s of a large device-to-device copy (bytes read plus bytes written over the
-- median time), timed once by the tuning process that measured the row, before its first
-- problem: the reference against which the report reads the row's achieved bandwidth. It is
-- kept per measurement rather than per GPU so that a database filled by several runs (resumed,
-- re-tuned, replayed) keeps, for each row, the figure of the run that measured it. NULL where
-- no copy was timed: model predictions, and every row recorded before this schema.
ALTER TABLE measurements ADD COLUMN copy_gbps REAL CHECK (copy_gbps IS NULL OR copy_gbps > 0);

UPDATE meta SET value = '2' WHERE key = 'schema_version';
