//! atomic_write
