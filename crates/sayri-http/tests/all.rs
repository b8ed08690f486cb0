//! Integration tests of `sayri-http`, one binary (see `suite/`).

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
