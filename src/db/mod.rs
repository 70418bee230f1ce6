//! The tuning database: every kernel configuration tried, per GPU and problem, and the best one
//! of each pair, in one SQLite file.
//!
//! The API is synchronous: a [`Database`] owns a single-threaded tokio runtime and an sqlx pool
//! and blocks on each call, so the tuner and the runtime lookup need no async code. Before
//! anything is written to an existing file it is checked to be an nmtune database (SQLite
//! header, `PRAGMA application_id`, the `meta` table, the schema version); anything else is
//! refused and left untouched. Writes run in `BEGIN IMMEDIATE` transactions under WAL with a
//! 10 s busy timeout, so several processes may record into one file.

mod best;
mod error;
mod identity;
mod store;
mod types;

pub use best::{better, can_be_best};
pub use error::DbError;
pub use identity::{APPLICATION_ID, APPLICATION_NAME, SCHEMA_VERSION};
pub use types::{now_rfc3339, Measurement, ParseEnumError, Source, Status};

use crate::gpu::GpuProfile;
use crate::problem::Problem;
use error::{from_migrate, from_sqlx, io_error};
use identity::{identify, inspect_on_disk, Contents, OnDisk};
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection, Sqlite, Transaction};
use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema, embedded at build time from `migrations/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a writer waits for another one before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections per handle: reads run side by side under WAL, writes queue in SQLite.
const MAX_CONNECTIONS: u32 = 4;

/// An open tuning database.
pub struct Database {
    // Declared before `runtime`: the pool is closed on the runtime in `drop`.
    pool: SqlitePool,
    runtime: tokio::runtime::Runtime,
    path: PathBuf,
    read_only: bool,
}

impl Database {
    /// Open a tuning database for reading and writing, creating it (and its directory) when
    /// the path does not exist or is an empty file, and bringing its schema up to date.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let runtime = new_runtime(path)?;
        let pool = block_on(&runtime, open_read_write(path))?;
        Ok(Self {
            pool,
            runtime,
            path: path.to_path_buf(),
            read_only: false,
        })
    }

    /// Open an existing tuning database for reading only; nothing is created or changed.
    pub fn open_read_only(path: &Path) -> Result<Self, DbError> {
        let runtime = new_runtime(path)?;
        let pool = block_on(&runtime, open_read_only(path))?;
        Ok(Self {
            pool,
            runtime,
            path: path.to_path_buf(),
            read_only: true,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Store (or refresh) a GPU's profile.
    pub fn upsert_gpu(&self, profile: &GpuProfile) -> Result<(), DbError> {
        self.run(async {
            let mut tx = self.begin_write().await?;
            store::upsert_gpu(&mut tx, &self.path, profile).await?;
            self.commit(tx).await
        })
    }

    /// The profile stored for a GPU, `None` for an unknown GPU or one known only by name.
    pub fn gpu_profile(&self, name: &str) -> Result<Option<GpuProfile>, DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            store::gpu_profile(&mut conn, &self.path, name).await
        })
    }

    /// Record one measurement in one transaction: its GPU (by name) and problem are added when
    /// new, an earlier row with the same key (GPU, problem, kernel, template checksum, source)
    /// is replaced, and the best entry of the (GPU, problem) is updated by [`better`].
    pub fn record(&self, m: &Measurement) -> Result<(), DbError> {
        self.record_all(std::slice::from_ref(m))
    }

    /// Record a batch in one transaction: all of it lands or none.
    pub fn record_all(&self, ms: &[Measurement]) -> Result<(), DbError> {
        self.run(async {
            let mut tx = self.begin_write().await?;
            for m in ms {
                store::record(&mut tx, &self.path, m).await?;
            }
            self.commit(tx).await
        })
    }

    /// Mark the search of `problem` on `gpu` finished for these templates and source.
    pub fn mark_problem_done(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: &str,
        strategy: &str,
        source: Source,
    ) -> Result<(), DbError> {
        let completed_at = now_rfc3339();
        self.run(async {
            let mut tx = self.begin_write().await?;
            let key = (gpu, problem);
            let run = (checksum, strategy, source);
            store::mark_problem_done(&mut tx, &self.path, key, run, &completed_at).await?;
            self.commit(tx).await
        })
    }

    /// Whether [`Database::mark_problem_done`] was called for this key.
    pub fn is_problem_done(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: &str,
        source: Source,
    ) -> Result<bool, DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            store::is_problem_done(&mut conn, &self.path, (gpu, problem), (checksum, source)).await
        })
    }

    /// Names of the kernels already recorded (any status) for this key, so that a resumed
    /// search skips them.
    pub fn measured_kernels(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: &str,
        source: Source,
    ) -> Result<HashSet<String>, DbError> {
        let names = self.run(async {
            let mut conn = self.acquire().await?;
            store::measured_kernels(&mut conn, &self.path, (gpu, problem), (checksum, source)).await
        })?;
        Ok(names.into_iter().collect())
    }

    /// The best measurement of every (GPU, problem), or of one GPU's problems, ordered by GPU
    /// name, then m, n, k, N, M, L.
    pub fn best_entries(&self, gpu: Option<&str>) -> Result<Vec<Measurement>, DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            store::best_entries(&mut conn, &self.path, gpu).await
        })
    }

    /// The best measurement of one problem on one GPU, if any was good enough.
    pub fn best_for(&self, gpu: &str, problem: &Problem) -> Result<Option<Measurement>, DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            store::best_for(&mut conn, &self.path, gpu, problem).await
        })
    }

    /// Every measurement, or one GPU's, in the order of [`Database::best_entries`], then by
    /// kernel name.
    pub fn measurements(&self, gpu: Option<&str>) -> Result<Vec<Measurement>, DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            store::measurements(&mut conn, &self.path, gpu).await
        })
    }

    /// Names of the GPUs in the database, sorted.
    pub fn gpus(&self) -> Result<Vec<String>, DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            store::gpu_names(&mut conn, &self.path).await
        })
    }

    /// Run SQLite's `PRAGMA quick_check` over the whole file (slow on large files).
    pub fn check_integrity(&self) -> Result<(), DbError> {
        self.run(async {
            let mut conn = self.acquire().await?;
            let verdict: String = sqlx::query_scalar("PRAGMA quick_check")
                .fetch_one(&mut *conn)
                .await
                .map_err(|err| from_sqlx(&self.path, err))?;
            match verdict.as_str() {
                "ok" => Ok(()),
                _ => Err(error::corrupt(&self.path, verdict)),
            }
        })
    }

    fn run<T: Send>(
        &self,
        future: impl Future<Output = Result<T, DbError>> + Send,
    ) -> Result<T, DbError> {
        block_on(&self.runtime, future)
    }

    async fn acquire(&self) -> Result<PoolConnection<Sqlite>, DbError> {
        self.pool
            .acquire()
            .await
            .map_err(|err| from_sqlx(&self.path, err))
    }

    /// Start a write transaction. IMMEDIATE takes the write lock up front, so two writers
    /// queue on the busy timeout instead of one failing when it upgrades a read to a write.
    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>, DbError> {
        if self.read_only {
            return Err(DbError::ReadOnly {
                path: self.path.clone(),
            });
        }
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|err| from_sqlx(&self.path, err))
    }

    async fn commit(&self, tx: Transaction<'static, Sqlite>) -> Result<(), DbError> {
        tx.commit().await.map_err(|err| from_sqlx(&self.path, err))
    }
}

impl Drop for Database {
    /// Close every connection, so that the last one checkpoints the WAL into the file.
    fn drop(&mut self) {
        let pool = self.pool.clone();
        let _ = block_on(&self.runtime, async move {
            pool.close().await;
            Ok(())
        });
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

fn new_runtime(path: &Path) -> Result<tokio::runtime::Runtime, DbError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| io_error(path, format!("cannot start the database runtime: {err}")))
}

/// Drive `future` to completion on `runtime`. Called from inside another tokio runtime (where
/// blocking on a second one would panic), it runs on a scoped helper thread instead.
fn block_on<T: Send>(
    runtime: &tokio::runtime::Runtime,
    future: impl Future<Output = Result<T, DbError>> + Send,
) -> Result<T, DbError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return runtime.block_on(future);
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| runtime.block_on(future))
            .join()
            .unwrap_or_else(|_| {
                Err(DbError::Io {
                    path: PathBuf::new(),
                    detail: "database worker thread panicked".into(),
                })
            })
    })
}

fn base_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
}

async fn connect(path: &Path, options: SqliteConnectOptions) -> Result<SqlitePool, DbError> {
    SqlitePoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .min_connections(0)
        .connect_with(options)
        .await
        .map_err(|err| from_sqlx(path, err))
}

/// Check the file, then create or migrate it. Nothing is written before the checks pass.
async fn open_read_write(path: &Path) -> Result<SqlitePool, DbError> {
    match inspect_on_disk(path)? {
        OnDisk::Absent => create_parent_dir(path)?,
        OnDisk::Empty => {}
        OnDisk::Sqlite => check_existing_for_writing(path).await?,
    }
    let options = base_options(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // Safe from corruption under WAL; a power cut may lose the last few results only.
        .synchronous(SqliteSynchronous::Normal);
    let pool = connect(path, options).await?;
    if let Err(err) = migrate(&pool, path).await {
        pool.close().await;
        return Err(err);
    }
    Ok(pool)
}

/// Identify an existing SQLite file through a throwaway read-only connection.
async fn check_existing_for_writing(path: &Path) -> Result<(), DbError> {
    let mut conn = base_options(path)
        .read_only(true)
        .connect()
        .await
        .map_err(|err| from_sqlx(path, err))?;
    let contents = identify(&mut conn, path).await;
    let _ = conn.close().await;
    match contents? {
        Contents::Nmtune { schema_version } if schema_version > SCHEMA_VERSION => {
            Err(DbError::NewerSchema {
                path: path.to_path_buf(),
                found: schema_version,
                supported: SCHEMA_VERSION,
            })
        }
        _ => Ok(()),
    }
}

fn create_parent_dir(path: &Path) -> Result<(), DbError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|err| io_error(path, err))
        }
        _ => Ok(()),
    }
}

/// Apply pending migrations. If another process initialised the same new file at the same
/// moment, the first attempt fails on its tables; a second attempt then finds them applied.
async fn migrate(pool: &SqlitePool, path: &Path) -> Result<(), DbError> {
    let Err(first) = MIGRATOR.run(pool).await else {
        return Ok(());
    };
    MIGRATOR
        .run(pool)
        .await
        .map_err(|_| from_migrate(path, first))
}

async fn open_read_only(path: &Path) -> Result<SqlitePool, DbError> {
    let not_nmtune = || DbError::NotNmtune {
        path: path.to_path_buf(),
    };
    match inspect_on_disk(path)? {
        OnDisk::Absent => {
            return Err(DbError::Missing {
                path: path.to_path_buf(),
            })
        }
        OnDisk::Empty => return Err(not_nmtune()),
        OnDisk::Sqlite => {}
    }
    let pool = connect(path, base_options(path).read_only(true)).await?;
    let checked = check_readable(&pool, path).await;
    if checked.is_err() {
        pool.close().await;
    }
    checked.map(|_| pool)
}

/// A read-only handle can neither create nor migrate: the schema must be exactly this build's.
async fn check_readable(pool: &SqlitePool, path: &Path) -> Result<(), DbError> {
    let mut conn = pool.acquire().await.map_err(|err| from_sqlx(path, err))?;
    let (found, supported) = match identify(&mut conn, path).await? {
        Contents::Blank => {
            return Err(DbError::NotNmtune {
                path: path.to_path_buf(),
            })
        }
        Contents::Nmtune { schema_version } => (schema_version, SCHEMA_VERSION),
    };
    let path = path.to_path_buf();
    match found.cmp(&supported) {
        std::cmp::Ordering::Greater => Err(DbError::NewerSchema {
            path,
            found,
            supported,
        }),
        std::cmp::Ordering::Less => Err(DbError::OlderSchema {
            path,
            found,
            supported,
        }),
        std::cmp::Ordering::Equal => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_version_matches_the_last_migration() {
        let last = MIGRATOR.iter().map(|m| m.version).max();
        assert_eq!(last, Some(SCHEMA_VERSION));
    }
}
