//! Integration tests of sayri-vault (one binary; topics in `suite/`).

mod suite;
