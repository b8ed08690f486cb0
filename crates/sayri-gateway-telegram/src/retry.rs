//! When a refused or failed `sendMessage` is tried again, and when a reply counts as lost.
//!
//! * `429 Too Many Requests`: after `parameters.retry_after` seconds; without it, after the
//!   seconds the description names (`Too Many Requests: retry after 35`); without either,
//!   exponentially (see below). A wait longer than [`MAX_RETRY_AFTER`] is not honoured: the
//!   reply counts as lost.
//! * No answer (connection refused, timeout) and `5xx`: exponentially.
//! * Any other refusal (`400` message too long, `403` bot blocked…): not retried; it is lost.
//! * Exponentially means 2 s, 4 s, 8 s … doubling per attempt, at most [`MAX_BACKOFF`].
//! * After [`MAX_ATTEMPTS`] failed attempts the reply counts as lost.
//!
//! Every wait is spent in the chat's own outbox entry (visible as `next_retry_at` in
//! `sayri gateway list`), never as a busy loop; other chats are not held up.

use crate::bot_api::ApiError;
use std::time::Duration;

/// Longest exponential pause between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// Longest `retry_after` honoured (Telegram's flood waits can last hours).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(6 * 3600);
/// Failed attempts after which a reply counts as lost.
pub const MAX_ATTEMPTS: u32 = 12;

/// What to do after attempt number `attempts` (1 for the first) failed with `e`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Try again after this long.
    RetryIn(Duration),
    /// Give up: the reply is lost.
    GiveUp,
}

/// The exponential pause after `attempts` failures.
pub fn backoff(attempts: u32) -> Duration {
    let secs = 2u64.saturating_pow(attempts.clamp(1, 30));
    Duration::from_secs(secs).min(MAX_BACKOFF)
}

/// The seconds a description names: `… retry after 35`.
pub fn retry_after_in(description: &str) -> Option<u64> {
    let lower = description.to_ascii_lowercase();
    let at = lower.find("retry after")? + "retry after".len();
    let digits: String = lower[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether `e` says this chat (or the bot) is rate limited: then nothing else may be sent
/// there either, not even a notice that the reply was lost.
pub fn is_rate_limit(e: &ApiError) -> bool {
    e.status() == Some(429)
}

/// What follows failed attempt number `attempts` with `e` (see the module rules).
pub fn next(e: &ApiError, attempts: u32) -> Next {
    if attempts >= MAX_ATTEMPTS {
        return Next::GiveUp;
    }
    let wait = match e {
        ApiError::Refused {
            status: 429,
            retry_after,
            description,
        } => match retry_after.or_else(|| retry_after_in(description)) {
            Some(s) => Duration::from_secs(s.max(1)),
            None => backoff(attempts),
        },
        ApiError::Refused { status, .. } if *status >= 500 => backoff(attempts),
        ApiError::Refused { .. } => return Next::GiveUp,
        ApiError::Transport(_) => backoff(attempts),
    };
    if wait > MAX_RETRY_AFTER {
        Next::GiveUp
    } else {
        Next::RetryIn(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(retry_after: Option<u64>, description: &str) -> ApiError {
        ApiError::Refused {
            status: 429,
            description: description.into(),
            retry_after,
        }
    }

    #[test]
    fn retry_after_comes_from_the_parameters_else_the_description_else_doubles_to_the_cap() {
        let secs = |n: Next| match n {
            Next::RetryIn(d) => d.as_secs(),
            Next::GiveUp => u64::MAX,
        };
        assert_eq!(secs(next(&limited(Some(7), "Too Many Requests"), 1)), 7);
        assert_eq!(
            secs(next(&limited(None, "Too Many Requests: retry after 35"), 1)),
            35
        );
        let plain = limited(None, "Too Many Requests");
        let waits: Vec<u64> = (1..=10).map(|a| secs(next(&plain, a))).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(next(&plain, MAX_ATTEMPTS), Next::GiveUp);
    }

    #[test]
    fn a_refusal_is_not_retried_and_an_endless_flood_wait_is_given_up() {
        let too_long = ApiError::Refused {
            status: 400,
            description: "Bad Request: message is too long".into(),
            retry_after: None,
        };
        assert_eq!(next(&too_long, 1), Next::GiveUp);
        assert_eq!(next(&limited(Some(86_400), "flood"), 1), Next::GiveUp);
        assert_eq!(
            next(&ApiError::Transport("connection refused".into()), 3),
            Next::RetryIn(Duration::from_secs(8))
        );
    }

    #[test]
    fn the_description_is_read_whatever_its_case_and_spacing() {
        assert_eq!(
            retry_after_in("Too Many Requests: Retry After  12"),
            Some(12)
        );
        assert_eq!(retry_after_in("Too Many Requests"), None);
        assert_eq!(retry_after_in("retry after soon"), None);
    }
}
