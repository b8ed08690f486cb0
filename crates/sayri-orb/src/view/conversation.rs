//! The conversation part of the view: turns made of the request, streamed text and tool steps.

use super::ViewModel;
use crate::safe_text::visible;
use sayri_protocol::reply::sessions::SessionGetReply;

/// A command the assistant ran (or tried to) during a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolStep {
    /// The command (visible form).
    pub command: String,
    /// Its output as the daemon sent it — already redacted by the daemon — in visible form;
    /// `None` while it runs.
    pub output: Option<String>,
    /// Exit code, when it exited.
    pub exit_code: Option<i64>,
}

impl ToolStep {
    /// True until `tool_finish` arrives.
    pub fn running(&self) -> bool {
        self.output.is_none()
    }
}

/// One piece of a turn, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnItem {
    /// Answer text (raw model text; the card renders it through [`crate::markdown::parse`]).
    Text(String),
    /// A command step.
    Step(ToolStep),
}

/// A request and everything that answered it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Turn {
    /// What the person asked (visible form); `None` for a turn joined midway.
    pub user: Option<String>,
    /// Streamed text and steps, in order.
    pub items: Vec<TurnItem>,
    /// Reasoning kept apart from the answer (visible form).
    pub reasoning: String,
    /// `assistant_done` arrived: the last text item is the final answer.
    pub done: bool,
    /// A failure during the turn (visible form).
    pub error: Option<String>,
}

impl Turn {
    /// All answer text of the turn, joined (raw).
    pub fn answer_text(&self) -> String {
        let mut s = String::new();
        for item in &self.items {
            if let TurnItem::Text(t) = item {
                s.push_str(t);
            }
        }
        s
    }

    /// The tool steps of the turn.
    pub fn steps(&self) -> impl Iterator<Item = &ToolStep> {
        self.items.iter().filter_map(|i| match i {
            TurnItem::Step(s) => Some(s),
            TurnItem::Text(_) => None,
        })
    }
}

impl ViewModel {
    /// The turn events of a running request append to; a new one when the last has ended.
    fn current_turn(&mut self) -> &mut Turn {
        if self.turns.last().is_none_or(|t| t.done) {
            self.turns.push(Turn::default());
        }
        let last = self.turns.len() - 1;
        &mut self.turns[last]
    }

    pub(super) fn user_turn(&mut self, text: &str) {
        self.turns.push(Turn {
            user: Some(visible(text).into_owned()),
            ..Turn::default()
        });
        self.partial.clear();
        self.changes.conversation = true;
    }

    pub(super) fn delta(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let turn = self.current_turn();
        match turn.items.last_mut() {
            Some(TurnItem::Text(t)) => t.push_str(delta),
            _ => turn.items.push(TurnItem::Text(delta.to_string())),
        }
        self.changes.conversation = true;
    }

    pub(super) fn reasoning(&mut self, delta: &str) {
        let turn = self.current_turn();
        turn.reasoning.push_str(&visible(delta));
        self.changes.conversation = true;
    }

    /// `assistant_done`: the final text replaces what streamed after the last step.
    pub(super) fn done(&mut self, text: &str) {
        let turn = self.current_turn();
        if matches!(turn.items.last(), Some(TurnItem::Text(_))) {
            turn.items.pop();
        }
        if !text.is_empty() {
            turn.items.push(TurnItem::Text(text.to_string()));
        }
        turn.done = true;
        self.changes.conversation = true;
    }

    pub(super) fn tool_start(&mut self, command: &str) {
        let turn = self.current_turn();
        turn.items.push(TurnItem::Step(ToolStep {
            command: visible(command).into_owned(),
            output: None,
            exit_code: None,
        }));
        self.changes.conversation = true;
    }

    /// `tool_finish`: completes the latest running step with this command (or adds one, for a
    /// finish whose start this client did not see).
    pub(super) fn tool_finish(&mut self, command: &str, output: &str, exit_code: Option<i64>) {
        let command = visible(command).into_owned();
        let output = visible(output).into_owned();
        let turn = self.current_turn();
        let running = turn.items.iter_mut().rev().find_map(|i| match i {
            TurnItem::Step(s) if s.running() && s.command == command => Some(s),
            _ => None,
        });
        match running {
            Some(step) => {
                step.output = Some(output);
                step.exit_code = exit_code;
            }
            None => turn.items.push(TurnItem::Step(ToolStep {
                command,
                output: Some(output),
                exit_code,
            })),
        }
        self.changes.conversation = true;
    }

    pub(super) fn error_in_turn(&mut self, text: &str) {
        if let Some(turn) = self.turns.last_mut().filter(|t| !t.done) {
            turn.error = Some(visible(text).into_owned());
            self.changes.conversation = true;
        }
    }

    /// `busy false`: the request ended; a turn left open (interrupted, failed) is closed.
    pub(super) fn conversation_finished(&mut self) {
        if let Some(turn) = self.turns.last_mut()
            && !turn.done
        {
            turn.done = true;
            self.changes.conversation = true;
        }
        if !self.partial.is_empty() {
            self.partial.clear();
            self.changes.conversation = true;
        }
    }

    /// `session_get`: the stored transcript replaces the view's turns (unless a request is
    /// running, whose events are already arriving).
    pub(super) fn load_session(&mut self, session: &SessionGetReply) {
        if Some(session.id.as_str()) != self.session_id.as_deref() || self.busy {
            return;
        }
        let mut turns: Vec<Turn> = Vec::new();
        for m in &session.messages {
            let content = m.content.as_str();
            if let Some(call) = &m.tool_call {
                let step = ToolStep {
                    command: visible(&call.command).into_owned(),
                    output: Some(visible(&call.output).into_owned()),
                    exit_code: call.exit_code.map(i64::from),
                };
                last_turn(&mut turns).items.push(TurnItem::Step(step));
                continue;
            }
            match m.role.as_str() {
                "user" => turns.push(Turn {
                    user: Some(visible(content).into_owned()),
                    done: true,
                    ..Turn::default()
                }),
                "assistant" if !content.is_empty() => last_turn(&mut turns)
                    .items
                    .push(TurnItem::Text(content.to_string())),
                // A stored error record: shown as the turn's failure, not as an answer.
                "error" => last_turn(&mut turns).error = Some(visible(content).into_owned()),
                _ => {}
            }
        }
        self.turns = turns;
        self.changes.conversation = true;
    }
}

fn last_turn(turns: &mut Vec<Turn>) -> &mut Turn {
    if turns.is_empty() {
        turns.push(Turn {
            done: true,
            ..Turn::default()
        });
    }
    let last = turns.len() - 1;
    &mut turns[last]
}
