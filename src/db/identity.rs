//! Telling an nmtune tuning database from any other file, before anything is written to it.
//!
//! Two layers: the 100-byte SQLite header is read with plain file I/O (magic, truncation), then
//! a read-only connection checks `PRAGMA application_id` and the `meta` table. Only a missing
//! file, an empty one, or an SQLite file without any table is treated as new.

use super::error::{corrupt, from_sqlx, io_error, sqlite_code, DbError};
use sqlx::{Row, SqliteConnection};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Schema version this build writes and understands: the number of the last migration.
/// Every migration that changes the schema bumps it, in `meta` as well.
pub const SCHEMA_VERSION: i64 = 4;

/// The oldest schema a read-only handle reads as it is, without upgrading the file (a command
/// that only reads must never change a database, such as a committed one). Version 1 lacks
/// `measurements.copy_gbps`, which reads as NULL; versions 1 and 2 lack `problems.dtype`:
/// all their problems are FP32; versions 1 to 3 lack `measurements.kernel_checksum` (NULL).
pub const OLDEST_READABLE_SCHEMA: i64 = 1;

/// `PRAGMA application_id` of every nmtune database: "NMTU" in ASCII.
pub const APPLICATION_ID: i64 = 0x4E4D_5455;

/// `meta.application` of every nmtune database.
pub const APPLICATION_NAME: &str = "nmtune";

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
const HEADER_LEN: usize = 100;
/// SQLite's generic error code, returned for "no such table/column".
const SQLITE_ERROR: i64 = 1;
/// The bookkeeping table sqlx's migrator creates before the first migration runs.
const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

/// What the file system says about a path, before SQLite looks at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnDisk {
    Absent,
    /// Zero bytes: SQLite treats it as a new database.
    Empty,
    /// Starts with a plausible, untruncated SQLite header.
    Sqlite,
}

/// What SQLite says about an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contents {
    /// No tables yet (possibly the migrator's own bookkeeping): safe to initialise.
    Blank,
    Nmtune {
        schema_version: i64,
    },
}

/// Check a path with plain file I/O: does it exist, is it empty, does it look like an intact
/// SQLite file.
pub(crate) fn inspect_on_disk(path: &Path) -> Result<OnDisk, DbError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(OnDisk::Absent),
        Err(err) => return Err(io_error(path, err)),
    };
    if meta.is_dir() {
        return Err(io_error(path, "is a directory, not a database file"));
    }
    if meta.len() == 0 {
        return Ok(OnDisk::Empty);
    }
    let header = read_header(path)?;
    if header.len() < SQLITE_MAGIC.len() || &header[..SQLITE_MAGIC.len()] != SQLITE_MAGIC {
        return Err(DbError::NotNmtune {
            path: path.to_path_buf(),
        });
    }
    if header.len() < HEADER_LEN {
        return Err(corrupt(path, "file is truncated inside the SQLite header"));
    }
    check_not_truncated(path, &header, meta.len())?;
    Ok(OnDisk::Sqlite)
}

fn read_header(path: &Path) -> Result<Vec<u8>, DbError> {
    let file = std::fs::File::open(path).map_err(|err| io_error(path, err))?;
    let mut header = Vec::with_capacity(HEADER_LEN);
    file.take(HEADER_LEN as u64)
        .read_to_end(&mut header)
        .map_err(|err| io_error(path, err))?;
    Ok(header)
}

/// Compare the page count the header records with the file's length. SQLite would otherwise
/// notice a cut-off file only when a query reaches a missing page. The recorded count is
/// trustworthy only when the header says so (change counter = version-valid-for) and no
/// write-ahead log holds newer pages.
fn check_not_truncated(path: &Path, header: &[u8], file_len: u64) -> Result<(), DbError> {
    let be32 = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536u64,
        size if size >= 512 && size.is_power_of_two() => size as u64,
        size => {
            return Err(corrupt(
                path,
                format!("invalid page size {size} in the SQLite header"),
            ))
        }
    };
    let (change_counter, page_count, valid_for) = (be32(24), be32(28), be32(92));
    if page_count == 0
        || change_counter != valid_for
        || wal_has_frames(path)
        || has_hot_journal(path)
    {
        return Ok(());
    }
    let expected = page_count as u64 * page_size;
    if file_len < expected {
        return Err(corrupt(
            path,
            format!(
                "file is truncated: its header records {page_count} pages of {page_size} bytes \
                 ({expected} bytes) but the file holds {file_len}"
            ),
        ));
    }
    Ok(())
}

/// The write-ahead log beside a database: `<path>-wal`.
pub(crate) fn wal_path(path: &Path) -> PathBuf {
    sibling(path, "-wal")
}

/// A rollback journal left beside a database by a writer killed inside a transaction (before
/// the switch to WAL mode, or in a rollback-journal file): SQLite rolls it back on the next
/// open that may write, and a read-only connection cannot.
pub(crate) fn has_hot_journal(path: &Path) -> bool {
    std::fs::metadata(sibling(path, "-journal")).is_ok_and(|meta| meta.len() > 0)
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

fn wal_has_frames(path: &Path) -> bool {
    std::fs::metadata(wal_path(path)).is_ok_and(|meta| meta.len() > 0)
}

/// Identify an existing SQLite file through a read-only connection.
pub(crate) async fn identify(
    conn: &mut SqliteConnection,
    path: &Path,
) -> Result<Contents, DbError> {
    let not_nmtune = || DbError::NotNmtune {
        path: path.to_path_buf(),
    };
    let application_id: i64 = sqlx::query_scalar("PRAGMA application_id")
        .fetch_one(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    if application_id != APPLICATION_ID {
        let tables = user_tables(conn, path).await?;
        let blank = application_id == 0 && tables.iter().all(|t| t == MIGRATIONS_TABLE);
        return if blank {
            Ok(Contents::Blank)
        } else {
            Err(not_nmtune())
        };
    }
    let application = meta_value(conn, path, "application").await?;
    if application.as_deref() != Some(APPLICATION_NAME) {
        return Err(not_nmtune());
    }
    let version_text = meta_value(conn, path, "schema_version")
        .await?
        .ok_or_else(|| corrupt(path, "meta table has no schema_version"))?;
    let schema_version = version_text.trim().parse().map_err(|_| {
        corrupt(
            path,
            format!("schema_version '{version_text}' is not an integer"),
        )
    })?;
    Ok(Contents::Nmtune { schema_version })
}

async fn user_tables(conn: &mut SqliteConnection, path: &Path) -> Result<Vec<String>, DbError> {
    let rows = sqlx::query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| from_sqlx(path, err))?;
    rows.iter()
        .map(|row| {
            row.try_get::<String, _>(0)
                .map_err(|err| from_sqlx(path, err))
        })
        .collect()
}

/// A value of the `meta` table; a file whose `meta` table is missing or shaped differently
/// belongs to another program.
async fn meta_value(
    conn: &mut SqliteConnection,
    path: &Path,
    key: &str,
) -> Result<Option<String>, DbError> {
    let result =
        sqlx::query_scalar::<_, String>("SELECT CAST(value AS TEXT) FROM meta WHERE key = ?")
            .bind(key)
            .fetch_optional(&mut *conn)
            .await;
    match result {
        Ok(value) => Ok(value),
        Err(err) if sqlite_code(&err) == Some(SQLITE_ERROR) => Err(DbError::NotNmtune {
            path: path.to_path_buf(),
        }),
        Err(err) => Err(from_sqlx(path, err)),
    }
}
