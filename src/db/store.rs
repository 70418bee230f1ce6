//! The SQL: every statement the database layer runs, on one connection (usually a transaction).
//! Queries are checked at run time (`sqlx::query` with binds), so building needs no database.

use super::best::{better, can_be_best, pick_best};
use super::error::{corrupt, from_sqlx, DbError};
use super::identity::SCHEMA_VERSION;
use super::types::{Measurement, Source, Status};
use crate::codegen::KernelConfig;
use crate::gpu_profile::GpuProfile;
use crate::problem::{ALayout, Dtype, NmPattern, Problem};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Row, Sqlite, SqliteConnection};
use std::path::Path;

type Query<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

/// The first schema whose measurements hold `copy_gbps` (migrations/0002_copy_bandwidth.sql).
const COPY_GBPS_SINCE_SCHEMA: i64 = 2;

/// The first schema whose problems hold the element type (migrations/0003_dtype.sql).
const DTYPE_SINCE_SCHEMA: i64 = 3;

/// The first schema whose measurements hold their kernel family's checksum
/// (migrations/0004_kernel_checksum.sql).
const KERNEL_CHECKSUM_SINCE_SCHEMA: i64 = 4;

/// The element type of a problem of the `p` alias in a file of `schema_version`: every problem
/// of an older file is FP32.
fn dtype_column(schema_version: i64) -> &'static str {
    if schema_version >= DTYPE_SINCE_SCHEMA {
        "p.dtype"
    } else {
        "'f32'"
    }
}

/// Columns of a measurement row joined with its GPU and problem, in the order `decode` reads,
/// from a file of `schema_version`: an older file, read as it is by a read-only handle, has
/// no copy bandwidth and no kernel checksum, which read as NULL, and only FP32 problems.
fn measurement_select(schema_version: i64) -> String {
    let copy_gbps = if schema_version >= COPY_GBPS_SINCE_SCHEMA {
        "ms.copy_gbps"
    } else {
        "NULL AS copy_gbps"
    };
    let kernel_checksum = if schema_version >= KERNEL_CHECKSUM_SINCE_SCHEMA {
        "ms.kernel_checksum"
    } else {
        "NULL AS kernel_checksum"
    };
    let dtype = dtype_column(schema_version);
    format!(
        "SELECT ms.id, g.name AS gpu, p.m, p.n, p.k, p.nm_n, p.nm_m, p.l, \
         p.a_layout, {dtype} AS dtype, ms.config_json, ms.status, ms.error, ms.median_us, ms.min_us, ms.runs, \
         ms.verified, ms.max_rel_error, ms.cublas_us, {copy_gbps}, ms.registers, \
         ms.spill_bytes, ms.template_checksum, {kernel_checksum}, ms.source, ms.tool_version, \
         ms.created_at \
         FROM measurements ms \
         JOIN gpus g ON g.id = ms.gpu_id \
         JOIN problems p ON p.id = ms.problem_id"
    )
}

/// Report order: GPU, then the problem key.
/// (`dtype`: the column of [`measurement_select`].)
const PROBLEM_ORDER: &str = "g.name, p.m, p.n, p.k, p.nm_n, p.nm_m, p.l, p.a_layout, dtype";

/// A problem as SQLite integers.
struct ProblemKey {
    m: i64,
    n: i64,
    k: i64,
    nm_n: i64,
    nm_m: i64,
    l: i64,
    a_layout: &'static str,
    dtype: &'static str,
    /// The file's element-type column ([`dtype_column`]).
    dtype_column: &'static str,
}

impl ProblemKey {
    /// The key of `problem` in a file of `schema_version` (a problem of another type than
    /// FP32 matches nothing in a file older than the type).
    fn new(problem: &Problem, path: &Path, schema_version: i64) -> Result<Self, DbError> {
        let int = |value: usize| {
            i64::try_from(value).map_err(|_| DbError::Sqlx {
                path: path.to_path_buf(),
                detail: format!(
                    "problem {problem}: dimension {value} does not fit in an SQLite integer"
                ),
            })
        };
        Ok(Self {
            m: int(problem.m)?,
            n: int(problem.n)?,
            k: int(problem.k)?,
            nm_n: problem.nm.n.into(),
            nm_m: problem.nm.m.into(),
            l: int(problem.l)?,
            a_layout: problem.a_layout.as_str(),
            dtype: problem.dtype.as_str(),
            dtype_column: dtype_column(schema_version),
        })
    }

    /// Matches this problem in the `p` alias; bind with [`bind_problem`].
    fn matching(&self) -> String {
        format!(
            "p.m = ? AND p.n = ? AND p.k = ? AND p.nm_n = ? AND p.nm_m = ? AND p.l = ? \
             AND p.a_layout = ? AND {} = ?",
            self.dtype_column
        )
    }
}

fn bind_problem<'q>(query: Query<'q>, key: &ProblemKey) -> Query<'q> {
    query
        .bind(key.m)
        .bind(key.n)
        .bind(key.k)
        .bind(key.nm_n)
        .bind(key.nm_m)
        .bind(key.l)
        .bind(key.a_layout)
        .bind(key.dtype)
}

/// The id of a GPU by name, inserting a row with only the name when it is new.
async fn ensure_gpu(conn: &mut SqliteConnection, path: &Path, name: &str) -> Result<i64, DbError> {
    sqlx::query("INSERT INTO gpus (name) VALUES (?) ON CONFLICT (name) DO NOTHING")
        .bind(name)
        .execute(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    let row = sqlx::query("SELECT id FROM gpus WHERE name = ?")
        .bind(name)
        .fetch_one(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    row.try_get(0).map_err(|err| from_sqlx(path, err))
}

/// The id of a problem, inserting it when it is new.
async fn ensure_problem(
    conn: &mut SqliteConnection,
    path: &Path,
    problem: &Problem,
) -> Result<i64, DbError> {
    // Written through a read-write handle: the file has the current schema.
    let key = ProblemKey::new(problem, path, SCHEMA_VERSION)?;
    let insert = sqlx::query(
        "INSERT INTO problems (m, n, k, nm_n, nm_m, l, a_layout, dtype) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (m, n, k, nm_n, nm_m, l, a_layout, dtype) DO NOTHING",
    );
    bind_problem(insert, &key)
        .execute(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    let select = format!("SELECT id FROM problems p WHERE {}", key.matching());
    let row = bind_problem(sqlx::query(&select), &key)
        .fetch_one(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    row.try_get(0).map_err(|err| from_sqlx(path, err))
}

/// Insert or refresh a GPU's row from its profile.
pub(crate) async fn upsert_gpu(
    conn: &mut SqliteConnection,
    path: &Path,
    profile: &GpuProfile,
) -> Result<(), DbError> {
    let profile_json = serde_json::to_string(profile).map_err(|err| DbError::Sqlx {
        path: path.to_path_buf(),
        detail: format!("cannot encode the profile of {}: {err}", profile.name),
    })?;
    let (major, minor) = profile.compute_capability;
    sqlx::query(
        "INSERT INTO gpus (name, full_name, compute_capability, sm_count, profile_json) \
         VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (name) DO UPDATE SET full_name = excluded.full_name, \
         compute_capability = excluded.compute_capability, sm_count = excluded.sm_count, \
         profile_json = excluded.profile_json",
    )
    .bind(&profile.name)
    .bind(&profile.full_name)
    .bind(format!("{major}.{minor}"))
    .bind(i64::from(profile.sm_count))
    .bind(profile_json)
    .execute(&mut *conn)
    .await
    .map_err(|err| from_sqlx(path, err))?;
    Ok(())
}

/// The stored profile of a GPU, if one was recorded with [`upsert_gpu`].
pub(crate) async fn gpu_profile(
    conn: &mut SqliteConnection,
    path: &Path,
    name: &str,
) -> Result<Option<GpuProfile>, DbError> {
    let row = sqlx::query("SELECT profile_json FROM gpus WHERE name = ?")
        .bind(name)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    let Some(row) = row else { return Ok(None) };
    let json: Option<String> = row.try_get(0).map_err(|err| from_sqlx(path, err))?;
    json.map(|text| {
        serde_json::from_str(&text)
            .map_err(|err| corrupt(path, format!("profile of GPU {name}: {err}")))
    })
    .transpose()
}

/// Store one measurement (replacing an earlier one with the same key) and update the best
/// entry of its (GPU, problem).
pub(crate) async fn record(
    conn: &mut SqliteConnection,
    path: &Path,
    m: &Measurement,
) -> Result<(), DbError> {
    if let Some(detail) = m.impossible() {
        return Err(DbError::Impossible {
            path: path.to_path_buf(),
            kernel: m.kernel_name(),
            problem: m.problem.to_string(),
            detail,
        });
    }
    let gpu_id = ensure_gpu(conn, path, &m.gpu).await?;
    let problem_id = ensure_problem(conn, path, &m.problem).await?;
    let id = upsert_measurement(conn, path, gpu_id, problem_id, m).await?;
    update_best(conn, path, (gpu_id, problem_id), id, m).await
}

async fn upsert_measurement(
    conn: &mut SqliteConnection,
    path: &Path,
    gpu_id: i64,
    problem_id: i64,
    m: &Measurement,
) -> Result<i64, DbError> {
    let config_json = serde_json::to_string(&m.config).map_err(|err| DbError::Sqlx {
        path: path.to_path_buf(),
        detail: format!("cannot encode configuration {}: {err}", m.config),
    })?;
    let row = sqlx::query(
        "INSERT INTO measurements (gpu_id, problem_id, kernel_name, config_json, status, error, \
         median_us, min_us, runs, verified, max_rel_error, cublas_us, copy_gbps, registers, \
         spill_bytes, template_checksum, kernel_checksum, source, tool_version, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (gpu_id, problem_id, kernel_name, template_checksum, source) DO UPDATE SET \
         config_json = excluded.config_json, status = excluded.status, error = excluded.error, \
         median_us = excluded.median_us, min_us = excluded.min_us, runs = excluded.runs, \
         verified = excluded.verified, max_rel_error = excluded.max_rel_error, \
         cublas_us = excluded.cublas_us, copy_gbps = excluded.copy_gbps, \
         registers = excluded.registers, \
         spill_bytes = excluded.spill_bytes, kernel_checksum = excluded.kernel_checksum, \
         tool_version = excluded.tool_version, \
         created_at = excluded.created_at \
         RETURNING id",
    )
    .bind(gpu_id)
    .bind(problem_id)
    .bind(m.kernel_name())
    .bind(config_json)
    .bind(m.status.as_str())
    .bind(m.error.as_deref())
    .bind(m.median_us)
    .bind(m.min_us)
    .bind(i64::from(m.runs))
    .bind(m.verified)
    .bind(m.max_rel_error)
    .bind(m.cublas_us)
    .bind(m.copy_gbps)
    .bind(m.registers.map(i64::from))
    .bind(m.spill_bytes.map(i64::from))
    .bind(&m.template_checksum)
    .bind(m.kernel_checksum.as_deref())
    .bind(m.source.as_str())
    .bind(&m.tool_version)
    .bind(&m.created_at)
    .fetch_one(&mut *conn)
    .await
    .map_err(|err| from_sqlx(path, err))?;
    row.try_get(0).map_err(|err| from_sqlx(path, err))
}

/// Let the measurement just stored (row `id`) challenge the current best. When it replaced the
/// best row itself, its new values may be worse, so the best is chosen again from all rows.
async fn update_best(
    conn: &mut SqliteConnection,
    path: &Path,
    (gpu_id, problem_id): (i64, i64),
    id: i64,
    m: &Measurement,
) -> Result<(), DbError> {
    let incumbent = best_row(conn, path, gpu_id, problem_id).await?;
    let new_best = match incumbent {
        Some((incumbent_id, _)) if incumbent_id == id => {
            let all = rows_of_problem(conn, path, gpu_id, problem_id).await?;
            pick_best(all)
        }
        Some((_, incumbent)) if better(m, &incumbent) => Some(id),
        Some(_) => return Ok(()),
        None if can_be_best(m) => Some(id),
        None => return Ok(()),
    };
    set_best(conn, path, (gpu_id, problem_id), new_best).await
}

async fn set_best(
    conn: &mut SqliteConnection,
    path: &Path,
    (gpu_id, problem_id): (i64, i64),
    measurement_id: Option<i64>,
) -> Result<(), DbError> {
    let query = match measurement_id {
        Some(id) => sqlx::query(
            "INSERT INTO best (gpu_id, problem_id, measurement_id) VALUES (?, ?, ?) \
             ON CONFLICT (gpu_id, problem_id) DO UPDATE SET measurement_id = excluded.measurement_id",
        )
        .bind(gpu_id)
        .bind(problem_id)
        .bind(id),
        None => sqlx::query("DELETE FROM best WHERE gpu_id = ? AND problem_id = ?")
            .bind(gpu_id)
            .bind(problem_id),
    };
    query
        .execute(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    Ok(())
}

async fn best_row(
    conn: &mut SqliteConnection,
    path: &Path,
    gpu_id: i64,
    problem_id: i64,
) -> Result<Option<(i64, Measurement)>, DbError> {
    // The write path: a read-write handle has brought the file to this build's schema.
    let sql = format!(
        "{} JOIN best b ON b.measurement_id = ms.id WHERE b.gpu_id = ? AND b.problem_id = ?",
        measurement_select(SCHEMA_VERSION)
    );
    let row = sqlx::query(&sql)
        .bind(gpu_id)
        .bind(problem_id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    row.map(|row| decode(&row, path)).transpose()
}

/// Every measurement of one (GPU, problem), in the order they were recorded.
async fn rows_of_problem(
    conn: &mut SqliteConnection,
    path: &Path,
    gpu_id: i64,
    problem_id: i64,
) -> Result<Vec<(i64, Measurement)>, DbError> {
    let sql = format!(
        "{} WHERE ms.gpu_id = ? AND ms.problem_id = ? ORDER BY ms.created_at, ms.id",
        measurement_select(SCHEMA_VERSION)
    );
    let rows = sqlx::query(&sql)
        .bind(gpu_id)
        .bind(problem_id)
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    rows.iter().map(|row| decode(row, path)).collect()
}

/// Mark the search of one problem finished (again: a later run refreshes the row).
pub(crate) async fn mark_problem_done(
    conn: &mut SqliteConnection,
    path: &Path,
    (gpu, problem): (&str, &Problem),
    (checksum, strategy, source): (&str, &str, Source),
    completed_at: &str,
) -> Result<(), DbError> {
    let gpu_id = ensure_gpu(conn, path, gpu).await?;
    let problem_id = ensure_problem(conn, path, problem).await?;
    sqlx::query(
        "INSERT INTO problem_runs (gpu_id, problem_id, template_checksum, strategy, source, completed_at) \
         VALUES (?, ?, ?, ?, ?, ?) \
         ON CONFLICT (gpu_id, problem_id, template_checksum, source) DO UPDATE SET \
         strategy = excluded.strategy, completed_at = excluded.completed_at",
    )
    .bind(gpu_id)
    .bind(problem_id)
    .bind(checksum)
    .bind(strategy)
    .bind(source.as_str())
    .bind(completed_at)
    .execute(&mut *conn)
    .await
    .map_err(|err| from_sqlx(path, err))?;
    Ok(())
}

/// When the search of one problem was last marked finished for these templates and source
/// (RFC 3339, UTC), if it ever was.
pub(crate) async fn done_at(
    conn: &mut SqliteConnection,
    path: &Path,
    schema_version: i64,
    (gpu, problem): (&str, &Problem),
    (checksum, source): (&str, Source),
) -> Result<Option<String>, DbError> {
    let key = ProblemKey::new(problem, path, schema_version)?;
    let sql = format!(
        "SELECT r.completed_at FROM problem_runs r \
         JOIN gpus g ON g.id = r.gpu_id JOIN problems p ON p.id = r.problem_id \
         WHERE {} AND g.name = ? AND r.template_checksum = ? AND r.source = ?",
        key.matching()
    );
    let row = bind_problem(sqlx::query(&sql), &key)
        .bind(gpu)
        .bind(checksum)
        .bind(source.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    row.map(|row| row.try_get(0).map_err(|err| from_sqlx(path, err)))
        .transpose()
}

/// The rows already recorded (with any status) for one problem, templates and source.
pub(crate) async fn recorded(
    conn: &mut SqliteConnection,
    path: &Path,
    schema_version: i64,
    (gpu, problem): (&str, &Problem),
    (checksum, source): (Option<&str>, Source),
) -> Result<Vec<Measurement>, DbError> {
    let key = ProblemKey::new(problem, path, schema_version)?;
    // `None`: rows of every template checksum.
    let of_checksum = if checksum.is_some() {
        " AND ms.template_checksum = ?"
    } else {
        ""
    };
    let sql = format!(
        "{} WHERE {} AND g.name = ?{of_checksum} AND ms.source = ?",
        measurement_select(schema_version),
        key.matching()
    );
    let mut query = bind_problem(sqlx::query(&sql), &key).bind(gpu);
    if let Some(checksum) = checksum {
        query = query.bind(checksum);
    }
    let rows = query
        .bind(source.as_str())
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    rows.iter()
        .map(|row| decode(row, path).map(|(_, m)| m))
        .collect()
}

/// Best entries, all GPUs or one, in report order, from a file of `schema_version`.
pub(crate) async fn best_entries(
    conn: &mut SqliteConnection,
    path: &Path,
    schema_version: i64,
    gpu: Option<&str>,
) -> Result<Vec<Measurement>, DbError> {
    let sql = format!(
        "{} JOIN best b ON b.measurement_id = ms.id \
         WHERE (? IS NULL OR g.name = ?) ORDER BY {PROBLEM_ORDER}",
        measurement_select(schema_version)
    );
    fetch_measurements(conn, path, sqlx::query(&sql).bind(gpu).bind(gpu)).await
}

/// The best entry of one problem on one GPU: what the runtime launches.
pub(crate) async fn best_for(
    conn: &mut SqliteConnection,
    path: &Path,
    schema_version: i64,
    (gpu, problem): (&str, &Problem),
) -> Result<Option<Measurement>, DbError> {
    let key = ProblemKey::new(problem, path, schema_version)?;
    let sql = format!(
        "{} JOIN best b ON b.measurement_id = ms.id WHERE {} AND g.name = ?",
        measurement_select(schema_version),
        key.matching()
    );
    let found =
        fetch_measurements(conn, path, bind_problem(sqlx::query(&sql), &key).bind(gpu)).await?;
    Ok(found.into_iter().next())
}

/// Every measurement, all GPUs or one, in report order, then by kernel, from a file of
/// `schema_version`.
pub(crate) async fn measurements(
    conn: &mut SqliteConnection,
    path: &Path,
    schema_version: i64,
    gpu: Option<&str>,
) -> Result<Vec<Measurement>, DbError> {
    let sql = format!(
        "{} WHERE (? IS NULL OR g.name = ?) \
         ORDER BY {PROBLEM_ORDER}, ms.kernel_name, ms.source, ms.template_checksum, ms.id",
        measurement_select(schema_version)
    );
    fetch_measurements(conn, path, sqlx::query(&sql).bind(gpu).bind(gpu)).await
}

pub(crate) async fn gpu_names(
    conn: &mut SqliteConnection,
    path: &Path,
) -> Result<Vec<String>, DbError> {
    let rows = sqlx::query("SELECT name FROM gpus ORDER BY name")
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    rows.iter()
        .map(|row| row.try_get(0).map_err(|err| from_sqlx(path, err)))
        .collect()
}

async fn fetch_measurements(
    conn: &mut SqliteConnection,
    path: &Path,
    query: Query<'_>,
) -> Result<Vec<Measurement>, DbError> {
    let rows = query
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    rows.iter()
        .map(|row| decode(row, path).map(|(_, m)| m))
        .collect()
}

/// One row of [`measurement_select`] back into its id and [`Measurement`].
fn decode(row: &SqliteRow, path: &Path) -> Result<(i64, Measurement), DbError> {
    let cell = Cells { row, path };
    let id: i64 = cell.get("id")?;
    let problem = Problem {
        m: cell.size("m")?,
        n: cell.size("n")?,
        k: cell.size("k")?,
        nm: NmPattern {
            n: cell.small("nm_n")?,
            m: cell.small("nm_m")?,
        },
        l: cell.size("l")?,
        a_layout: cell.parsed("a_layout", ALayout::parse)?,
        dtype: cell.parsed("dtype", Dtype::parse)?,
    };
    let config_json: String = cell.get("config_json")?;
    let config: KernelConfig = serde_json::from_str(&config_json)
        .map_err(|err| corrupt(path, format!("measurement {id}: configuration: {err}")))?;
    let measurement = Measurement {
        gpu: cell.get("gpu")?,
        problem,
        config,
        status: cell.parsed("status", |s| s.parse::<Status>().ok())?,
        error: cell.get("error")?,
        median_us: cell.get("median_us")?,
        min_us: cell.get("min_us")?,
        runs: cell.small("runs")?,
        verified: cell.get("verified")?,
        max_rel_error: cell.get("max_rel_error")?,
        cublas_us: cell.get("cublas_us")?,
        copy_gbps: cell.get("copy_gbps")?,
        registers: cell.optional_small("registers")?,
        spill_bytes: cell.optional_small("spill_bytes")?,
        template_checksum: cell.get("template_checksum")?,
        kernel_checksum: cell.get("kernel_checksum")?,
        source: cell.parsed("source", |s| s.parse::<Source>().ok())?,
        tool_version: cell.get("tool_version")?,
        created_at: cell.get("created_at")?,
    };
    Ok((id, measurement))
}

/// Typed access to the columns of one row; a value of the wrong type or range means the file
/// was altered behind nmtune's back.
struct Cells<'r> {
    row: &'r SqliteRow,
    path: &'r Path,
}

impl Cells<'_> {
    fn get<T>(&self, column: &str) -> Result<T, DbError>
    where
        T: for<'v> sqlx::Decode<'v, Sqlite> + sqlx::Type<Sqlite>,
    {
        self.row
            .try_get(column)
            .map_err(|err| corrupt(self.path, format!("column {column}: {err}")))
    }

    fn out_of_range(&self, column: &str, value: i64) -> DbError {
        corrupt(
            self.path,
            format!("column {column}: value {value} out of range"),
        )
    }

    fn size(&self, column: &str) -> Result<usize, DbError> {
        let value: i64 = self.get(column)?;
        usize::try_from(value).map_err(|_| self.out_of_range(column, value))
    }

    fn small(&self, column: &str) -> Result<u32, DbError> {
        let value: i64 = self.get(column)?;
        u32::try_from(value).map_err(|_| self.out_of_range(column, value))
    }

    fn optional_small(&self, column: &str) -> Result<Option<u32>, DbError> {
        let value: Option<i64> = self.get(column)?;
        value
            .map(|v| u32::try_from(v).map_err(|_| self.out_of_range(column, v)))
            .transpose()
    }

    fn parsed<T>(&self, column: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, DbError> {
        let text: String = self.get(column)?;
        parse(&text).ok_or_else(|| {
            corrupt(
                self.path,
                format!("column {column}: unknown value '{text}'"),
            )
        })
    }
}

/// What [`drop_superseded`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tidied {
    /// Measured rows dropped.
    pub rows_dropped: u64,
    /// (GPU, problem) pairs that lost rows.
    pub problems_tidied: u64,
    /// (GPU, problem) pairs left as they were: rows of a tuning that stopped midway.
    pub problems_midway: u64,
}

/// Per (GPU, problem) with a completed measured run, drop the measured rows and run marks of
/// every other template checksum than its latest completed run's: what tuning into an empty
/// file would have written. A problem with measured rows of a checksum whose run never
/// completed (a tuning stopped midway) is left as it is, so that resuming it loses nothing,
/// unless every such row is older than the latest completed run: that tuning was given up
/// and another finished after it. Each tidied problem's best entry is picked again from the
/// rows that stay.
pub(crate) async fn drop_superseded(
    conn: &mut SqliteConnection,
    path: &Path,
) -> Result<Tidied, DbError> {
    let runs: Vec<(i64, i64, String, String)> = sqlx::query_as(
        "SELECT gpu_id, problem_id, template_checksum, completed_at FROM problem_runs \
         WHERE source = 'measured'",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|err| from_sqlx(path, err))?;
    let mut latest: std::collections::BTreeMap<(i64, i64), (String, String)> = Default::default();
    for (gpu_id, problem_id, checksum, completed_at) in runs {
        let entry = latest
            .entry((gpu_id, problem_id))
            .or_insert_with(|| (checksum.clone(), completed_at.clone()));
        if completed_at > entry.1 {
            *entry = (checksum, completed_at);
        }
    }
    let unfinished: Vec<(i64, i64, String)> = sqlx::query_as(
        "SELECT ms.gpu_id, ms.problem_id, ms.created_at FROM measurements ms \
         WHERE ms.source = 'measured' AND NOT EXISTS (SELECT 1 FROM problem_runs r \
         WHERE r.gpu_id = ms.gpu_id AND r.problem_id = ms.problem_id \
         AND r.template_checksum = ms.template_checksum AND r.source = 'measured')",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|err| from_sqlx(path, err))?;
    let time = |text: &str| chrono::DateTime::parse_from_rfc3339(text).ok();
    let mut midway: std::collections::BTreeSet<(i64, i64)> = Default::default();
    for (gpu_id, problem_id, created_at) in unfinished {
        // An unreadable date keeps the rows: they may be a tuning to resume.
        let given_up = match (latest.get(&(gpu_id, problem_id)), time(&created_at)) {
            (Some((_, done_at)), Some(created)) => time(done_at).is_some_and(|done| created < done),
            _ => false,
        };
        if !given_up {
            midway.insert((gpu_id, problem_id));
        }
    }
    let mut tidied = Tidied {
        problems_midway: midway.len() as u64,
        ..Tidied::default()
    };
    for (key, (checksum, _)) in latest {
        if midway.contains(&key) {
            continue;
        }
        let dropped = delete_other_checksums(conn, path, "measurements", key, &checksum).await?;
        delete_other_checksums(conn, path, "problem_runs", key, &checksum).await?;
        if dropped > 0 {
            let rows = rows_of_problem(conn, path, key.0, key.1).await?;
            set_best(conn, path, key, pick_best(rows)).await?;
            tidied.rows_dropped += dropped;
            tidied.problems_tidied += 1;
        }
    }
    Ok(tidied)
}

/// Delete a problem's measured rows of `table` whose template checksum is not `checksum`;
/// returns how many went.
async fn delete_other_checksums(
    conn: &mut SqliteConnection,
    path: &Path,
    table: &str,
    (gpu_id, problem_id): (i64, i64),
    checksum: &str,
) -> Result<u64, DbError> {
    let sql = format!(
        "DELETE FROM {table} WHERE gpu_id = ? AND problem_id = ? \
         AND source = 'measured' AND template_checksum <> ?"
    );
    let done = sqlx::query(&sql)
        .bind(gpu_id)
        .bind(problem_id)
        .bind(checksum)
        .execute(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    Ok(done.rows_affected())
}
