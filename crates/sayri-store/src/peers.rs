//! Gateway peers: which remote chat user (per channel) may talk to which agent.

use crate::{Store, sql_err};
use rusqlite::{OptionalExtension, params};
use sayri_core::ports::StoreError;

/// One gateway peer row.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayPeer {
    /// Peer id as the gateway reports it (e.g. a chat user id).
    pub peer_id: String,
    /// Channel (gateway instance or network name).
    pub channel: String,
    /// Agent the peer talks to.
    pub agent_id: String,
    /// Whether the peer is authorised.
    pub authorized: bool,
    /// Unix seconds of the authorisation, if any.
    pub authorized_at: Option<f64>,
}

impl Store {
    /// Whether `peer_id` is authorised on `channel`. Unknown peers are not (fails closed).
    pub fn is_peer_authorized(&self, peer_id: &str, channel: &str) -> Result<bool, StoreError> {
        let conn = self.lock();
        let v: Option<i64> = conn
            .query_row(
                "SELECT is_authorized FROM gateway_peers WHERE peer_id = ?1 AND channel = ?2",
                params![peer_id, channel],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql_err)?;
        Ok(v == Some(1))
    }

    /// Authorises `peer_id` on `channel` for `agent_id` (upsert on the peer id), at `now`
    /// (Unix seconds).
    pub fn authorize_peer(
        &self,
        peer_id: &str,
        channel: &str,
        agent_id: &str,
        now: f64,
    ) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO gateway_peers (peer_id, channel, agent_id, is_authorized, authorized_at)
             VALUES (?1, ?2, ?3, 1, ?4)
             ON CONFLICT(peer_id) DO UPDATE SET channel = excluded.channel,
                 agent_id = excluded.agent_id, is_authorized = 1,
                 authorized_at = excluded.authorized_at",
            params![peer_id, channel, agent_id, now],
        )
        .map_err(sql_err)?;
        Ok(())
    }

    /// Removes a peer. Returns whether it existed.
    pub fn revoke_peer(&self, peer_id: &str) -> Result<bool, StoreError> {
        let conn = self.lock();
        let n = conn
            .execute("DELETE FROM gateway_peers WHERE peer_id = ?1", [peer_id])
            .map_err(sql_err)?;
        Ok(n > 0)
    }

    /// Every peer, by peer id.
    pub fn peers(&self) -> Result<Vec<GatewayPeer>, StoreError> {
        let conn = self.lock();
        let mut st = conn
            .prepare(
                "SELECT peer_id, channel, agent_id, is_authorized, authorized_at
                 FROM gateway_peers ORDER BY peer_id",
            )
            .map_err(sql_err)?;
        let rows = st
            .query_map([], |r| {
                Ok(GatewayPeer {
                    peer_id: r.get(0)?,
                    channel: r.get(1)?,
                    agent_id: r.get(2)?,
                    authorized: r.get::<_, Option<i64>>(3)? == Some(1),
                    authorized_at: r.get(4)?,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }
}
