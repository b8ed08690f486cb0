//! What the turns of one request share: the person's turn and every sub-agent turn it
//! delegates (its tree).
//!
//! * **One budget**: each model call of any turn of the tree takes one call from it first
//!   ([`Tree::take_call`]) and adds its tokens after; when it is used up, no turn calls the
//!   model again (see `domain::agents::delegation`).
//! * **One record of outside text**: every step of every turn adds what it showed the model
//!   (command output, a sub-agent's answer, history search hits, a skill's file) and every
//!   command that ran; [`Tree::outside_origin`] asks `domain::provenance` whether a proposed
//!   command came from that text, with the person's own words — the request that started the
//!   tree, never a delegated task — as what is theirs.

use crate::domain::agents::delegation::{Budget, BudgetSpent, Spent};
use crate::domain::provenance::{self, Evidence, FromOutside, OutsideText};
use crate::ports::Usage;
use std::sync::{Arc, Mutex, MutexGuard};

/// The shared state of one request's delegation tree.
pub(super) struct Tree {
    /// The request that started the tree, as the person wrote it.
    person: String,
    /// What the tree may spend.
    budget: Budget,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    spent: Spent,
    seen: Vec<OutsideText>,
    ran: Vec<String>,
}

impl Tree {
    /// The tree of a request whose person wrote `person`.
    pub(super) fn new(person: &str, budget: Budget) -> Arc<Tree> {
        Arc::new(Tree {
            person: person.to_string(),
            budget,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes one model call from the budget; `Err` says why there is none left (then nothing
    /// is taken).
    pub(super) fn take_call(&self) -> Result<(), BudgetSpent> {
        let mut s = self.state();
        if let Some(why) = s.spent.exhausted(&self.budget) {
            return Err(why);
        }
        s.spent.calls += 1;
        Ok(())
    }

    /// Adds the tokens of a model call: the server's report, else `estimate`.
    pub(super) fn add_tokens(&self, usage: Option<Usage>, estimate: usize) {
        let n = usage.map_or(estimate as u64, |u| {
            u64::from(u.prompt_tokens) + u64::from(u.completion_tokens)
        });
        self.state().spent.tokens += n;
    }

    /// What the tree has spent so far.
    pub(super) fn spent(&self) -> Spent {
        self.state().spent
    }

    /// The budget.
    pub(super) fn budget(&self) -> Budget {
        self.budget
    }

    /// Records the text step `step` put in front of the model.
    pub(super) fn saw(&self, step: &str, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        self.state().seen.push(OutsideText {
            step: step.to_string(),
            text: text.to_string(),
        });
    }

    /// Whether any step of the request has put outside text in front of the model.
    pub(super) fn has_seen_outside(&self) -> bool {
        !self.state().seen.is_empty()
    }

    /// Records a command that ran (it is the request's own from now on).
    pub(super) fn ran(&self, command: &str) {
        self.state().ran.push(command.to_string());
    }

    /// Whether `command` comes from outside text the tree has seen (see `domain::provenance`).
    pub(super) fn outside_origin(&self, command: &str) -> Option<FromOutside> {
        let s = self.state();
        provenance::from_outside(
            command,
            &Evidence {
                person: &self.person,
                ran: &s.ran,
                seen: &s.seen,
            },
        )
    }
}
