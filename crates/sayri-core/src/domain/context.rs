//! The context budget: every request fits the model's context window, and the system prompt
//! is never dropped, cut or changed to make room.
//!
//! A request is `[system] + [summary of older messages] + recent history + the current
//! request + this turn's steps (answer, observation)…`. The prompt may take
//! [`ContextBudget::prompt_tokens`] (the context minus the completion cap and a safety margin).
//! When a request would not fit, [`Transcript::render`] makes room in this order, stopping as
//! soon as it fits:
//!
//! 1. drop replayed history, oldest message first;
//! 2. drop the summary of older messages;
//! 3. shorten the observations of this turn's earlier steps, oldest first;
//! 4. drop this turn's earlier steps, oldest first (the request says how many);
//! 5. shorten the latest observation to what is left.
//!
//! The system message and the current request text are always sent whole; when they alone do
//! not fit, [`ContextError::TooLong`] says so and nothing is sent.

use super::history::push_merged;
use super::observation::{CommandObservation, MIN_OBSERVATION_TOKENS};
use super::tokens::TokenEstimator;
use crate::ports::{ChatImage, ChatMessage, Role};

/// The model's context window and what a request may take of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    /// The model's context window in tokens (prompt and completion together).
    pub context_tokens: usize,
    /// Tokens kept free for the answer (the request's `max_tokens`).
    pub completion_tokens: usize,
}

impl Default for ContextBudget {
    fn default() -> Self {
        ContextBudget {
            context_tokens: Self::DEFAULT_CONTEXT_TOKENS,
            completion_tokens: Self::DEFAULT_COMPLETION_TOKENS,
        }
    }
}

/// Most tokens one observation gets, however large the context: command output is read in
/// parts, not swallowed whole.
pub const MAX_OBSERVATION_TOKENS: usize = 2000;

/// Tokens an earlier step's observation is shortened to when room is needed.
pub const SHORT_OBSERVATION_TOKENS: usize = 128;

impl ContextBudget {
    /// Context assumed when neither the settings nor the server say: a small local model.
    pub const DEFAULT_CONTEXT_TOKENS: usize = 4096;
    /// Completion cap assumed when a request sets none.
    pub const DEFAULT_COMPLETION_TOKENS: usize = 512;

    /// Prompt tokens one request may take: the context minus the completion cap minus a
    /// margin of 1/32 of the context (at least 32 tokens) for the chat template.
    pub fn prompt_tokens(&self) -> usize {
        let margin = (self.context_tokens / 32).max(32);
        self.context_tokens
            .saturating_sub(self.completion_tokens)
            .saturating_sub(margin)
    }

    /// Tokens one observation may take when `fixed` tokens (the system prompt and the current
    /// request) are always sent: a third of the rest, within
    /// [`MIN_OBSERVATION_TOKENS`]..=[`MAX_OBSERVATION_TOKENS`].
    pub fn observation_tokens(&self, fixed: usize) -> usize {
        (self.prompt_tokens().saturating_sub(fixed) / 3)
            .clamp(MIN_OBSERVATION_TOKENS, MAX_OBSERVATION_TOKENS)
    }
}

/// Why a request cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// The system prompt, the request text and the smallest observation alone exceed the
    /// prompt budget.
    #[error(
        "the request does not fit the model's context: about {needed} tokens with Sayri's instructions, but the model takes {context} tokens of which {completion} are kept for the answer. Shorten the message (or save a long text to a file and ask about the file), or raise provider.context_tokens if the model has a larger context"
    )]
    TooLong {
        /// Estimated prompt tokens of the smallest possible request.
        needed: usize,
        /// The context window.
        context: usize,
        /// Tokens kept for the answer.
        completion: usize,
    },
}

/// What the model was told after one of its answers in this turn.
#[derive(Debug, Clone, PartialEq)]
pub enum StepObservation {
    /// A fixed text (history search results, a refusal).
    Text(String),
    /// A command's result, rendered at whatever size the budget leaves.
    Command(CommandObservation),
}

/// One step of the current turn: the model's answer and what it was told next.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnStep {
    /// The model's answer as it wrote it.
    pub answer: String,
    /// The observation that followed.
    pub observation: StepObservation,
}

/// Everything a turn's requests are built from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    /// The system prompt, sent whole in every request.
    pub system: String,
    /// One-line summaries of older messages, sent as a user message before the history.
    pub summary: Option<String>,
    /// Recent history as replayed (roles alternate; the first is a user message).
    pub history: Vec<ChatMessage>,
    /// The current request text, sent whole.
    pub current: String,
    /// Images sent with the current request text (not counted in the budget: their token cost
    /// depends on the model).
    pub current_images: Vec<ChatImage>,
    /// This turn's steps so far.
    pub steps: Vec<TurnStep>,
}

/// How far [`Transcript::render`] had to go to fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cuts {
    /// History messages dropped from the front.
    history: usize,
    /// The summary dropped.
    summary: bool,
    /// Earlier steps whose observations are shortened.
    short: usize,
    /// Earlier steps dropped.
    dropped: usize,
}

impl Transcript {
    /// Estimated tokens of the parts every request carries: the system prompt and the
    /// current request text.
    pub fn fixed_tokens(&self, est: &TokenEstimator) -> usize {
        est.count_message(&self.system) + est.count_message(&self.current)
    }

    /// Fails when even the smallest request (system prompt, request text, one minimal
    /// observation) does not fit `budget`.
    pub fn check_fits(
        &self,
        budget: &ContextBudget,
        est: &TokenEstimator,
    ) -> Result<(), ContextError> {
        let needed = tokens_overhead() + self.fixed_tokens(est) + MIN_OBSERVATION_TOKENS;
        if needed > budget.prompt_tokens() {
            return Err(ContextError::TooLong {
                needed,
                context: budget.context_tokens,
                completion: budget.completion_tokens,
            });
        }
        Ok(())
    }

    fn observation_text(&self, i: usize, max_tokens: usize, est: &TokenEstimator) -> String {
        match &self.steps[i].observation {
            StepObservation::Text(t) => t.clone(),
            StepObservation::Command(c) => c.render(max_tokens, est),
        }
    }

    fn assemble(
        &self,
        cuts: Cuts,
        obs_tokens: usize,
        last_obs: Option<String>,
        est: &TokenEstimator,
    ) -> Vec<ChatMessage> {
        let mut out = vec![ChatMessage::new(Role::System, self.system.clone())];
        if !cuts.summary
            && let Some(s) = &self.summary
        {
            push_merged(&mut out, ChatMessage::new(Role::User, s.clone()));
        }
        let mut from = cuts.history.min(self.history.len());
        while from < self.history.len() && self.history[from].role != Role::User {
            from += 1;
        }
        for m in &self.history[from..] {
            push_merged(&mut out, m.clone());
        }
        let mut current = self.current.clone();
        if cuts.dropped > 0 {
            current.push_str(&format!(
                "\n\n[{} earlier step(s) of this request were left out to fit the model's context.]",
                cuts.dropped
            ));
        }
        let mut request = ChatMessage::new(Role::User, current);
        request.images = self.current_images.clone();
        push_merged(&mut out, request);
        let last = self.steps.len().saturating_sub(1);
        for i in cuts.dropped..self.steps.len() {
            let step = &self.steps[i];
            push_merged(
                &mut out,
                ChatMessage::new(Role::Assistant, step.answer.clone()),
            );
            let obs = match (&last_obs, i == last) {
                (Some(text), true) => text.clone(),
                _ if i < cuts.short => self.observation_text(i, SHORT_OBSERVATION_TOKENS, est),
                _ => self.observation_text(i, obs_tokens, est),
            };
            push_merged(&mut out, ChatMessage::new(Role::User, obs));
        }
        out
    }

    /// The messages of the next request, within `budget` (see the module docs for what is
    /// given up first). The first message is always the system prompt, unchanged.
    ///
    /// # Errors
    /// [`ContextError::TooLong`] when the system prompt, the request text and a minimal
    /// observation of the latest step do not fit.
    pub fn render(
        &self,
        budget: &ContextBudget,
        est: &TokenEstimator,
    ) -> Result<Vec<ChatMessage>, ContextError> {
        self.check_fits(budget, est)?;
        let limit = budget.prompt_tokens();
        let obs_tokens = budget.observation_tokens(self.fixed_tokens(est));
        let size = |m: &[ChatMessage]| est.count_request(m.iter().map(|m| m.content.as_str()));
        let earlier = self.steps.len().saturating_sub(1);
        let mut cuts = Cuts::default();
        loop {
            let msgs = self.assemble(cuts, obs_tokens, None, est);
            if size(&msgs) <= limit {
                return Ok(msgs);
            }
            if cuts.history < self.history.len() {
                cuts.history += 1;
            } else if !cuts.summary && self.summary.is_some() {
                cuts.summary = true;
            } else if cuts.short < earlier {
                cuts.short += 1;
            } else if cuts.dropped < earlier {
                cuts.dropped += 1;
            } else {
                return self.shorten_last(cuts, budget, est);
            }
        }
    }

    /// The last resort: the latest observation gets whatever room is left.
    fn shorten_last(
        &self,
        cuts: Cuts,
        budget: &ContextBudget,
        est: &TokenEstimator,
    ) -> Result<Vec<ChatMessage>, ContextError> {
        let limit = budget.prompt_tokens();
        let size = |m: &[ChatMessage]| est.count_request(m.iter().map(|m| m.content.as_str()));
        let without = size(&self.assemble(cuts, 0, Some(String::new()), est));
        let room = limit.saturating_sub(without);
        let too_long = |needed| ContextError::TooLong {
            needed,
            context: budget.context_tokens,
            completion: budget.completion_tokens,
        };
        let Some(last) = self.steps.len().checked_sub(1) else {
            return Err(too_long(without));
        };
        let text = self.observation_text(last, room, est);
        let msgs = self.assemble(cuts, 0, Some(text), est);
        let n = size(&msgs);
        if n <= limit {
            Ok(msgs)
        } else {
            Err(too_long(n))
        }
    }
}

/// Tokens of the request framing besides the messages.
fn tokens_overhead() -> usize {
    super::tokens::REQUEST_OVERHEAD
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::observation::Excerpt;
    use crate::ports::ExecStatus;

    fn est() -> TokenEstimator {
        TokenEstimator::conservative()
    }

    fn big_step(lines: usize) -> TurnStep {
        let text: String = (1..=lines).map(|i| format!("row {i:05} ok\n")).collect();
        TurnStep {
            answer: "```bash\ncat rows\n```".into(),
            observation: StepObservation::Command(CommandObservation::new(
                ExecStatus::Success,
                Some(0),
                Excerpt::whole(text),
                0,
                "cat rows",
                crate::domain::frame::Boundary::from_nonce(1),
            )),
        }
    }

    fn transcript(history: usize, steps: usize) -> Transcript {
        let mut h = Vec::new();
        for i in 0..history {
            h.push(ChatMessage::new(
                Role::User,
                format!("question {i} about the weather"),
            ));
            h.push(ChatMessage::new(
                Role::Assistant,
                format!("answer {i}: sunny and warm"),
            ));
        }
        Transcript {
            system: "SYSTEM PROMPT ".repeat(20),
            summary: Some("[Earlier] - User: hello".into()),
            history: h,
            current: "What is in rows?".into(),
            current_images: Vec::new(),
            steps: (0..steps).map(|_| big_step(5000)).collect(),
        }
    }

    fn size(m: &[ChatMessage]) -> usize {
        est().count_request(m.iter().map(|m| m.content.as_str()))
    }

    #[test]
    fn a_request_that_fits_is_sent_as_is() {
        let t = transcript(2, 0);
        let m = t.render(&ContextBudget::default(), &est()).unwrap();
        assert_eq!(m[0].content, t.system);
        assert_eq!(
            m[1].content,
            "[Earlier] - User: hello\n\nquestion 0 about the weather"
        );
        assert_eq!(m.last().unwrap().content, "What is in rows?");
    }

    #[test]
    fn history_goes_first_then_earlier_steps_and_the_system_prompt_never() {
        let budget = ContextBudget::default();
        let t = transcript(200, 3);
        let m = t.render(&budget, &est()).unwrap();
        assert!(size(&m) <= budget.prompt_tokens(), "{}", size(&m));
        assert_eq!(m[0].role, Role::System);
        assert_eq!(m[0].content, t.system);
        assert!(m.iter().any(|x| x.content.starts_with("What is in rows?")));
        // The replayed history went before any step was dropped.
        assert!(!m.iter().any(|x| x.content.contains("question 0 ")));
        let last = &m.last().unwrap().content;
        assert!(
            last.contains("row 00001 ok") && last.contains("row 05000 ok"),
            "{last}"
        );
    }

    #[test]
    fn a_small_context_drops_earlier_steps_and_says_so() {
        let budget = ContextBudget {
            context_tokens: 1100,
            completion_tokens: 512,
        };
        let t = transcript(0, 4);
        let m = t.render(&budget, &est()).unwrap();
        assert!(size(&m) <= budget.prompt_tokens(), "{}", size(&m));
        assert_eq!(m[0].content, t.system);
        let current = m
            .iter()
            .find(|x| x.content.starts_with("What is in rows?"))
            .unwrap();
        assert!(
            current
                .content
                .contains("earlier step(s) of this request were left out")
        );
        assert!(m.last().unwrap().content.contains("omitted …]"));
    }

    #[test]
    fn a_request_that_cannot_fit_is_refused_before_anything_is_sent() {
        let mut t = transcript(0, 0);
        t.current = "word ".repeat(5000);
        let e = t.render(&ContextBudget::default(), &est()).unwrap_err();
        assert!(
            e.to_string().contains("does not fit the model's context"),
            "{e}"
        );
        assert!(matches!(e, ContextError::TooLong { context: 4096, .. }));
    }
}
