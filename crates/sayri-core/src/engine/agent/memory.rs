//! The memory steps of a turn: ```` ```recall ```` and ```` ```remember ```` blocks, and
//! `memory.auto_recall` before the first model call.
//!
//! * What a turn reads and writes is its [`MemoryScope`]: its own agent's facts, the facts for
//!   every agent unless it is a sub-agent, and its creator's only when the creator is listed in
//!   `memory.shared_with_sub_agents`. The store's answer is filtered by the scope again. The
//!   same scope bounds history searches: a sub-agent that may not read its creator's memory
//!   searches its own session only, never the person's other conversations.
//! * Recalled facts are outside text: framed in the turn's boundary, recorded as seen (a
//!   command copied from a fact is marked as from outside), and capped by
//!   `memory.recall_tokens` whole fact by whole fact.
//! * A proposed fact is checked first (length, secrets: a fact holding a vault secret is
//!   refused and never shown on a card). It is stored without a card only with
//!   `memory.auto_accept`, only in the person's own turns (a gateway's or a routine's turn
//!   proposes, never writes: someone else's words must not steer the person's agents later)
//!   and only while the request has seen no outside text (a fact copied from a command's output
//!   or a recalled fact still needs a person); otherwise a card asks (only "Allow" stores it; a
//!   `deny memory` rule refuses it unasked). Where nobody can be asked (a routine's or a
//!   gateway's turn) the fact is kept as a proposal, outside memory and never recalled, until
//!   the person accepts or rejects it (`sayri memory review`); the model is told so.

use super::{Step, Turn};
use crate::domain::context::StepObservation;
use crate::domain::frame::framed;
use crate::domain::memory::{self, MemoryScope, MemorySource, RECALL_SEARCH_LIMIT};
use crate::domain::observation::step_label;
use crate::domain::tokens::weighted_bytes;
use crate::engine::events::CoreEvent;
use crate::engine::gate::{Confirmation, GateVerdict, RefusalKind};
use crate::ports::{MemoryBook, Proposed, RecalledFact};
use sayri_permissions::Action;

impl Turn<'_> {
    /// The memory this turn may read and write.
    pub(super) fn memory_scope(&self) -> MemoryScope {
        MemoryScope::for_agent(
            &self.profile.id,
            self.profile.parent.as_deref(),
            &self.settings.memory.shared_with_sub_agents,
        )
    }

    /// The facts for `query` the turn may read, best first, redacted; `Err` holds the store's
    /// error as text.
    fn memory_search(&self, query: &str) -> Result<Vec<RecalledFact>, String> {
        let Some(book) = self.engine.memory_book() else {
            return Ok(Vec::new());
        };
        let scope = self.memory_scope();
        let found = book
            .search(query, &scope, RECALL_SEARCH_LIMIT)
            .map_err(|e| e.to_string())?;
        Ok(found
            .into_iter()
            .filter(|f| scope.reads(f.agent.as_deref()))
            .map(|f| RecalledFact {
                text: self.redacted(&f.text),
                ..f
            })
            .collect())
    }

    /// `facts` as lines within `memory.recall_tokens`, counted as recalled; `None` when none
    /// fits.
    fn recall_text(&mut self, facts: &[RecalledFact]) -> Option<(String, usize)> {
        let est = self.est;
        let (text, ids) = memory::recall_lines(facts, self.settings.memory.recall_tokens, |line| {
            est.tokens_of_weight(weighted_bytes(line))
        });
        if ids.is_empty() {
            return None;
        }
        if let Some(book) = self.engine.memory_book()
            && let Err(e) = book.mark_recalled(&ids, self.now())
        {
            self.sink.emit(CoreEvent::Error(e.to_string()));
        }
        self.out.facts_recalled += ids.len();
        Some((text, ids.len()))
    }

    /// Answers a ```` ```recall ```` block: the facts found (or, with none, matching older
    /// messages) go back to the model as the observation.
    pub(super) fn answer_recall(&mut self, step: &Step, query: &str) {
        let label = self.redacted(&format!("recall: {query}"));
        self.sink.emit(CoreEvent::ToolStart(label.clone()));
        let shown = step_label(query);
        let obs = match self.memory_search(query) {
            Err(e) => format!("[Memory search for '{shown}' failed: {e}]"),
            Ok(found) => match self.recall_text(&found) {
                Some((lines, n)) => {
                    self.tree.saw(&label, &lines);
                    let header = format!("[Memory: {n} saved fact(s) for '{shown}']");
                    framed(&header, &self.boundary, &lines, "")
                }
                None if !found.is_empty() => format!(
                    "[Memory: {} fact(s) match '{shown}', but none fits memory.recall_tokens ({} tokens).]",
                    found.len(),
                    self.settings.memory.recall_tokens
                ),
                None => self.history_fallback(&label, query),
            },
        };
        let obs = self.redacted(&obs);
        self.sink.emit(CoreEvent::ToolFinish {
            command: label,
            output: obs.clone(),
            exit_code: Some(0),
        });
        self.observe(&step.answer, StepObservation::Text(obs));
    }

    /// What a recall with no saved fact answers: matching older messages, if any.
    fn history_fallback(&mut self, label: &str, query: &str) -> String {
        let shown = step_label(query);
        let everywhere = self.memory_scope().every_agent;
        match self
            .engine
            .search_history(&self.req.session_id, query, everywhere)
        {
            Some(hits) => {
                let hits = self.redacted(&hits);
                self.tree.saw(label, &hits);
                let header =
                    format!("[Memory: no saved fact for '{shown}'; older messages that match]");
                framed(&header, &self.boundary, &hits, "")
            }
            None => format!("[Memory: no saved fact or older message matches '{shown}'.]"),
        }
    }

    /// Answers a ```` ```remember ```` block: stores the fact when allowed; the model is told
    /// what happened.
    pub(super) async fn answer_remember(&mut self, step: &Step, fact: &str) {
        let label = self.redacted(&format!("remember: {fact}"));
        self.sink.emit(CoreEvent::ToolStart(label.clone()));
        let said = self.remember(fact).await;
        let obs = self.redacted(&said);
        self.sink.emit(CoreEvent::ToolFinish {
            command: label,
            output: obs.clone(),
            exit_code: Some(0),
        });
        self.observe(&step.answer, StepObservation::Text(obs));
    }

    /// Stores `fact` for the turn's agent if the rules of the module allow it; returns what the
    /// model is told.
    async fn remember(&mut self, fact: &str) -> String {
        let Some(book) = self.engine.memory_book() else {
            return "Not saved: this Sayri has no long-term memory.".into();
        };
        let text = match memory::fact_text(fact, self.engine.ports.redactor.as_ref()) {
            Ok(t) => t,
            Err(e) => return format!("Not saved: {e}."),
        };
        let scope = self.memory_scope();
        let older = self.contradicted(&text, &scope);
        let unasked = self.settings.memory.auto_accept
            && self.req.approver_available
            && !self.tree.has_seen_outside();
        if !unasked
            && let Some((kind, why)) = self.confirm_fact(&text, scope.writes_to(), &older).await
        {
            return match kind {
                RefusalKind::NoApprover => self.propose(book.as_ref(), &text, scope.writes_to()),
                _ => format!("Not saved: {why}."),
            };
        }
        match book.remember(
            &text,
            Some(scope.writes_to()),
            MemorySource::Model,
            self.now(),
        ) {
            Ok(id) => {
                self.out.facts_saved += 1;
                format!("Saved to long-term memory as fact {id}: {text}")
            }
            Err(e) => format!("Not saved: {e}."),
        }
    }

    /// Keeps `text` as a proposal for `agent` (nobody can be asked now); returns what the
    /// model is told.
    fn propose(&mut self, book: &dyn MemoryBook, text: &str, agent: &str) -> String {
        match book.propose(text, agent, &self.req.session_id, self.now()) {
            Ok(Proposed::Known(id)) => {
                format!("Already in long-term memory as fact {id}; nothing new was saved.")
            }
            Ok(Proposed::Waiting(id)) => {
                self.out.facts_proposed += 1;
                format!(
                    "Not saved yet: nobody can confirm it here, so it waits as proposal {id} for the person to accept or reject (`sayri memory review`); it is not in memory until then."
                )
            }
            Err(e) => format!("Not saved: {e}."),
        }
    }

    /// The stored facts of the turn's own agent that `text` contradicts (same subject, another
    /// value), redacted: shown on the card so the person can choose.
    fn contradicted(&self, text: &str, scope: &MemoryScope) -> Vec<RecalledFact> {
        let (Some(book), Some(subject)) = (self.engine.memory_book(), memory::subject(text)) else {
            return Vec::new();
        };
        book.search(&subject, scope, RECALL_SEARCH_LIMIT)
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.agent.as_deref() == Some(scope.writes_to()))
            .filter(|f| memory::contradicts(text, &f.text))
            .map(|f| RecalledFact {
                text: self.redacted(&f.text),
                ..f
            })
            .collect()
    }

    /// Asks the person to confirm storing `text` for `agent`, showing the `older` facts it
    /// contradicts; `None` when allowed, else what refused it and why.
    async fn confirm_fact(
        &self,
        text: &str,
        agent: &str,
        older: &[RecalledFact],
    ) -> Option<(RefusalKind, String)> {
        let reason = if self.settings.memory.auto_accept {
            format!(
                "{} asks to remember a fact; memory.auto_accept does not apply because this request has read text from outside",
                self.profile.name
            )
        } else {
            format!(
                "{} asks to remember this fact for the agent {agent} (memory.auto_accept is off)",
                self.profile.name
            )
        };
        let verdict = self
            .engine
            .ports
            .gate
            .confirm(
                Confirmation {
                    agent: self.profile.clone(),
                    level: self.level,
                    session_id: self.req.session_id.clone(),
                    action: Action::Memory,
                    subject: text.to_string(),
                    resource: text.to_string(),
                    reason,
                    lines: older
                        .iter()
                        .map(|f| {
                            (
                                format!("older fact {}: {}", f.id, f.text),
                                format!("says otherwise; both are kept — `sayri memory review` lists them and `sayri memory forget {}` removes the older one", f.id),
                            )
                        })
                        .collect(),
                    approver_available: self.req.approver_available,
                },
                self.req.cancel.clone(),
            )
            .await;
        match verdict {
            GateVerdict::Allow { .. } => None,
            GateVerdict::Refuse { kind, message } => Some((kind, message)),
        }
    }

    /// With `memory.auto_recall`: the facts that match the person's message, framed for the
    /// first request (empty when off or none matches).
    pub(super) fn auto_recalled(&mut self) -> String {
        if !self.settings.memory.auto_recall || self.depth > 0 {
            return String::new();
        }
        let found = match self.memory_search(&self.req.text) {
            Ok(f) => f,
            Err(e) => {
                self.sink.emit(CoreEvent::Error(e));
                return String::new();
            }
        };
        let matching = memory::auto_recall_matches(&self.req.text, &found);
        let Some((lines, n)) = self.recall_text(&matching) else {
            return String::new();
        };
        self.tree.saw("memory.auto_recall", &lines);
        let header = format!("[Memory: {n} saved fact(s) that may help]");
        format!("\n\n{}", framed(&header, &self.boundary, &lines, ""))
    }
}
