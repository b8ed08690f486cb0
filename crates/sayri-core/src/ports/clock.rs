//! Time, behind a port so tests control it.

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch (UTC), with sub-second precision.
    fn now_unix(&self) -> f64;
}

/// The machine's current time zone, which can change while the daemon runs (travel,
/// `timedatectl set-timezone`): read it at each computation, never once at start.
pub trait SystemZone: Send + Sync {
    /// The zone now (an adapter that cannot tell uses UTC and reports why elsewhere).
    fn zone(&self) -> chrono_tz::Tz;
}
