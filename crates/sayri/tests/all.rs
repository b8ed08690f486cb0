//! Integration tests of the `sayri` binary: the real daemon over its real socket.
mod suite;
