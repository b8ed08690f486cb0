//! Integration tests of sayri-llm, one binary: real HTTP over loopback against the scripted
//! server of sayri-testkit, plus one real model.

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
