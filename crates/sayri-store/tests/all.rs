//! Integration tests of sayri-store, one binary: a real SQLite file in a temporary directory per
//! test (sessions, approvals, preferences, migrations, crash safety).

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
