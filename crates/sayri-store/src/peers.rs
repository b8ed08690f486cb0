//! Gateway peers: which sender (per channel, i.e. gateway instance) is paired, and how.

use crate::Store;
use rusqlite::{OptionalExtension, Row, params};
use sayri_core::ports::StoreError;
use serde_json::{Value, json};

/// One gateway peer row.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayPeer {
    /// Sender id as the gateway reports it (e.g. a Telegram user id).
    pub peer_id: String,
    /// Channel: the gateway instance id.
    pub channel: String,
    /// Agent the peer was paired for.
    pub agent_id: String,
    /// Whether the peer is authorised.
    pub authorized: bool,
    /// Unix seconds of the authorisation, if any.
    pub authorized_at: Option<f64>,
    /// How it was paired: `pin` (a `/pair` in the chat) or `desktop` (added by the person at
    /// the computer); empty for rows of the original Sayri.
    pub via: String,
    /// The display name the channel gave when it was paired (informational only).
    pub name: String,
}

fn peer_row(r: &Row<'_>) -> rusqlite::Result<GatewayPeer> {
    let meta: Option<String> = r.get(5)?;
    let meta: Value = meta
        .and_then(|m| serde_json::from_str(&m).ok())
        .unwrap_or(Value::Null);
    let field = |k: &str| meta[k].as_str().unwrap_or_default().to_string();
    Ok(GatewayPeer {
        peer_id: r.get(0)?,
        channel: r.get(1)?,
        agent_id: r.get(2)?,
        authorized: r.get::<_, Option<i64>>(3)? == Some(1),
        authorized_at: r.get(4)?,
        via: field("via"),
        name: field("name"),
    })
}

const PEER_COLS: &str = "peer_id, channel, agent_id, is_authorized, authorized_at, metadata";

impl Store {
    /// Whether `peer_id` is authorised on `channel`. Unknown peers are not (fails closed).
    pub fn is_peer_authorized(&self, peer_id: &str, channel: &str) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let v: Option<i64> = conn
            .query_row(
                "SELECT is_authorized FROM gateway_peers WHERE peer_id = ?1 AND channel = ?2",
                params![peer_id, channel],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(e))?;
        Ok(v == Some(1))
    }

    /// Authorises `peer_id` on `channel` for `agent_id` at `now` (Unix seconds), recording
    /// how (`via`) and the sender's display `name`. Returns whether it was not authorised
    /// before.
    pub fn authorize_peer(
        &self,
        peer_id: &str,
        channel: &str,
        agent_id: &str,
        now: f64,
        via: &str,
        name: &str,
    ) -> Result<bool, StoreError> {
        let meta = self.clean(&json!({"via": via, "name": name}).to_string());
        let conn = self.lock()?;
        let before: Option<i64> = conn
            .query_row(
                "SELECT is_authorized FROM gateway_peers WHERE peer_id = ?1 AND channel = ?2",
                params![peer_id, channel],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.fail(e))?;
        conn.execute(
            "INSERT INTO gateway_peers (peer_id, channel, agent_id, is_authorized, authorized_at, metadata)
             VALUES (?1, ?2, ?3, 1, ?4, ?5)
             ON CONFLICT(channel, peer_id) DO UPDATE SET agent_id = excluded.agent_id,
                 is_authorized = 1, authorized_at = excluded.authorized_at,
                 metadata = excluded.metadata",
            params![peer_id, channel, agent_id, now, meta],
        )
        .map_err(|e| self.fail(e))?;
        Ok(before != Some(1))
    }

    /// Removes `peer_id` from `channel`. Returns whether it existed.
    pub fn revoke_peer(&self, peer_id: &str, channel: &str) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let n = conn
            .execute(
                "DELETE FROM gateway_peers WHERE peer_id = ?1 AND channel = ?2",
                params![peer_id, channel],
            )
            .map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    /// Every peer, by channel and peer id.
    pub fn peers(&self) -> Result<Vec<GatewayPeer>, StoreError> {
        self.query_peers(
            &format!("SELECT {PEER_COLS} FROM gateway_peers ORDER BY channel, peer_id"),
            &[],
        )
    }

    /// The peers of `channel`, by peer id.
    pub fn peers_of(&self, channel: &str) -> Result<Vec<GatewayPeer>, StoreError> {
        self.query_peers(
            &format!("SELECT {PEER_COLS} FROM gateway_peers WHERE channel = ?1 ORDER BY peer_id"),
            &[&channel],
        )
    }

    fn query_peers(
        &self,
        sql: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<GatewayPeer>, StoreError> {
        let conn = self.lock()?;
        let mut st = conn.prepare(sql).map_err(|e| self.fail(e))?;
        let rows = st.query_map(args, peer_row).map_err(|e| self.fail(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.fail(e))
    }
}
