//! Telling the person at the desktop that something supervised went wrong: an `error` event
//! to every client, and a desktop notification.
//!
//! * A supervised child whose crash-loop breaker tripped (state `failed`): for a gateway,
//!   "gateway ID stopped: …"; for any other child, its name.
//! * A reply a gateway reports it could not deliver.
//!
//! Desktop notifications go through [`notify_desktop`], the one place where the daemon's
//! notifier is plugged in; until the daemon has one, the notification is written to the log
//! at error level.

use super::instance_of_child;
use crate::bus::Broadcaster;
use crate::supervisor::{ChildState, ChildStatus, Observer};
use sayri_protocol::event::turns::Error;

use std::sync::Arc;

/// The supervisor's observer: a child that enters `failed` raises an alert.
pub fn supervisor_observer(broadcaster: Broadcaster) -> Observer {
    Arc::new(move |st: &ChildStatus| {
        if st.state != ChildState::Failed {
            return;
        }
        let why = st.last_error.as_deref().unwrap_or("it failed");
        let (summary, source, name) = match instance_of_child(&st.name) {
            Some(id) => (format!("Sayri gateway {id} stopped"), "gateway", id),
            None => (
                format!("Sayri: {} stopped", st.name),
                "supervisor",
                st.name.as_str(),
            ),
        };
        alert(&broadcaster, &summary, why, source, name);
    })
}

/// Broadcasts `error` {`error`, `source`, `name`} and notifies the desktop.
pub fn alert(broadcaster: &Broadcaster, summary: &str, body: &str, source: &str, name: &str) {
    broadcaster.emit(&Error {
        error: format!("{summary}: {body}"),
        source: Some(source.into()),
        name: Some(name.into()),
    });
    notify_desktop(summary, body);
}

/// Shows a desktop notification (see the module notes).
pub fn notify_desktop(summary: &str, body: &str) {
    tracing::error!("{summary}: {body}");
}
