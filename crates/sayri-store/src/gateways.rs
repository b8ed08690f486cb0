//! Gateway instances and the session of each of their chats.
//!
//! An instance row holds its settings as JSON (the core's `GatewayInstance`); the id column is
//! authoritative. Deleting an instance deletes its peers and chats in the same transaction, and
//! creating one clears peers and chats left under its id by an earlier instance (a new
//! instance starts with nobody paired).

use crate::Store;
use rusqlite::{OptionalExtension, params};
use sayri_core::domain::gateway::GatewayInstance;
use sayri_core::ports::StoreError;

/// How [`Store::save_gateway_instance`] treats an existing id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceSave {
    /// Only a new instance: an existing id is refused.
    Create,
    /// Only an existing instance: an unknown id is refused.
    Update,
    /// Either.
    Upsert,
}

/// The session and agent a chat of an instance uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayChat {
    /// The session the chat continues.
    pub session_id: String,
    /// The agent the chat talks to.
    pub agent_id: String,
}

fn parse_instance(id: String, settings: &str) -> Result<GatewayInstance, StoreError> {
    let mut inst: GatewayInstance = serde_json::from_str(settings).map_err(|e| {
        StoreError(format!(
            "gateway instance {id} in the session database cannot be read ({e}); delete it with `sayri gateway delete {id}` and create it again"
        ))
    })?;
    inst.id = id;
    Ok(inst)
}

impl Store {
    /// Every gateway instance, by id.
    ///
    /// # Errors
    /// The database failed, or a stored row cannot be read (named, with what to do).
    pub fn gateway_instances(&self) -> Result<Vec<GatewayInstance>, StoreError> {
        let rows: Vec<(String, String)> = {
            let conn = self.lock()?;
            let mut st = conn
                .prepare("SELECT id, settings FROM gateway_instances ORDER BY id")
                .map_err(|e| self.fail(e))?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.fail(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))?
        };
        rows.into_iter()
            .map(|(id, s)| parse_instance(id, &s))
            .collect()
    }

    /// The instance `id`, if there is one.
    ///
    /// # Errors
    /// The database failed or the row cannot be read.
    pub fn gateway_instance(&self, id: &str) -> Result<Option<GatewayInstance>, StoreError> {
        let row: Option<String> = {
            let conn = self.lock()?;
            conn.query_row(
                "SELECT settings FROM gateway_instances WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(e))?
        };
        row.map(|s| parse_instance(id.to_string(), &s)).transpose()
    }

    /// Stores `inst` at `now`. Returns whether it was created (not updated).
    ///
    /// # Errors
    /// [`InstanceSave::Create`] on an existing id or [`InstanceSave::Update`] on an unknown one
    /// (messages say what to do), or the database failed.
    pub fn save_gateway_instance(
        &self,
        inst: &GatewayInstance,
        mode: InstanceSave,
        now: f64,
    ) -> Result<bool, StoreError> {
        let settings = serde_json::to_string(inst)
            .map_err(|e| StoreError(format!("cannot encode gateway instance: {e}")))?;
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        let exists: bool = tx
            .query_row(
                "SELECT 1 FROM gateway_instances WHERE id = ?1",
                [&inst.id],
                |_| Ok(()),
            )
            .optional()
            .map_err(|e| self.fail(e))?
            .is_some();
        match (mode, exists) {
            (InstanceSave::Create, true) => {
                return Err(StoreError(format!(
                    "gateway instance {} exists already; change it with `sayri gateway edit {}` or pick another name",
                    inst.id, inst.id
                )));
            }
            (InstanceSave::Update, false) => {
                return Err(StoreError(format!(
                    "no gateway instance {} (see `sayri gateway list`)",
                    inst.id
                )));
            }
            _ => {}
        }
        if exists {
            tx.execute(
                "UPDATE gateway_instances SET plugin = ?2, settings = ?3, updated_at = ?4 WHERE id = ?1",
                params![inst.id, inst.plugin, settings, now],
            )
            .map_err(|e| self.fail(e))?;
        } else {
            tx.execute("DELETE FROM gateway_peers WHERE channel = ?1", [&inst.id])
                .map_err(|e| self.fail(e))?;
            tx.execute(
                "DELETE FROM gateway_chats WHERE instance_id = ?1",
                [&inst.id],
            )
            .map_err(|e| self.fail(e))?;
            tx.execute(
                "DELETE FROM gateway_replies WHERE instance_id = ?1",
                [&inst.id],
            )
            .map_err(|e| self.fail(e))?;
            tx.execute(
                "INSERT INTO gateway_instances (id, plugin, settings, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
                params![inst.id, inst.plugin, settings, now],
            )
            .map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(!exists)
    }

    /// Deletes instance `id` with its peers and chats. Returns whether it existed.
    pub fn delete_gateway_instance(&self, id: &str) -> Result<bool, StoreError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction().map_err(|e| self.fail(e))?;
        tx.execute("DELETE FROM gateway_peers WHERE channel = ?1", [id])
            .map_err(|e| self.fail(e))?;
        tx.execute("DELETE FROM gateway_chats WHERE instance_id = ?1", [id])
            .map_err(|e| self.fail(e))?;
        tx.execute("DELETE FROM gateway_replies WHERE instance_id = ?1", [id])
            .map_err(|e| self.fail(e))?;
        let n = tx
            .execute("DELETE FROM gateway_instances WHERE id = ?1", [id])
            .map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    /// The session and agent of chat `chat_id` of instance `instance_id`, if it has talked.
    pub fn gateway_chat(
        &self,
        instance_id: &str,
        chat_id: &str,
    ) -> Result<Option<GatewayChat>, StoreError> {
        let conn = self.lock()?;
        conn.query_row(
            "SELECT session_id, agent_id FROM gateway_chats WHERE instance_id = ?1 AND chat_id = ?2",
            params![instance_id, chat_id],
            |r| {
                Ok(GatewayChat {
                    session_id: r.get(0)?,
                    agent_id: r.get(1)?,
                })
            },
        )
        .optional()
        .map_err(|e| self.fail(e))
    }

    /// Sets the session and agent of a chat.
    pub fn set_gateway_chat(
        &self,
        instance_id: &str,
        chat_id: &str,
        chat: &GatewayChat,
        now: f64,
    ) -> Result<(), StoreError> {
        let conn = self.lock()?;
        conn.execute(
            "INSERT INTO gateway_chats (instance_id, chat_id, session_id, agent_id, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(instance_id, chat_id) DO UPDATE SET session_id = excluded.session_id,
                 agent_id = excluded.agent_id, updated_at = excluded.updated_at",
            params![instance_id, chat_id, chat.session_id, chat.agent_id, now],
        )
        .map_err(|e| self.fail(e))?;
        Ok(())
    }
}
