//! Security authorizations: durable "Allow always" approvals, and the two port impls.

use crate::{Store, sql_err};
use rusqlite::params;
use sayri_core::ports::{
    ApprovalStore, NewMessage, OpenTurn, Preference, PreferenceUpdate, SearchHit, SessionInfo,
    SessionSeed, SessionStore, StoreError, StoredMessage,
};
use sayri_permissions::Approval;

impl Store {
    fn approvals_where(&self, agent_id: Option<&str>) -> Result<Vec<Approval>, StoreError> {
        let conn = self.lock();
        let mut st = conn
            .prepare(
                "SELECT agent_id, action, resource, created_at FROM security_authorizations
                 WHERE (?1 IS NULL OR agent_id = ?1) ORDER BY created_at, id",
            )
            .map_err(sql_err)?;
        let rows = st
            .query_map(params![agent_id], |r| {
                Ok(Approval {
                    agent_id: r.get(0)?,
                    action: r.get(1)?,
                    resource: r.get(2)?,
                    created_at: r.get(3)?,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }
}

impl ApprovalStore for Store {
    fn approvals_for(&self, agent_id: &str) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(Some(agent_id))
    }

    fn all_approvals(&self) -> Result<Vec<Approval>, StoreError> {
        self.approvals_where(None)
    }

    fn add_approval(&self, a: &Approval) -> Result<(), StoreError> {
        let resource = self.clean(&a.resource);
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(sql_err)?;
        // Replace = delete + insert, so the renewed approval moves to the end (newest).
        tx.execute(
            "DELETE FROM security_authorizations
             WHERE agent_id = ?1 AND action = ?2 AND resource = ?3",
            params![a.agent_id, a.action, resource],
        )
        .map_err(sql_err)?;
        tx.execute(
            "INSERT INTO security_authorizations (agent_id, action, resource, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![a.agent_id, a.action, resource, a.created_at],
        )
        .map_err(sql_err)?;
        tx.commit().map_err(sql_err)
    }

    fn forget_approvals(&self, action: Option<&str>, agent_id: &str) -> Result<usize, StoreError> {
        let conn = self.lock();
        match action {
            None => conn.execute("DELETE FROM security_authorizations", []),
            Some(action) => conn.execute(
                "DELETE FROM security_authorizations WHERE action = ?1 AND agent_id = ?2",
                params![action, agent_id],
            ),
        }
        .map_err(sql_err)
    }
}

impl SessionStore for Store {
    fn append_message(&self, seed: &SessionSeed<'_>, m: &NewMessage) -> Result<i64, StoreError> {
        self.append_message_impl(seed, m)
    }
    fn session(&self, id: &str) -> Result<Option<SessionInfo>, StoreError> {
        self.session_impl(id)
    }
    fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, StoreError> {
        self.list_sessions_impl(limit)
    }
    fn sub_sessions(&self, parent_id: &str) -> Result<Vec<SessionInfo>, StoreError> {
        self.sub_sessions_impl(parent_id)
    }
    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.ids_with_prefix_impl(prefix, limit)
    }
    fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        self.messages_impl(session_id)
    }
    fn rename_session(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        self.rename_impl(id, title)
    }
    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.delete_impl(id)
    }
    fn search_messages(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.search_impl(query, session_id, limit)
    }
    fn record_preference(&self, u: &PreferenceUpdate) -> Result<Preference, StoreError> {
        self.record_preference_impl(u)
    }
    fn query_preferences(
        &self,
        text: &str,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        self.query_preferences_impl(text, agent_id, limit)
    }
    fn list_preferences(
        &self,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        self.list_preferences_impl(agent_id, limit)
    }
    fn clear_preferences(&self, agent_id: Option<&str>) -> Result<usize, StoreError> {
        self.clear_preferences_impl(agent_id)
    }
    fn token_rate(&self, model: &str) -> Result<Option<f64>, StoreError> {
        self.token_rate_impl(model)
    }
    fn set_token_rate(&self, model: &str, rate: f64, now: f64) -> Result<(), StoreError> {
        self.set_token_rate_impl(model, rate, now)
    }
    fn turn_started(
        &self,
        session_id: &str,
        request_message_id: i64,
        now: f64,
    ) -> Result<i64, StoreError> {
        self.turn_started_impl(session_id, request_message_id, now)
    }
    fn turn_ended(&self, id: i64) -> Result<(), StoreError> {
        self.turn_ended_impl(id)
    }
    fn open_turns(&self) -> Result<Vec<OpenTurn>, StoreError> {
        self.open_turns_impl()
    }
    fn close_interrupted_turn(
        &self,
        turn: &OpenTurn,
        notes: &[NewMessage],
    ) -> Result<(), StoreError> {
        self.close_interrupted_turn_impl(turn, notes)
    }
}
