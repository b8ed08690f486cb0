//! Integration tests of sayri-sandbox: real kernel, real processes, run as root and as uid 65534.

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
