//! Telling the person something outside a conversation: a desktop notification, or speech.

use futures::future::BoxFuture;

/// Shows desktop notifications (`org.freedesktop.Notifications` in the daemon).
pub trait Notifier: Send + Sync {
    /// Shows `title` with `body` (plain text).
    ///
    /// # Errors
    /// Why it could not be shown (no session bus, no notification service), for the log.
    fn notify<'a>(&'a self, title: &'a str, body: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// Speaks a text aloud through the voice output, when the daemon has one.
pub trait Speaker: Send + Sync {
    /// Speaks `text` (markdown: the speaker makes it speakable) and resolves when it was
    /// spoken or queued.
    ///
    /// # Errors
    /// Why it could not be spoken (voice off, no output device), for the log.
    fn speak<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// A [`Notifier`] that shows nothing (a daemon without a desktop, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNotifier;

impl Notifier for NoNotifier {
    fn notify<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Err("desktop notifications are off".to_string()) })
    }
}
