//! Integration tests of the protocol crate.
mod suite;
