//! Pairing PINs and the rate limits around unpaired senders, as pure state machines (the
//! caller passes the time in Unix seconds and the random PIN).
//!
//! * **PINs** ([`PinBook`]): one per instance, made on request at the desktop, valid for
//!   [`PinPolicy::ttl`] (10 minutes) and for one pairing. A new PIN replaces the old one.
//! * **Wrong attempts** are limited per sender: after [`PinPolicy::attempts_per_sender`] (5)
//!   wrong or early attempts within [`PinPolicy::window`] (15 minutes) the sender is locked
//!   out until the oldest attempt leaves the window, and the PIN is not even compared. A PIN
//!   that met [`PinPolicy::failures_per_pin`] (10) wrong attempts in total is revoked, so many
//!   senders cannot share the guessing.
//! * **Refusals** ([`ReplyLimiter`]): a stranger gets at most one reply per
//!   [`ReplyLimiter::interval`] (an hour), whatever they send.
//!
//! Memory stays bounded: entries that can no longer matter are dropped, and each map holds at
//! most [`MAX_TRACKED`] senders (the oldest go first).

use std::collections::{HashMap, VecDeque};

/// Most senders tracked per map.
pub const MAX_TRACKED: usize = 4096;

/// Limits of pairing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PinPolicy {
    /// Seconds a PIN stays valid (600).
    pub ttl: f64,
    /// Wrong attempts one sender may make per window (5).
    pub attempts_per_sender: usize,
    /// The window, in seconds (900).
    pub window: f64,
    /// Wrong attempts a PIN survives in total (10).
    pub failures_per_pin: u32,
}

impl Default for PinPolicy {
    fn default() -> Self {
        PinPolicy {
            ttl: 600.0,
            attempts_per_sender: 5,
            window: 900.0,
            failures_per_pin: 10,
        }
    }
}

/// Outcome of a pairing attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum PairOutcome {
    /// Right PIN: the sender is to be paired; the PIN is used up.
    Paired,
    /// Wrong PIN; this many attempts are left in the window (0: locked now).
    Wrong {
        /// Attempts left before the lock.
        attempts_left: usize,
    },
    /// There is no valid PIN (none made, expired, used, or revoked after too many failures).
    NoPin,
    /// Too many attempts: try again in this many seconds.
    Locked {
        /// Seconds until the next attempt is compared.
        retry_in: u64,
    },
}

impl PairOutcome {
    /// The reply to the sender.
    pub fn reply(&self, instance_id: &str) -> String {
        match self {
            PairOutcome::Paired => {
                "Paired. I will answer your messages here from now on. Send /help to see what you can do.".into()
            }
            PairOutcome::Wrong { attempts_left: 0 } => {
                "That PIN is not right, and that was the last try for now. Wait 15 minutes and try again.".into()
            }
            PairOutcome::Wrong { attempts_left } => format!(
                "That PIN is not right ({attempts_left} tries left). Check it with `sayri gateway pin {instance_id}`."
            ),
            PairOutcome::NoPin => format!(
                "There is no valid pairing PIN right now. Run `sayri gateway pin {instance_id}` on your computer and send /pair followed by the new PIN."
            ),
            PairOutcome::Locked { retry_in } => format!(
                "Too many wrong PINs. Try again in {} minutes.",
                retry_in.div_ceil(60).max(1)
            ),
        }
    }
}

#[derive(Debug, Clone)]
struct Pin {
    code: String,
    expires_at: f64,
    failures: u32,
}

/// The PINs of every instance and the attempts of every sender.
#[derive(Debug, Default)]
pub struct PinBook {
    policy: PinPolicy,
    pins: HashMap<String, Pin>,
    /// Times of recent wrong attempts per (instance, sender).
    attempts: HashMap<(String, String), VecDeque<f64>>,
}

/// Compares without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl PinBook {
    /// An empty book under `policy`.
    pub fn new(policy: PinPolicy) -> Self {
        PinBook {
            policy,
            ..Default::default()
        }
    }

    /// Makes `code` the PIN of `instance` from `now`; returns when it expires.
    pub fn issue(&mut self, instance: &str, code: &str, now: f64) -> f64 {
        let expires_at = now + self.policy.ttl;
        self.pins.insert(
            instance.to_string(),
            Pin {
                code: code.to_string(),
                expires_at,
                failures: 0,
            },
        );
        expires_at
    }

    /// Forgets the PIN of `instance` (it was deleted).
    pub fn revoke(&mut self, instance: &str) {
        self.pins.remove(instance);
        self.attempts.retain(|(i, _), _| i != instance);
    }

    /// Checks `code` from `sender` for `instance` at `now` (see the module rules).
    pub fn try_pair(&mut self, instance: &str, sender: &str, code: &str, now: f64) -> PairOutcome {
        let window = self.policy.window;
        let max = self.policy.attempts_per_sender.max(1);
        let key = (instance.to_string(), sender.to_string());
        if let Some(times) = self.attempts.get_mut(&key) {
            while times.front().is_some_and(|t| now - t >= window) {
                times.pop_front();
            }
            if times.len() >= max {
                let oldest = times.front().copied().unwrap_or(now);
                let retry_in = (oldest + window - now).max(1.0).ceil() as u64;
                return PairOutcome::Locked { retry_in };
            }
        }
        let valid = self.pins.get(instance).is_some_and(|p| p.expires_at > now);
        if !valid {
            self.pins.remove(instance);
            self.record_attempt(key, now);
            return PairOutcome::NoPin;
        }
        let right = self
            .pins
            .get(instance)
            .is_some_and(|p| !code.is_empty() && same(&p.code, code));
        if right {
            self.pins.remove(instance);
            self.attempts.remove(&key);
            return PairOutcome::Paired;
        }
        let failures_per_pin = self.policy.failures_per_pin;
        if let Some(pin) = self.pins.get_mut(instance) {
            pin.failures += 1;
            if pin.failures >= failures_per_pin {
                self.pins.remove(instance);
            }
        }
        let used = self.record_attempt(key, now);
        PairOutcome::Wrong {
            attempts_left: max.saturating_sub(used),
        }
    }

    /// Records a wrong attempt; returns how many the sender has in the window now.
    fn record_attempt(&mut self, key: (String, String), now: f64) -> usize {
        let window = self.policy.window;
        if self.attempts.len() >= MAX_TRACKED && !self.attempts.contains_key(&key) {
            self.attempts
                .retain(|_, t| t.back().is_some_and(|last| now - last < window));
            if self.attempts.len() >= MAX_TRACKED
                && let Some(oldest) = self
                    .attempts
                    .iter()
                    .min_by(|a, b| {
                        a.1.back()
                            .partial_cmp(&b.1.back())
                            .unwrap_or(std::cmp::Ordering::Equal)
                    })
                    .map(|(k, _)| k.clone())
            {
                self.attempts.remove(&oldest);
            }
        }
        let times = self.attempts.entry(key).or_default();
        times.push_back(now);
        times.len()
    }
}

/// At most one reply per interval per (instance, sender).
#[derive(Debug)]
pub struct ReplyLimiter {
    interval: f64,
    last: HashMap<(String, String), f64>,
}

impl Default for ReplyLimiter {
    fn default() -> Self {
        ReplyLimiter::new(3600.0)
    }
}

impl ReplyLimiter {
    /// A limiter allowing one reply per `interval` seconds.
    pub fn new(interval: f64) -> Self {
        ReplyLimiter {
            interval,
            last: HashMap::new(),
        }
    }

    /// The interval in seconds (3600 by default).
    pub fn interval(&self) -> f64 {
        self.interval
    }

    /// Whether `sender` of `instance` may get a reply at `now`; if so, it is recorded.
    pub fn allow(&mut self, instance: &str, sender: &str, now: f64) -> bool {
        let key = (instance.to_string(), sender.to_string());
        if let Some(t) = self.last.get(&key)
            && now - t < self.interval
        {
            return false;
        }
        if self.last.len() >= MAX_TRACKED && !self.last.contains_key(&key) {
            let interval = self.interval;
            self.last.retain(|_, t| now - *t < interval);
            if self.last.len() >= MAX_TRACKED
                && let Some(oldest) = self
                    .last
                    .iter()
                    .min_by(|a, b| a.1.partial_cmp(b.1).unwrap_or(std::cmp::Ordering::Equal))
                    .map(|(k, _)| k.clone())
            {
                self.last.remove(&oldest);
            }
        }
        self.last.insert(key, now);
        true
    }

    /// Forgets every sender of `instance`.
    pub fn forget(&mut self, instance: &str) {
        self.last.retain(|(i, _), _| i != instance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_pairs_once_and_expires() {
        let mut b = PinBook::new(PinPolicy::default());
        b.issue("home", "123456", 0.0);
        assert_eq!(b.try_pair("home", "1", "123456", 10.0), PairOutcome::Paired);
        assert_eq!(b.try_pair("home", "2", "123456", 11.0), PairOutcome::NoPin);
        b.issue("home", "654321", 100.0);
        assert_eq!(b.try_pair("home", "3", "654321", 700.0), PairOutcome::NoPin);
        b.issue("home", "111111", 1000.0);
        assert_eq!(
            b.try_pair("other", "3", "111111", 1001.0),
            PairOutcome::NoPin
        );
    }

    #[test]
    fn wrong_attempts_lock_a_sender_out_without_comparing() {
        let mut b = PinBook::new(PinPolicy::default());
        b.issue("home", "123456", 0.0);
        for left in (0..5).rev() {
            assert_eq!(
                b.try_pair("home", "1", "000000", 1.0),
                PairOutcome::Wrong {
                    attempts_left: left
                }
            );
        }
        // Even the right PIN is not compared while locked.
        assert!(matches!(
            b.try_pair("home", "1", "123456", 2.0),
            PairOutcome::Locked { retry_in } if retry_in == 899
        ));
        // Another sender still can.
        assert_eq!(b.try_pair("home", "2", "123456", 3.0), PairOutcome::Paired);
        // After the window the sender may try again.
        b.issue("home", "222222", 950.0);
        assert_eq!(
            b.try_pair("home", "1", "222222", 951.0),
            PairOutcome::Paired
        );
    }

    #[test]
    fn many_senders_cannot_share_the_guessing() {
        let mut b = PinBook::new(PinPolicy::default());
        b.issue("home", "123456", 0.0);
        for s in 0..10 {
            assert!(matches!(
                b.try_pair("home", &s.to_string(), "000000", 1.0),
                PairOutcome::Wrong { .. }
            ));
        }
        assert_eq!(b.try_pair("home", "99", "123456", 2.0), PairOutcome::NoPin);
    }

    #[test]
    fn one_refusal_per_hour_and_bounded_memory() {
        let mut l = ReplyLimiter::default();
        assert!(l.allow("home", "7", 0.0));
        assert!(!l.allow("home", "7", 3599.0));
        assert!(l.allow("home", "7", 3600.0));
        assert!(l.allow("work", "7", 1.0));
        for s in 0..(MAX_TRACKED * 2) {
            l.allow("home", &s.to_string(), 5000.0);
        }
        assert!(l.last.len() <= MAX_TRACKED);
    }
}
