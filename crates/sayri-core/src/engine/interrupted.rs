//! Turns cut short by a crash, closed honestly at the next start.
//!
//! The engine writes each turn into the store's journal when it starts and forgets it when it
//! ends, however it ends. A turn still in the journal when the daemon starts was running when
//! the previous daemon died. [`close_interrupted_turns`] looks at the rows the turn left after
//! its request and closes it without running anything:
//!
//! * the last row is an assistant reply with a command block → that command was waiting for
//!   permission or running: a `tool` row with status `interrupted` records that it did not
//!   complete (the model sees it in later turns, so it does not assume the command ran), then a
//!   note;
//! * the last row is the request or a command result → the model was answering: a note;
//! * the last row is a final answer or an error → the turn had in fact ended: no note.
//!
//! The note is an error record (role `error`): shown by `sessions show`, never replayed to a
//! model.
//! Nothing is re-run; the conversation continues normally with the next request (pinned by
//! `a_crash_mid_command_is_closed_as_interrupted_and_never_rerun`).

use crate::domain::codeblock;
use crate::ports::{
    NewMessage, OpenTurn, Role, SessionStore, StoreError, StoredMessage, ToolCallRecord,
};

/// `ToolCallRecord::status` of a command that was cut short by a crash.
pub const STATUS_INTERRUPTED: &str = "interrupted";

/// What was done for one interrupted turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedTurn {
    /// Session of the turn.
    pub session_id: String,
    /// The command that did not complete, if the turn was at a command.
    pub pending_command: Option<String>,
    /// Whether a note was stored (false when the turn had in fact ended).
    pub noted: bool,
}

/// Closes every turn left open by a crash (see the module docs). `now` is the current Unix
/// time. Returns what was done, oldest turn first.
///
/// # Errors
/// The store failed; turns closed before the failure stay closed.
pub fn close_interrupted_turns(
    store: &dyn SessionStore,
    now: f64,
) -> Result<Vec<ClosedTurn>, StoreError> {
    let mut closed = Vec::new();
    for turn in store.open_turns()? {
        let rows: Vec<StoredMessage> = store
            .messages(&turn.session_id)?
            .into_iter()
            .filter(|m| m.id > turn.request_message_id)
            .collect();
        let (notes, result) = notes_for(&turn, rows.last(), now);
        store.close_interrupted_turn(&turn, &notes)?;
        closed.push(result);
    }
    Ok(closed)
}

/// Where the turn stood, from its last row.
enum Stop {
    /// A reply proposed this command; its result was never stored.
    AtCommand(String),
    /// The model was answering (after the request or a command result).
    Answering,
    /// The last row ends a turn: a final answer or an error row.
    Ended,
}

fn stop_of(last: Option<&StoredMessage>) -> Stop {
    let Some(m) = last else {
        return Stop::Answering;
    };
    match m.role {
        Role::Error => Stop::Ended,
        Role::Assistant => match codeblock::command_blocks(&m.content).first() {
            Some(b) => Stop::AtCommand(b.body.trim().to_string()),
            None => Stop::Ended,
        },
        _ => Stop::Answering,
    }
}

/// The rows that close `turn` and the report of it.
fn notes_for(
    turn: &OpenTurn,
    last: Option<&StoredMessage>,
    now: f64,
) -> (Vec<NewMessage>, ClosedTurn) {
    let mut report = ClosedTurn {
        session_id: turn.session_id.clone(),
        pending_command: None,
        noted: true,
    };
    let mut rows = Vec::new();
    let note = match stop_of(last) {
        Stop::Ended => {
            report.noted = false;
            return (rows, report);
        }
        Stop::Answering => "This request was interrupted: Sayri stopped (it crashed or was \
             shut down) before the answer was complete. Nothing was re-run; ask again to continue."
            .to_string(),
        Stop::AtCommand(command) => {
            rows.push(not_completed_row(&command, now));
            let note = format!(
                "This request was interrupted: Sayri stopped (it crashed or was shut down) \
                 while the command `{command}` was waiting for permission or running. It did not \
                 complete, everything it started was stopped, and it was not run again; ask \
                 again to continue."
            );
            report.pending_command = Some(command);
            note
        }
    };
    rows.push(NewMessage::new(Role::Error, note, now));
    (rows, report)
}

/// The `tool` row of a command cut short by a crash: status `interrupted`, no exit code, and
/// an observation telling the model not to assume it ran.
fn not_completed_row(command: &str, now: f64) -> NewMessage {
    interrupted_row(
        command,
        "[Command NOT COMPLETED: Sayri stopped while it was waiting for permission or running; \
         it was stopped and not run again]\nDo not assume it ran or that it did not; check its \
         effects, or ask the user, before running it again.",
        now,
    )
}

/// The `tool` row of a delegated turn's command cut short when the person interrupted the
/// request: as after a crash (status `interrupted`, no exit code), saying who stopped it.
pub fn not_completed_by_interrupt(command: &str, now: f64) -> NewMessage {
    interrupted_row(
        command,
        "[Command NOT COMPLETED: the request was interrupted while it was waiting for permission \
         or running; it was stopped and not run again]\nDo not assume it ran or that it did not; \
         check its effects, or ask the user, before running it again.",
        now,
    )
}

fn interrupted_row(command: &str, observation: &str, now: f64) -> NewMessage {
    let mut row = NewMessage::new(Role::Tool, observation, now);
    row.tool_call = Some(ToolCallRecord {
        command: command.to_string(),
        exit_code: None,
        status: STATUS_INTERRUPTED.into(),
        output: String::new(),
        duration_ms: 0.0,
        delegated: None,
    });
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, role: Role, content: &str) -> StoredMessage {
        StoredMessage {
            id,
            session_id: "s".into(),
            role,
            content: content.into(),
            tool_call: None,
            usage: None,
            reasoning: None,
            timestamp: 0.0,
        }
    }

    fn turn() -> OpenTurn {
        OpenTurn {
            id: 1,
            session_id: "s".into(),
            request_message_id: 1,
            started_at: 0.0,
        }
    }

    #[test]
    fn a_turn_stopped_at_a_command_records_it_as_not_completed() {
        let last = row(2, Role::Assistant, "Sure.\n```bash\nsleep 5; touch x\n```");
        let (rows, r) = notes_for(&turn(), Some(&last), 9.0);
        assert_eq!(r.pending_command.as_deref(), Some("sleep 5; touch x"));
        assert_eq!(rows.len(), 2);
        let tc = rows[0].tool_call.as_ref().unwrap();
        assert_eq!((tc.status.as_str(), tc.exit_code), ("interrupted", None));
        assert_eq!(rows[0].role, Role::Tool);
        assert!(rows[1].role == Role::Error && rows[1].content.contains("not run again"));
    }

    #[test]
    fn a_turn_stopped_while_answering_gets_only_a_note() {
        for last in [
            None,
            Some(row(3, Role::Tool, "[Command result: exit code 0]")),
        ] {
            let (rows, r) = notes_for(&turn(), last.as_ref(), 9.0);
            assert_eq!((rows.len(), r.pending_command, r.noted), (1, None, true));
            assert_eq!(rows[0].role, Role::Error);
        }
    }

    #[test]
    fn a_turn_whose_answer_was_stored_is_closed_without_a_note() {
        for last in [
            row(2, Role::Assistant, "The disk has 40 GB free."),
            row(2, Role::Error, "Provider error: boom"),
        ] {
            let (rows, r) = notes_for(&turn(), Some(&last), 9.0);
            assert!(rows.is_empty() && !r.noted);
        }
    }
}
