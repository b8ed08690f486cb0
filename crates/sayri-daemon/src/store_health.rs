//! Logging storage errors without repeating what is already said: while the session database is
//! refused as corrupt (said once, where it was found), every further failure it causes is the
//! same refusal and goes to the debug log only; other storage errors are logged as errors.

use sayri_store::Store;

/// Logs `context: e` as an error, or at debug level while `store` refuses every call.
pub fn log_store_error(store: &Store, context: &str, e: &impl std::fmt::Display) {
    if store.corruption().is_some() {
        tracing::debug!("{context}: {e}");
    } else {
        tracing::error!("{context}: {e}");
    }
}
