//! The tuning database: every kernel configuration tried, per GPU and problem, and the best one
//! of each pair, in one SQLite file.
//!
//! The API is synchronous: a [`Database`] owns a single-threaded tokio runtime and one sqlx
//! connection and blocks on each call, so the tuner and the runtime lookup need no async code. Before
//! anything is written to an existing file, and before anything is read from one, it is checked
//! to be an intact nmtune database (SQLite header, `PRAGMA application_id`, the `meta` table,
//! the schema version, `PRAGMA integrity_check`); anything else is refused and left untouched. Writes run in `BEGIN IMMEDIATE` transactions under WAL with a
//! 10 s busy timeout, so several processes may record into one file.

mod best;
mod error;
mod identity;
mod store;
mod types;

pub use best::{
    best_per_problem, better, can_be_best, compare, is_current, is_current_against, serving_bests,
    trust,
};
pub use error::DbError;
pub use identity::{APPLICATION_ID, APPLICATION_NAME, OLDEST_READABLE_SCHEMA, SCHEMA_VERSION};
pub use store::Tidied;
pub use types::{now_rfc3339, Measurement, ParseEnumError, Source, Status, MAX_TIME_US};

use crate::gpu_profile::GpuProfile;
use crate::problem::Problem;
use error::{from_migrate, from_sqlx, io_error, is_busy};
use identity::{has_hot_journal, identify, inspect_on_disk, wal_path, Contents, OnDisk};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, Sqlite, SqliteConnection, Transaction};
use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The schema, embedded at build time from `migrations/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a writer waits for another one before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// An open tuning database.
///
/// One SQLite connection per handle, behind a mutex: calls from several threads queue, and
/// closing is deterministic (an sqlx pool returns connections in background tasks, and its
/// `close` can finish with one still open, leaving the data in the `-wal` file instead of the
/// database file). Open one handle per thread for parallel reads.
pub struct Database {
    /// `None` only while dropping.
    conn: Mutex<Option<SqliteConnection>>,
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
    path: PathBuf,
    read_only: bool,
    /// The file's schema: [`SCHEMA_VERSION`] once a read-write handle has migrated it; a
    /// read-only handle reads an older one as it is, down to [`OLDEST_READABLE_SCHEMA`].
    schema_version: i64,
}

impl Database {
    /// Open a tuning database for reading and writing, creating it (and its directory) when
    /// the path does not exist or is an empty file, and bringing its schema up to date.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let runtime = new_runtime(path)?;
        let conn = block_on(&runtime, open_read_write(path))?;
        Ok(Self::new(path, runtime, (conn, SCHEMA_VERSION), false))
    }

    /// Open an existing tuning database for reading only; nothing is created or changed. A
    /// file of an older schema (down to [`OLDEST_READABLE_SCHEMA`]) is read as it is: what it
    /// lacks reads as absent (`Measurement::copy_gbps` is `None`).
    pub fn open_read_only(path: &Path) -> Result<Self, DbError> {
        let runtime = new_runtime(path)?;
        let opened = block_on(&runtime, open_read_only(path))?;
        Ok(Self::new(path, runtime, opened, true))
    }

    fn new(
        path: &Path,
        runtime: tokio::runtime::Runtime,
        (conn, schema_version): (SqliteConnection, i64),
        read_only: bool,
    ) -> Self {
        Self {
            conn: Mutex::new(Some(conn)),
            runtime: Some(runtime),
            path: path.to_path_buf(),
            read_only,
            schema_version,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The schema version of the file as this handle reads it.
    pub fn schema_version(&self) -> i64 {
        self.schema_version
    }

    /// Store (or refresh) a GPU's profile.
    pub fn upsert_gpu(&self, profile: &GpuProfile) -> Result<(), DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(async {
            let mut tx = self.begin_write(conn).await?;
            store::upsert_gpu(&mut tx, &self.path, profile).await?;
            self.commit(tx).await
        })
    }

    /// The profile stored for a GPU, `None` for an unknown GPU or one known only by name.
    pub fn gpu_profile(&self, name: &str) -> Result<Option<GpuProfile>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::gpu_profile(conn, &self.path, name))
    }

    /// Record one measurement in one transaction: its GPU (by name) and problem are added when
    /// new, an earlier row with the same key (GPU, problem, kernel, template checksum, source)
    /// is replaced, and the best entry of the (GPU, problem) is updated by [`better`].
    pub fn record(&self, m: &Measurement) -> Result<(), DbError> {
        self.record_all(std::slice::from_ref(m))
    }

    /// Record a batch in one transaction: all of it lands or none.
    pub fn record_all(&self, ms: &[Measurement]) -> Result<(), DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(async {
            let mut tx = self.begin_write(conn).await?;
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
        self.record_and_mark_done(&[], (gpu, problem), checksum, strategy, source)
    }

    /// Record the measurements of a problem and mark its search finished, in one transaction:
    /// a reader, or a run resumed after a crash, sees both or neither.
    pub fn record_and_mark_done(
        &self,
        ms: &[Measurement],
        (gpu, problem): (&str, &Problem),
        checksum: &str,
        strategy: &str,
        source: Source,
    ) -> Result<(), DbError> {
        let completed_at = now_rfc3339();
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(async {
            let mut tx = self.begin_write(conn).await?;
            for m in ms {
                store::record(&mut tx, &self.path, m).await?;
            }
            let run = (checksum, strategy, source);
            store::mark_problem_done(&mut tx, &self.path, (gpu, problem), run, &completed_at)
                .await?;
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
        Ok(self.done_at(gpu, problem, checksum, source)?.is_some())
    }

    /// When [`Database::mark_problem_done`] was last called for this key (RFC 3339, UTC).
    pub fn done_at(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: &str,
        source: Source,
    ) -> Result<Option<String>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::done_at(
            conn,
            &self.path,
            self.schema_version,
            (gpu, problem),
            (checksum, source),
        ))
    }

    /// The rows already recorded (any status) for this key: a resumed search skips their
    /// kernels and starts from their best time.
    pub fn recorded(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: &str,
        source: Source,
    ) -> Result<Vec<Measurement>, DbError> {
        self.recorded_of(gpu, problem, Some(checksum), source)
    }

    /// The rows recorded (any status) of `problem` on `gpu` from `source`, whatever their
    /// template checksum.
    pub fn recorded_any_checksum(
        &self,
        gpu: &str,
        problem: &Problem,
        source: Source,
    ) -> Result<Vec<Measurement>, DbError> {
        self.recorded_of(gpu, problem, None, source)
    }

    /// The rows recorded for this key, of one template checksum or (`None`) of every one.
    fn recorded_of(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: Option<&str>,
        source: Source,
    ) -> Result<Vec<Measurement>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::recorded(
            conn,
            &self.path,
            self.schema_version,
            (gpu, problem),
            (checksum, source),
        ))
    }

    /// Names of the kernels already recorded (any status) for this key.
    pub fn measured_kernels(
        &self,
        gpu: &str,
        problem: &Problem,
        checksum: &str,
        source: Source,
    ) -> Result<HashSet<String>, DbError> {
        let rows = self.recorded(gpu, problem, checksum, source)?;
        Ok(rows.iter().map(Measurement::kernel_name).collect())
    }

    /// The best measurement of every (GPU, problem), or of one GPU's problems, ordered by GPU
    /// name, then m, n, k, N, M, L.
    pub fn best_entries(&self, gpu: Option<&str>) -> Result<Vec<Measurement>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::best_entries(
            conn,
            &self.path,
            self.schema_version,
            gpu,
        ))
    }

    /// [`Database::best_entries`] as this build serves them ([`serving_bests`]): where a stored
    /// best times code this build no longer generates, the problem's best current timing
    /// instead, if the database holds one. What the runtime launches and `nmtune report`
    /// shows.
    pub fn serving_entries(&self, gpu: Option<&str>) -> Result<Vec<Measurement>, DbError> {
        let stored = self.best_entries(gpu)?;
        if stored.iter().all(is_current) {
            return Ok(stored);
        }
        Ok(serving_bests(stored, self.measurements(gpu)?))
    }

    /// The best measurement of one problem on one GPU, if any was good enough.
    pub fn best_for(&self, gpu: &str, problem: &Problem) -> Result<Option<Measurement>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::best_for(
            conn,
            &self.path,
            self.schema_version,
            (gpu, problem),
        ))
    }

    /// Every measurement, or one GPU's, in the order of [`Database::best_entries`], then by
    /// kernel name.
    pub fn measurements(&self, gpu: Option<&str>) -> Result<Vec<Measurement>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::measurements(
            conn,
            &self.path,
            self.schema_version,
            gpu,
        ))
    }

    /// Names of the GPUs in the database, sorted.
    pub fn gpus(&self) -> Result<Vec<String>, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(store::gpu_names(conn, &self.path))
    }

    /// Drop the measured rows that a later completed tuning of the same problem superseded
    /// ([`store::drop_superseded`] says which), in one transaction, then compact the file.
    pub fn drop_superseded(&self) -> Result<Tidied, DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(async {
            let mut tx = self.begin_write(conn).await?;
            let tidied = store::drop_superseded(&mut tx, &self.path).await?;
            self.commit(tx).await?;
            // VACUUM cannot run inside a transaction; it rewrites the file without the free pages.
            sqlx::query("VACUUM")
                .execute(&mut *conn)
                .await
                .map_err(|err| from_sqlx(&self.path, err))?;
            Ok(tidied)
        })
    }

    /// Run SQLite's `PRAGMA integrity_check` over the whole file again (every open runs it
    /// once).
    pub fn check_integrity(&self) -> Result<(), DbError> {
        let mut guard = self.lock();
        let conn = self.connection(&mut guard)?;
        self.run(check_integrity(conn, &self.path))
    }

    /// The connection's lock. A panic in another thread while holding it cannot leave a
    /// transaction open (sqlx rolls back a dropped one), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Option<SqliteConnection>> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn connection<'g>(
        &self,
        guard: &'g mut Option<SqliteConnection>,
    ) -> Result<&'g mut SqliteConnection, DbError> {
        guard.as_mut().ok_or_else(|| self.closed())
    }

    fn closed(&self) -> DbError {
        io_error(&self.path, "the database handle is closed")
    }

    fn run<T: Send>(
        &self,
        future: impl Future<Output = Result<T, DbError>> + Send,
    ) -> Result<T, DbError> {
        match &self.runtime {
            Some(runtime) => block_on(runtime, future),
            None => Err(self.closed()),
        }
    }

    /// Start a write transaction. IMMEDIATE takes the write lock up front, so two writers
    /// queue on the busy timeout instead of one failing when it upgrades a read to a write.
    async fn begin_write<'c>(
        &self,
        conn: &'c mut SqliteConnection,
    ) -> Result<Transaction<'c, Sqlite>, DbError> {
        if self.read_only {
            return Err(DbError::ReadOnly {
                path: self.path.clone(),
            });
        }
        conn.begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|err| from_sqlx(&self.path, err))
    }

    async fn commit(&self, tx: Transaction<'_, Sqlite>) -> Result<(), DbError> {
        tx.commit().await.map_err(|err| from_sqlx(&self.path, err))
    }
}

impl Drop for Database {
    /// Close the connection and wait for it, so that SQLite checkpoints the write-ahead log
    /// into the database file before the handle is gone.
    fn drop(&mut self) {
        let conn = self
            .conn
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        if let Some(conn) = conn {
            let path = self.path.clone();
            let _ = block_on(&runtime, async move {
                conn.close().await.map_err(|err| from_sqlx(&path, err))
            });
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // Dropping a runtime inside another one panics; this variant does not block.
            runtime.shutdown_background();
        }
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
        // A statement waiting on a lock or a loaded machine is not news to the user, and sqlx's
        // warning would print SQL text on the command's stderr.
        .log_slow_statements(log::LevelFilter::Off, Duration::from_secs(1))
}

/// Open a connection. SQLite answers "database is locked" at once, without its busy handler,
/// when this connection's setup pragmas (WAL mode) meet another process creating or switching
/// the same file; that state lasts milliseconds, so retry it for as long as the busy timeout.
async fn connect(path: &Path, options: SqliteConnectOptions) -> Result<SqliteConnection, DbError> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        match options.connect().await {
            Ok(conn) => return Ok(conn),
            Err(err) if is_busy(&err) && started.elapsed() < BUSY_TIMEOUT => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Err(err) => return Err(from_sqlx(path, err)),
        }
    }
}

/// Check the file, then create or migrate it. Nothing is written before the checks pass.
async fn open_read_write(path: &Path) -> Result<SqliteConnection, DbError> {
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
    let mut conn = connect(path, options).await?;
    if let Err(err) = migrate(&mut conn, path).await {
        let _ = conn.close().await;
        return Err(err);
    }
    Ok(conn)
}

/// Identify an existing SQLite file, and check that it is intact, through a throwaway
/// connection that only reads (where a killed writer left a hot journal, SQLite rolls the
/// interrupted transaction back first). It may write, so that as the last connection to close
/// it removes the -wal and -shm files it made: a refused file is left as it was found.
async fn check_existing_for_writing(path: &Path) -> Result<(), DbError> {
    let probe = base_options(path);
    let mut conn = connect(path, probe).await?;
    let contents = match identify(&mut conn, path).await {
        Ok(Contents::Nmtune { schema_version }) => check_integrity(&mut conn, path)
            .await
            .map(|()| Contents::Nmtune { schema_version }),
        other => other,
    };
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

/// Apply pending migrations with foreign keys off, then check the keys (about 30 ms on a
/// committed database).
async fn migrate(conn: &mut SqliteConnection, path: &Path) -> Result<(), DbError> {
    // A migration that rebuilds a table (SQLite cannot change a UNIQUE constraint in place)
    // drops the old one; with foreign keys on, that would delete the rows referencing it.
    // The pragma is a no-op inside a transaction, so it is set around the migrator's, and the
    // keys are checked once they are back on.
    set_foreign_keys(conn, path, false).await?;
    let migrated = run_migrations(conn, path).await;
    set_foreign_keys(conn, path, true).await?;
    migrated?;
    let violations = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    if !violations.is_empty() {
        return Err(error::corrupt(
            path,
            format!("{} rows reference missing rows", violations.len()),
        ));
    }
    Ok(())
}

async fn set_foreign_keys(
    conn: &mut SqliteConnection,
    path: &Path,
    on: bool,
) -> Result<(), DbError> {
    let pragma = if on {
        "PRAGMA foreign_keys = ON"
    } else {
        "PRAGMA foreign_keys = OFF"
    };
    sqlx::query(pragma)
        .execute(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    Ok(())
}

/// Connections that initialise the same new file at the same moment race through the
/// migrations: an attempt fails where another connection committed the same migration first
/// ("table meta already exists"), and the next attempt starts after it. Every failure is
/// another connection's progress, so one attempt per migration, plus one, ends the race; an
/// error that persists that long is reported as first seen. (`run_direct` is `run` without
/// the `Acquire` indirection, whose lifetimes defeat the compiler's proof that this future is
/// `Send`.)
async fn run_migrations(conn: &mut SqliteConnection, path: &Path) -> Result<(), DbError> {
    let Err(first) = MIGRATOR.run_direct(conn).await else {
        return Ok(());
    };
    for _ in 0..MIGRATOR.migrations.len() {
        if MIGRATOR.run_direct(conn).await.is_ok() {
            return Ok(());
        }
    }
    Err(from_migrate(path, first))
}

/// A connection that only reads, and the schema version of the file it reads.
async fn open_read_only(path: &Path) -> Result<(SqliteConnection, i64), DbError> {
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
    // Read through a connection that could write but never does (the handle refuses every
    // write): as the last connection to close, it removes the -wal and -shm files SQLite
    // creates beside a WAL database for its readers, which a read-only connection cannot, so
    // reading a committed database leaves nothing beside it. Not with a hot journal beside the
    // file (such a connection would roll the interrupted transaction back: a write), nor where
    // the file or its folder cannot be written (then the read-only ways below).
    if !has_hot_journal(path) {
        match connect_readable(path, base_options(path)).await {
            Err(DbError::ReadOnly { .. } | DbError::Io { .. }) => {}
            other => return other,
        }
    }
    let options = base_options(path).read_only(true);
    match connect_readable(path, options.clone()).await {
        // SQLite reads a WAL-mode file through its -shm index, which it cannot create in a
        // read-only location. With no -wal file beside it, no write is pending and the file
        // can be read whole as immutable (https://www.sqlite.org/wal.html, "Read-Only
        // Databases"): a tuning database installed read-only stays readable. Never with a hot
        // journal beside it: the file then holds half a transaction.
        Err(DbError::ReadOnly { .. } | DbError::Io { .. })
            if !wal_path(path).exists() && !has_hot_journal(path) =>
        {
            connect_readable(path, options.immutable(true)).await
        }
        other => other,
    }
}

async fn connect_readable(
    path: &Path,
    options: SqliteConnectOptions,
) -> Result<(SqliteConnection, i64), DbError> {
    let mut conn = connect(path, options).await?;
    match check_readable(&mut conn, path).await {
        Ok(schema_version) => Ok((conn, schema_version)),
        Err(err) => {
            let _ = conn.close().await;
            Err(err)
        }
    }
}

/// SQLite's `PRAGMA integrity_check`, stopped at the first fault: a damaged file (a page
/// overwritten, an index that disagrees with its table) is an error before anything is read
/// from it or written to it. A few milliseconds for a tuning database of a few megabytes.
async fn check_integrity(conn: &mut SqliteConnection, path: &Path) -> Result<(), DbError> {
    let verdict: String = sqlx::query_scalar("PRAGMA integrity_check(1)")
        .fetch_one(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    match verdict.as_str() {
        "ok" => Ok(()),
        _ => Err(error::corrupt(
            path,
            format!("SQLite's integrity check says: {verdict}"),
        )),
    }
}

/// A read-only handle can neither create nor migrate: the schema must be one this build reads
/// as it is (from [`OLDEST_READABLE_SCHEMA`] to this build's), and the file intact. Returns the
/// file's schema version, which the queries follow.
async fn check_readable(conn: &mut SqliteConnection, path: &Path) -> Result<i64, DbError> {
    let found = match identify(conn, path).await? {
        Contents::Blank => {
            return Err(DbError::NotNmtune {
                path: path.to_path_buf(),
            })
        }
        Contents::Nmtune { schema_version } => schema_version,
    };
    if found > SCHEMA_VERSION {
        return Err(DbError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < OLDEST_READABLE_SCHEMA {
        return Err(DbError::OlderSchema {
            path: path.to_path_buf(),
            found,
            supported: OLDEST_READABLE_SCHEMA,
        });
    }
    check_integrity(conn, path).await?;
    Ok(found)
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
