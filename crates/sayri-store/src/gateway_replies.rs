//! The answer given to each update a gateway passed on, by instance and the channel's update
//! id. A gateway that was killed after the daemon answered, but before the reply reached the
//! chat, sends the update again after its restart: it gets the recorded answer, and no second
//! turn runs. Records older than [`KEEP_SECONDS`] are dropped when a new one is written.

use crate::Store;
use rusqlite::{OptionalExtension, params};
use sayri_core::ports::StoreError;

/// How long an answer is kept for a repeated update (a gateway is restarted within seconds;
/// a week covers a machine that was off).
pub const KEEP_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

impl Store {
    /// The recorded answer (the final event as JSON) to update `update_id` of `instance`.
    ///
    /// # Errors
    /// The database failed.
    pub fn gateway_reply(
        &self,
        instance: &str,
        update_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let conn = self.lock()?;
        conn.query_row(
            "SELECT reply FROM gateway_replies WHERE instance_id = ?1 AND update_id = ?2",
            params![instance, update_id],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| self.fail(e))
    }

    /// Records `reply` (the final event as JSON, already redacted) as the answer to update
    /// `update_id` of `instance` in `chat`, at `now`; drops records older than [`KEEP_SECONDS`].
    ///
    /// # Errors
    /// The database failed.
    pub fn save_gateway_reply(
        &self,
        instance: &str,
        update_id: &str,
        chat: &str,
        reply: &str,
        now: f64,
    ) -> Result<(), StoreError> {
        let reply = self.clean(reply);
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        tx.execute(
            "DELETE FROM gateway_replies WHERE created_at < ?1",
            [now - KEEP_SECONDS],
        )
        .map_err(|e| self.fail(e))?;
        tx.execute(
            "INSERT OR REPLACE INTO gateway_replies (instance_id, update_id, chat_id, reply, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![instance, update_id, chat, reply, now],
        )
        .map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.fail(e))
    }
}
