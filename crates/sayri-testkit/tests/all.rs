//! Integration tests of the scripted server, with a raw TCP client (no HTTP library between).

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
