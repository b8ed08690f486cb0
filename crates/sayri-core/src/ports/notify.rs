//! Telling the person something outside a conversation: a desktop notification, or speech.

use futures::future::BoxFuture;

/// Why a desktop notification was not shown (for the log; the run it reports on is not
/// affected).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    /// This daemon shows no notifications (no desktop, or tests).
    #[error("desktop notifications are off")]
    Off,
    /// The notification service could not be reached or refused it; the adapter's message
    /// says why (no session bus, no notification service) and what to do.
    #[error("{0}")]
    Failed(String),
}

/// Why a text was not spoken (for the log).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpeakError {
    /// This daemon has no voice output.
    #[error("voice output is not available in this daemon")]
    Unavailable,
    /// The voice output could not speak it; the adapter's message says why (voice off, no
    /// output device).
    #[error("{0}")]
    Failed(String),
}

/// Shows desktop notifications (`org.freedesktop.Notifications` in the daemon).
pub trait Notifier: Send + Sync {
    /// Shows `title` with `body` (plain text).
    ///
    /// # Errors
    /// [`NotifyError`]: why it could not be shown (no session bus, no notification service),
    /// for the log.
    fn notify<'a>(
        &'a self,
        title: &'a str,
        body: &'a str,
    ) -> BoxFuture<'a, Result<(), NotifyError>>;
}

/// Speaks a text aloud through the voice output, when the daemon has one.
pub trait Speaker: Send + Sync {
    /// Speaks `text` (markdown: the speaker makes it speakable) and resolves when it was
    /// spoken or queued.
    ///
    /// # Errors
    /// [`SpeakError`]: why it could not be spoken (voice off, no output device), for the log.
    fn speak<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<(), SpeakError>>;
}

/// A [`Notifier`] that shows nothing (a daemon without a desktop, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNotifier;

impl Notifier for NoNotifier {
    fn notify<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<(), NotifyError>> {
        Box::pin(async { Err(NotifyError::Off) })
    }
}
