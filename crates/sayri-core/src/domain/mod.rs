//! Pure domain logic: no I/O here.

pub mod profile;
