//! Integration tests of sayri-sandbox: real kernel, real processes, run as root and as uid 65534.
mod suite;
