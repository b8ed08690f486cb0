//! Pure domain logic: no I/O here.

pub mod config;
pub mod profile;
