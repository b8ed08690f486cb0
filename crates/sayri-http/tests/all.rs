//! Integration tests of `sayri-http`, one binary (see `suite/`).

mod suite;
