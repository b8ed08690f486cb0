//! Holds no code: this package exists for its `gui` test (`tests/gui/`), which drives the real
//! `sayri-orb` under Xvfb against a real daemon. See the README beside this file.
