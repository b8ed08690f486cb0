//! Integration tests of sayri-voice on real models (installed by `./scripts/setup --tests`).
//! A test that needs a model fails with the command that installs it; none is skipped.

mod suite;
