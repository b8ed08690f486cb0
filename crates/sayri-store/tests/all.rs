//! Integration tests of sayri-store, one binary: a real SQLite file in a temporary directory per
//! test (sessions, approvals, preferences, migrations, crash safety).

mod suite;
