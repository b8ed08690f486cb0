//! Time, behind a port so tests control it.

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch (UTC), with sub-second precision.
    fn now_unix(&self) -> f64;
}
