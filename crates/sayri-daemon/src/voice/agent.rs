//! The core's turns as the voice loop's agent: a spoken query runs as a local turn of the
//! active agent in the active session (resolved as every turn is), announced by the voice
//! state machine instead of the core, and its answer text is handed to the loop as it streams.

use crate::brain::{Brain, BroadcastSink};
use sayri_core::assistant::TurnOptions;
use sayri_core::engine::{CoreEvent, EventSink};
use sayri_voice::voice_loop::Agent;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Runs spoken queries as core turns.
pub struct CoreAgent {
    brain: Arc<Brain>,
    rt: tokio::runtime::Handle,
    events: BroadcastSink,
}

impl CoreAgent {
    /// An agent running turns of `brain`'s core on runtime `rt`; `events` reports a query the
    /// core refused.
    pub fn new(brain: Arc<Brain>, rt: tokio::runtime::Handle, events: BroadcastSink) -> CoreAgent {
        CoreAgent { brain, rt, events }
    }
}

/// Passes the turn's answer text on (never blocks: an unbounded channel).
struct AnswerTap(mpsc::UnboundedSender<String>);

impl EventSink for AnswerTap {
    fn emit(&self, event: CoreEvent) {
        if let CoreEvent::AssistantDelta(d) = event {
            let _ = self.0.send(d);
        }
    }
}

impl Agent for CoreAgent {
    /// Runs `query` as a core turn and returns its answer. Every failure is reported to the
    /// clients once and answers `""` (nothing is spoken): the core reports a failed turn
    /// itself; a query the core refuses (a typed request is running) is reported here; a
    /// turn cut short (`cancel`, `interrupt`) needs no report.
    fn answer(
        &self,
        query: &str,
        cancel: &CancellationToken,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<String, String> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let options = TurnOptions {
            announce: false,
            observer: Some(Arc::new(AnswerTap(tx))),
        };
        let turn = {
            let _inside = self.rt.enter();
            match self.brain.core.start_local_turn(query, options) {
                Ok(turn) => turn,
                Err(e) => {
                    self.events.emit(CoreEvent::Error(format!(
                        "The spoken request was not sent: {e}"
                    )));
                    return Ok(String::new());
                }
            }
        };
        let (generation, session) = (turn.generation, turn.session_id.clone());
        let core = &self.brain.core;
        self.rt.block_on(async {
            let outcome = turn.outcome();
            tokio::pin!(outcome);
            loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => {
                        core.interrupt_turn(generation);
                        self.brain.broker.cancel_session(&session);
                        return Ok(String::new());
                    }
                    Some(piece) = rx.recv() => on_text(&piece),
                    out = &mut outcome => {
                        while let Ok(piece) = rx.try_recv() {
                            on_text(&piece);
                        }
                        return Ok(match out {
                            Ok(o) if !o.cancelled && o.error.is_none() => {
                                o.text.unwrap_or_default()
                            }
                            _ => String::new(),
                        });
                    }
                }
            }
        })
    }
}
