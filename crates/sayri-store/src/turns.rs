//! The turn journal (`open_turns` table): turns that started and have not ended yet. A row left
//! behind by a crash is closed at the next start with notes appended to its session, in the same
//! transaction that removes it.

use crate::sessions::insert_message;
use crate::{Store, sql_err};
use rusqlite::{OptionalExtension, params};
use sayri_core::ports::{NewMessage, OpenTurn, SessionSeed, StoreError};

impl Store {
    pub(crate) fn turn_started_impl(
        &self,
        session_id: &str,
        request_message_id: i64,
        now: f64,
    ) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO open_turns (session_id, request_message_id, started_at)
             VALUES (?1, ?2, ?3)",
            params![session_id, request_message_id, now],
        )
        .map_err(sql_err)?;
        Ok(conn.last_insert_rowid())
    }

    pub(crate) fn turn_ended_impl(&self, id: i64) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute("DELETE FROM open_turns WHERE id = ?1", [id])
            .map_err(sql_err)?;
        Ok(())
    }

    pub(crate) fn open_turns_impl(&self) -> Result<Vec<OpenTurn>, StoreError> {
        let conn = self.lock();
        let mut st = conn
            .prepare(
                "SELECT id, session_id, request_message_id, started_at FROM open_turns ORDER BY id",
            )
            .map_err(sql_err)?;
        let rows = st
            .query_map([], |r| {
                Ok(OpenTurn {
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    request_message_id: r.get(2)?,
                    started_at: r.get(3)?,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<Result<_, _>>().map_err(sql_err)
    }

    pub(crate) fn close_interrupted_turn_impl(
        &self,
        turn: &OpenTurn,
        notes: &[NewMessage],
    ) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(sql_err)?;
        let session: Option<(String, String)> = tx
            .query_row(
                "SELECT agent_id, title FROM sessions WHERE id = ?1",
                [&turn.session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql_err)?;
        // A deleted session took its journal rows with it (ON DELETE CASCADE); nothing to note.
        if let Some((agent_id, title)) = session {
            let seed = SessionSeed {
                id: &turn.session_id,
                agent_id: &agent_id,
                title: &title,
                parent: None,
            };
            for n in notes {
                insert_message(&tx, &seed, &self.clean_message(n))?;
            }
        }
        tx.execute("DELETE FROM open_turns WHERE id = ?1", [turn.id])
            .map_err(sql_err)?;
        tx.commit().map_err(sql_err)
    }
}
