//! Integration tests of `sayri-permissions`, one binary (see `suite/`).

mod suite;
