//! Integration tests of `sayri-core`, one binary (see `suite/`).

mod suite;
