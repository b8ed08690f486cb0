//! Integration tests of sayri-voice on real models (installed by `./scripts/setup --tests`).
//! A test that needs a model fails with the command that installs it; none is skipped.

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
