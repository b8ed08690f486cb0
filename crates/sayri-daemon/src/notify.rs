//! Desktop notifications: `org.freedesktop.Notifications.Notify` on the session bus (zbus,
//! pure Rust, no `notify-send` process). The daemon shows routine results with it.
//!
//! Without a session bus (a daemon started outside a desktop session, CI) or without a
//! notification service, [`DesktopNotifier::notify`] fails with a sentence saying which and
//! what to do; the daemon logs it and goes on.

use futures::future::BoxFuture;
use sayri_core::ports::{Notifier, NotifyError};

/// The application name notifications carry.
pub const APP_NAME: &str = "Sayri";

/// Shows notifications through the session bus's notification service.
#[derive(Debug, Default)]
pub struct DesktopNotifier {
    #[cfg(feature = "dbus")]
    conn: tokio::sync::Mutex<Option<zbus::Connection>>,
}

impl DesktopNotifier {
    /// A notifier; it connects to the session bus at its first notification.
    pub fn new() -> DesktopNotifier {
        DesktopNotifier::default()
    }

    /// Shows `title` with `body`; returns the notification id.
    ///
    /// # Errors
    /// No session bus, no notification service, or the service refusing.
    #[cfg(feature = "dbus")]
    pub async fn show(&self, title: &str, body: &str) -> Result<u32, String> {
        use std::collections::HashMap;
        use zbus::zvariant::Value;
        let mut slot = self.conn.lock().await;
        if slot.is_none() {
            *slot = Some(zbus::Connection::session().await.map_err(no_bus)?);
        }
        let Some(conn) = slot.as_ref() else {
            return Err(no_bus("not connected"));
        };
        let hints: HashMap<&str, Value<'_>> = HashMap::new();
        let reply = conn
            .call_method(
                Some("org.freedesktop.Notifications"),
                "/org/freedesktop/Notifications",
                Some("org.freedesktop.Notifications"),
                "Notify",
                &(
                    APP_NAME,
                    0u32,
                    "",
                    title,
                    body,
                    Vec::<&str>::new(),
                    hints,
                    -1i32,
                ),
            )
            .await;
        match reply {
            Ok(m) => m
                .body()
                .deserialize::<u32>()
                .map_err(|e| format!("the notification service answered oddly: {e}")),
            Err(e) => {
                // A broken connection is reopened at the next notification.
                if matches!(e, zbus::Error::InputOutput(_)) {
                    *slot = None;
                }
                Err(format!(
                    "no desktop notification service answered ({e}); start one (your desktop's, or e.g. dunst)"
                ))
            }
        }
    }

    /// Without D-Bus support in this build: always fails, saying so.
    ///
    /// # Errors
    /// Always.
    #[cfg(not(feature = "dbus"))]
    pub async fn show(&self, _title: &str, _body: &str) -> Result<u32, String> {
        Err("this sayri was built without D-Bus support (the `dbus` feature), so it cannot show notifications".into())
    }
}

#[cfg(feature = "dbus")]
fn no_bus(e: impl std::fmt::Display) -> String {
    let addr = if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
        "DBUS_SESSION_BUS_ADDRESS is set"
    } else {
        "DBUS_SESSION_BUS_ADDRESS is unset"
    };
    format!(
        "no desktop session bus ({e}; {addr}) — notifications need a graphical session, or start the daemon from one"
    )
}

impl Notifier for DesktopNotifier {
    fn notify<'a>(
        &'a self,
        title: &'a str,
        body: &'a str,
    ) -> BoxFuture<'a, Result<(), NotifyError>> {
        Box::pin(async move {
            self.show(title, body)
                .await
                .map(|_| ())
                .map_err(NotifyError::Failed)
        })
    }
}
