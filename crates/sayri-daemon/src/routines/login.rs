//! Which login session the daemon starts in, so `on_login` routines and triggers run at the
//! first daemon start of each session and not again when the daemon restarts within it.
//!
//! The session is the boot (`/proc/sys/kernel/random/boot_id`) plus the login session id:
//! `XDG_SESSION_ID` (set by logind for login shells and desktop sessions), else the kernel's
//! audit session id (`/proc/self/sessionid`, unset for services). A daemon started by a user
//! service manager has neither, so for it a "login" is a boot.

use sayri_store::Store;

/// The key under which the last seen session is stored.
const META_KEY: &str = "login_session";

/// This process's login session: `<boot id>/<session id>` (`<boot id>/-` without one).
pub fn current_session() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let session = std::env::var("XDG_SESSION_ID")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/self/sessionid")
                .ok()
                .map(|s| s.trim().to_string())
                // 4294967295 (-1) = no audit session.
                .filter(|s| !s.is_empty() && s != "4294967295")
        })
        .unwrap_or_else(|| "-".into());
    format!("{boot}/{session}")
}

/// Whether `session` is a new login session (not the one the last start saw), recording it.
/// A store error counts as not new: running `on_login` work twice is worse than once missed.
pub fn is_new_session(store: &Store, session: &str) -> bool {
    match store.scheduler_meta(META_KEY) {
        Ok(last) if last.as_deref() == Some(session) => false,
        Ok(_) => match store.set_scheduler_meta(META_KEY, session) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!("cannot record the login session ({e}); on_login routines skipped");
                false
            }
        },
        Err(e) => {
            crate::store_health::log_store_error(
                store,
                "cannot read the login session; on_login routines skipped",
                &e,
            );
            false
        }
    }
}
