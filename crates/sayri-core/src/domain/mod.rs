//! Pure domain logic: no I/O here.

pub mod permissions;
pub mod profile;
