//! Errors of the database layer, each one line and naming the file.

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a tuning database could not be opened, read or written.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DbError {
    #[error("{} is not an nmtune tuning database", path.display())]
    NotNmtune { path: PathBuf },
    #[error(
        "{} has schema version {found}, newer than the {supported} this nmtune supports; upgrade nmtune",
        path.display()
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error(
        "{} has schema version {found}, older than {supported}; open it once read-write to upgrade it",
        path.display()
    )]
    OlderSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("{} is damaged: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("{}: {detail}", path.display())]
    Io { path: PathBuf, detail: String },
    #[error("{}: database error: {detail}", path.display())]
    Sqlx { path: PathBuf, detail: String },
    #[error("{} cannot be written (read-only file, directory or connection)", path.display())]
    ReadOnly { path: PathBuf },
    #[error("{} does not exist", path.display())]
    Missing { path: PathBuf },
    #[error("{}: refusing to record {kernel} for {problem}: {detail}", path.display())]
    Impossible {
        path: PathBuf,
        kernel: String,
        problem: String,
        detail: String,
    },
}

/// SQLite primary result codes this layer tells apart (the low byte of an extended code).
const SQLITE_CORRUPT: i64 = 11;
const SQLITE_NOTADB: i64 = 26;
const SQLITE_READONLY: i64 = 8;
const SQLITE_CANTOPEN: i64 = 14;
const SQLITE_IOERR: i64 = 10;
const SQLITE_FULL: i64 = 13;
const SQLITE_BUSY: i64 = 5;

/// Collapse a message onto one line so every error prints as one.
pub(crate) fn one_line(text: impl std::fmt::Display) -> String {
    text.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn io_error(path: &Path, err: impl std::fmt::Display) -> DbError {
    DbError::Io {
        path: path.to_path_buf(),
        detail: one_line(err),
    }
}

pub(crate) fn corrupt(path: &Path, detail: impl std::fmt::Display) -> DbError {
    DbError::Corrupt {
        path: path.to_path_buf(),
        detail: one_line(detail),
    }
}

/// SQLite's primary result code of a database error, if it is one.
pub(crate) fn sqlite_code(err: &sqlx::Error) -> Option<i64> {
    let sqlx::Error::Database(db_err) = err else {
        return None;
    };
    let extended: i64 = db_err.code()?.parse().ok()?;
    Some(extended & 0xff)
}

/// SQLite's "database is locked": another connection holds the lock this one needs.
pub(crate) fn is_busy(err: &sqlx::Error) -> bool {
    sqlite_code(err) == Some(SQLITE_BUSY)
}

/// Sort a sqlx error into the variant a user can act on.
pub(crate) fn from_sqlx(path: &Path, err: sqlx::Error) -> DbError {
    log::debug!("{}: SQLite said: {err}", path.display());
    match sqlite_code(&err) {
        Some(SQLITE_CORRUPT) | Some(SQLITE_NOTADB) => return corrupt(path, sqlite_message(&err)),
        Some(SQLITE_READONLY) => {
            return DbError::ReadOnly {
                path: path.to_path_buf(),
            }
        }
        Some(SQLITE_CANTOPEN) => return io_error(path, sqlite_message(&err)),
        // A write refused for lack of space, or over a file-size limit (EFBIG is an I/O error
        // to SQLite): say what the user can do about it.
        Some(SQLITE_FULL) | Some(SQLITE_IOERR) => {
            let hint = "is the disk full, or a file-size limit (ulimit -f) reached?";
            return io_error(path, format!("{}: {hint}", sqlite_message(&err)));
        }
        _ => {}
    }
    match err {
        sqlx::Error::Io(io) => io_error(path, io),
        other => DbError::Sqlx {
            path: path.to_path_buf(),
            detail: one_line(other),
        },
    }
}

/// Sort a migration failure the same way, looking through to the SQL error inside.
pub(crate) fn from_migrate(path: &Path, err: sqlx::migrate::MigrateError) -> DbError {
    match err {
        sqlx::migrate::MigrateError::Execute(inner) => from_sqlx(path, inner),
        sqlx::migrate::MigrateError::ExecuteMigration(inner, version) => {
            match from_sqlx(path, inner) {
                DbError::Sqlx { path, detail } => DbError::Sqlx {
                    path,
                    detail: format!("migration {version}: {detail}"),
                },
                other => other,
            }
        }
        other => DbError::Sqlx {
            path: path.to_path_buf(),
            detail: one_line(other),
        },
    }
}

fn sqlite_message(err: &sqlx::Error) -> String {
    match err {
        sqlx::Error::Database(db_err) => db_err.message().to_string(),
        other => other.to_string(),
    }
}
