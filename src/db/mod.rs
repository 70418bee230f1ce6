//! The tuning database (SQLite through sqlx).
//!
//! OWNER: db helper.
