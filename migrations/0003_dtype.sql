-- nmtune tuning database, schema version 3: the element type of A, B' and C (f32, bf16, f16)
-- as part of the problem key, since a kernel is compiled for one type and each entry's
-- baseline is cuBLAS in the same type. Every problem recorded before is FP32.
--
-- SQLite cannot change a table's UNIQUE constraint in place, so `problems` is rebuilt with
-- the same ids. `migrate` (src/db/mod.rs) runs every migration with foreign keys off (a
-- DROP TABLE would otherwise delete the rows that reference it) and checks them after.
CREATE TABLE problems_v3 (
    id       INTEGER PRIMARY KEY,
    m        INTEGER NOT NULL CHECK (m > 0),
    n        INTEGER NOT NULL CHECK (n > 0),
    k        INTEGER NOT NULL CHECK (k > 0),
    nm_n     INTEGER NOT NULL CHECK (nm_n > 0),
    nm_m     INTEGER NOT NULL CHECK (nm_m >= nm_n),
    l        INTEGER NOT NULL CHECK (l > 0),
    -- Layout of the dense operand A ("row" = row-major).
    a_layout TEXT NOT NULL,
    -- Element type of A, B' and C; products accumulate in FP32.
    dtype    TEXT NOT NULL DEFAULT 'f32' CHECK (dtype IN ('f32', 'bf16', 'f16')),
    UNIQUE (m, n, k, nm_n, nm_m, l, a_layout, dtype)
);

INSERT INTO problems_v3 (id, m, n, k, nm_n, nm_m, l, a_layout, dtype)
    SELECT id, m, n, k, nm_n, nm_m, l, a_layout, 'f32' FROM problems;

DROP TABLE problems;

ALTER TABLE problems_v3 RENAME TO problems;

UPDATE meta SET value = '3' WHERE key = 'schema_version';
