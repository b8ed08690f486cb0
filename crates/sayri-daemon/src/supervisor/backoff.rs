//! When to restart a crashed child: exponential backoff and the crash-loop breaker, as pure
//! functions of the crash times (unit-tested without waiting).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How a supervised child is restarted after it exits on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Delay before the first restart (default 1 s); each further consecutive crash doubles it.
    pub initial_delay: Duration,
    /// Longest delay (default 60 s).
    pub max_delay: Duration,
    /// The breaker: this many crashes (default 5) …
    pub max_crashes: usize,
    /// … within this window (default 5 minutes) put the child in state `failed`.
    pub window: Duration,
    /// A child that ran at least this long (default 60 s) before crashing starts its backoff
    /// again at `initial_delay`.
    pub stable_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            max_crashes: 5,
            window: Duration::from_secs(5 * 60),
            stable_after: Duration::from_secs(60),
        }
    }
}

/// What to do after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterCrash {
    /// Start it again after this delay.
    RestartAfter(Duration),
    /// The breaker tripped: too many crashes in the window; do not restart.
    Fail,
}

/// The crashes of one child and its current backoff step.
#[derive(Debug, Clone)]
pub struct CrashHistory {
    policy: RestartPolicy,
    /// Crash times within the window, oldest first.
    recent: VecDeque<Instant>,
    /// Crashes since the child last ran for `stable_after`.
    consecutive: u32,
}

impl CrashHistory {
    /// An empty history under `policy`.
    pub fn new(policy: RestartPolicy) -> Self {
        CrashHistory {
            policy,
            recent: VecDeque::new(),
            consecutive: 0,
        }
    }

    /// Records a crash at `at` of a run that lasted `ran_for` (zero when it could not start)
    /// and says what to do next.
    pub fn crashed(&mut self, at: Instant, ran_for: Duration) -> AfterCrash {
        if ran_for >= self.policy.stable_after {
            self.consecutive = 0;
        }
        self.recent.push_back(at);
        while let Some(&first) = self.recent.front() {
            if at.duration_since(first) > self.policy.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= self.policy.max_crashes.max(1) {
            return AfterCrash::Fail;
        }
        self.consecutive += 1;
        AfterCrash::RestartAfter(self.delay(self.consecutive))
    }

    /// The delay before restart number `n` in a row (1-based): `initial × 2^(n−1)`, capped.
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1).min(31));
        self.policy
            .initial_delay
            .saturating_mul(factor)
            .min(self.policy.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_one_second_to_the_sixty_second_cap() {
        let h = CrashHistory::new(RestartPolicy::default());
        let secs: Vec<u64> = (1..=8).map(|n| h.delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(h.delay(1000), Duration::from_secs(60));
    }

    #[test]
    fn the_breaker_trips_at_n_crashes_within_the_window() {
        let policy = RestartPolicy {
            max_crashes: 3,
            window: Duration::from_secs(60),
            ..RestartPolicy::default()
        };
        let t0 = Instant::now();
        let mut h = CrashHistory::new(policy);
        let z = Duration::ZERO;
        assert_eq!(
            h.crashed(t0, z),
            AfterCrash::RestartAfter(Duration::from_secs(1))
        );
        assert_eq!(
            h.crashed(t0 + Duration::from_secs(2), z),
            AfterCrash::RestartAfter(Duration::from_secs(2))
        );
        assert_eq!(h.crashed(t0 + Duration::from_secs(5), z), AfterCrash::Fail);
    }

    #[test]
    fn crashes_spread_beyond_the_window_never_trip_and_a_stable_run_resets_the_backoff() {
        let policy = RestartPolicy {
            max_crashes: 3,
            window: Duration::from_secs(60),
            stable_after: Duration::from_secs(30),
            ..RestartPolicy::default()
        };
        let t0 = Instant::now();
        let mut h = CrashHistory::new(policy);
        for i in 0..10u64 {
            // Each run lasted 40 s, longer than `stable_after`: always the first delay.
            let at = t0 + Duration::from_secs(41 * i);
            assert_eq!(
                h.crashed(at, Duration::from_secs(40)),
                AfterCrash::RestartAfter(Duration::from_secs(1)),
                "crash {i}"
            );
        }
    }
}
