-- nmtune tuning database, schema version 1.
--
-- One row per GPU model and per problem shape; every timed (or modelled) kernel configuration
-- is a measurement of one problem on one GPU; `best` points at the winning measurement of each
-- (GPU, problem) pair; `problem_runs` marks searches that finished, so that an interrupted
-- tuning run can resume where it stopped.
--
-- Every later migration must bump meta.schema_version, and src/db/identity.rs's SCHEMA_VERSION
-- with it: older builds refuse a database whose schema is newer than theirs.

-- "NMTU" in ASCII (0x4E4D5455): lets nmtune tell its own files from other SQLite files
-- without reading any table.
PRAGMA application_id = 1313690709;

-- Identity and version of the file, as key/value pairs.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

INSERT INTO meta (key, value) VALUES ('application', 'nmtune'), ('schema_version', '1');

-- A GPU model. Rows created while recording a measurement for an unknown GPU carry only the
-- name; `upsert_gpu` fills in the rest from its profile.
CREATE TABLE gpus (
    id                 INTEGER PRIMARY KEY,
    -- Short name used on the command line: "h100", "a100", ...
    name               TEXT NOT NULL UNIQUE,
    -- Name the driver reports, for humans.
    full_name          TEXT,
    -- "major.minor", e.g. "9.0".
    compute_capability TEXT,
    sm_count           INTEGER CHECK (sm_count IS NULL OR sm_count > 0),
    -- The whole GpuProfile as JSON, so that a report can rebuild the roofline later.
    profile_json       TEXT
);

-- One N:M SpMM problem: C (m x n) = A (m x k) times B (k x n) pruned N:M along k, vectors of
-- L columns. The key of every lookup.
CREATE TABLE problems (
    id       INTEGER PRIMARY KEY,
    m        INTEGER NOT NULL CHECK (m > 0),
    n        INTEGER NOT NULL CHECK (n > 0),
    k        INTEGER NOT NULL CHECK (k > 0),
    nm_n     INTEGER NOT NULL CHECK (nm_n > 0),
    nm_m     INTEGER NOT NULL CHECK (nm_m >= nm_n),
    l        INTEGER NOT NULL CHECK (l > 0),
    -- Layout of the dense operand A ("row" = row-major).
    a_layout TEXT NOT NULL,
    UNIQUE (m, n, k, nm_n, nm_m, l, a_layout)
);

-- One kernel configuration tried on one problem on one GPU.
CREATE TABLE measurements (
    id                INTEGER PRIMARY KEY,
    gpu_id            INTEGER NOT NULL REFERENCES gpus (id),
    problem_id        INTEGER NOT NULL REFERENCES problems (id),
    -- KernelConfig::name(); spells the whole configuration.
    kernel_name       TEXT NOT NULL,
    -- The KernelConfig as JSON (the authoritative copy; the name is for humans and lookups).
    config_json       TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN
                          ('ok', 'compile_failed', 'launch_failed', 'wrong_result', 'abandoned', 'rejected')),
    -- Why a configuration failed, one line; NULL when it worked.
    error             TEXT,
    -- Kernel time in microseconds: median and minimum of `runs` timed launches
    -- (for source = 'model', the predicted time).
    median_us         REAL,
    min_us            REAL,
    runs              INTEGER NOT NULL CHECK (runs >= 0),
    -- 1 when the output matched the CPU reference.
    verified          INTEGER NOT NULL CHECK (verified IN (0, 1)),
    max_rel_error     REAL,
    -- cuBLAS SGEMM on the same shape, same process: the baseline.
    cublas_us         REAL,
    registers         INTEGER,
    spill_bytes       INTEGER,
    -- Hash of the kernel templates that produced the code: a template change invalidates
    -- earlier timings.
    template_checksum TEXT NOT NULL,
    -- 'measured' on a GPU, 'model' predicted without one, 'replay' imported from a log.
    source            TEXT NOT NULL CHECK (source IN ('measured', 'model', 'replay')),
    tool_version      TEXT NOT NULL,
    -- RFC 3339, UTC.
    created_at        TEXT NOT NULL,
    -- Recording the same key again replaces the row, so a resumed run never duplicates.
    UNIQUE (gpu_id, problem_id, kernel_name, template_checksum, source)
);

-- The best configuration per (GPU, problem); see src/db/best.rs for the rule.
CREATE TABLE best (
    gpu_id         INTEGER NOT NULL REFERENCES gpus (id),
    problem_id     INTEGER NOT NULL REFERENCES problems (id),
    measurement_id INTEGER NOT NULL REFERENCES measurements (id) ON DELETE CASCADE,
    PRIMARY KEY (gpu_id, problem_id)
);

-- A problem whose search finished, for resuming an interrupted tuning run.
CREATE TABLE problem_runs (
    gpu_id            INTEGER NOT NULL REFERENCES gpus (id),
    problem_id        INTEGER NOT NULL REFERENCES problems (id),
    template_checksum TEXT NOT NULL,
    -- Search strategy that ran ("exhaustive", "model-pruned", ...).
    strategy          TEXT NOT NULL,
    source            TEXT NOT NULL CHECK (source IN ('measured', 'model', 'replay')),
    -- RFC 3339, UTC.
    completed_at      TEXT NOT NULL,
    PRIMARY KEY (gpu_id, problem_id, template_checksum, source)
);
