//! Delegation: an agent hands a sub-task to one of its own sub-agents with a block
//!
//! ````text
//! ```delegate
//! scout
//! find the three largest files in ~/Downloads
//! ```
//! ````
//!
//! (first line the sub-agent's id, then the task; `scout: task` on one line works too). The
//! sub-agent's turn runs with its own effective profile and its answer comes back as the
//! observation. Chains stop at [`MAX_DEPTH`]: the person's agent, its sub-agent, and that
//! sub-agent's sub-agent.
//!
//! A delegation tree cannot run away:
//!
//! * **One budget** ([`Budget`]): every model call and every token of every turn of the tree —
//!   the person's own turn and all its sub-agents' — counts against the budget of the request
//!   that started it (`agent.delegation_budget_calls`, `agent.delegation_budget_tokens`). When
//!   it is used up no turn of the tree calls the model again, and the person is told.
//! * **No hand-me-downs** ([`same_task`]): a task that is the delegating turn's own request (or
//!   an earlier one up the chain), handed down unchanged but for case, spacing and
//!   punctuation, is refused.
//! * **No cycles**: a delegation to an agent already in the chain is refused.
//! * **A bounded fan-out** ([`MAX_FAN_OUT`]): one reply hands out at most this many tasks; the
//!   model is told which blocks beyond it were not run.

use crate::domain::codeblock::extract_blocks;
use crate::domain::profile::{AgentProfile, valid_agent_id};

/// How many delegations deep a turn may go (a sub-agent of a sub-agent is depth 2).
pub const MAX_DEPTH: usize = 2;

/// Most delegations one reply may hand out; the model is told about the rest, which do not run.
pub const MAX_FAN_OUT: usize = 4;

/// What one request (its whole delegation tree) may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Model calls.
    pub calls: usize,
    /// Tokens (prompt and completion, as the servers report them).
    pub tokens: u64,
}

impl Default for Budget {
    /// 24 calls and 250,000 tokens: a request that delegates a few sub-tasks uses a fraction
    /// of it (the person's agent alone makes at most 10 calls), a runaway tree stops there.
    fn default() -> Self {
        Budget {
            calls: 24,
            tokens: 250_000,
        }
    }
}

/// What a request has spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spent {
    /// Model calls made.
    pub calls: usize,
    /// Tokens used.
    pub tokens: u64,
}

/// Why a request may make no further model call: its budget (its sub-agents' spending
/// included) is used up. The text names the setting that raises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BudgetSpent {
    /// The calls are used up.
    #[error(
        "this request has used its budget of {budget} model calls (its sub-agents' included; setting agent.delegation_budget_calls)"
    )]
    Calls {
        /// The budget's calls.
        budget: usize,
    },
    /// The tokens are used up.
    #[error(
        "this request has used its budget of {budget} tokens ({spent} so far, its sub-agents' included; setting agent.delegation_budget_tokens)"
    )]
    Tokens {
        /// The budget's tokens.
        budget: u64,
        /// The tokens spent so far.
        spent: u64,
    },
}

impl Spent {
    /// Why no further model call may be made within `budget`, or `None` when one may.
    ///
    /// ```
    /// use sayri_core::domain::agents::delegation::{Budget, Spent};
    /// let b = Budget { calls: 3, tokens: 1000 };
    /// assert!(Spent { calls: 2, tokens: 999 }.exhausted(&b).is_none());
    /// assert!(Spent { calls: 3, tokens: 0 }.exhausted(&b).unwrap().to_string().contains("3 model calls"));
    /// assert!(Spent { calls: 0, tokens: 1000 }.exhausted(&b).unwrap().to_string().contains("1000 tokens"));
    /// ```
    pub fn exhausted(&self, budget: &Budget) -> Option<BudgetSpent> {
        if self.calls >= budget.calls {
            return Some(BudgetSpent::Calls {
                budget: budget.calls,
            });
        }
        if self.tokens >= budget.tokens {
            return Some(BudgetSpent::Tokens {
                budget: budget.tokens,
                spent: self.tokens,
            });
        }
        None
    }
}

/// Whether `task` is `request` handed down unchanged: the same words, whatever the case,
/// spacing and punctuation.
///
/// ```
/// use sayri_core::domain::agents::delegation::same_task;
/// assert!(same_task("Check things, please!", "check  things please"));
/// assert!(!same_task("check the disk of ~/Downloads", "check things please"));
/// ```
pub fn same_task(task: &str, request: &str) -> bool {
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(task), words(request));
    !a.is_empty() && a == b
}

/// A request to hand a task to a sub-agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    /// The sub-agent's id as written.
    pub agent_id: String,
    /// The task text.
    pub task: String,
}

/// The first ```` ```delegate ```` block of `answer`, if it names an id and a task.
///
/// ```
/// use sayri_core::domain::agents::delegation::delegation_block;
/// let d = delegation_block("On it.\n```delegate\nscout\nlist ~/Downloads\n```").unwrap();
/// assert_eq!((d.agent_id.as_str(), d.task.as_str()), ("scout", "list ~/Downloads"));
/// let d = delegation_block("```delegate\nscout: list ~/Downloads\n```").unwrap();
/// assert_eq!(d.task, "list ~/Downloads");
/// ```
pub fn delegation_block(answer: &str) -> Option<Delegation> {
    let block = extract_blocks(answer)
        .into_iter()
        .find(|b| b.lang == "delegate" && b.closed)?;
    parse_delegation(&block.body)
}

/// Every ```` ```delegate ```` block of `answer` that names an id and a task, in order.
///
/// ```
/// use sayri_core::domain::agents::delegation::delegation_blocks;
/// let d = delegation_blocks("```delegate\na: one\n```\n```delegate\nb\ntwo\n```");
/// assert_eq!(d.iter().map(|d| d.agent_id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
/// ```
pub fn delegation_blocks(answer: &str) -> Vec<Delegation> {
    extract_blocks(answer)
        .into_iter()
        .filter(|b| b.lang == "delegate" && b.closed)
        .filter_map(|b| parse_delegation(&b.body))
        .collect()
}

/// The id and task of one block's body.
fn parse_delegation(body: &str) -> Option<Delegation> {
    let body = body.trim();
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let (id, task) = match first.split_once(':') {
        Some((id, inline)) if rest.trim().is_empty() => (id, inline.to_string()),
        _ => (first, rest.to_string()),
    };
    let (id, task) = (id.trim(), task.trim());
    (valid_agent_id(id) && !task.is_empty()).then(|| Delegation {
        agent_id: id.to_string(),
        task: task.to_string(),
    })
}

/// The one prompt line that offers delegation to `subagents`, with a newline before it, to be
/// appended to the system prompt (empty when there are none, so an agent without sub-agents
/// pays no tokens for it).
pub fn prompt_line(subagents: &[AgentProfile]) -> String {
    if subagents.is_empty() {
        return String::new();
    }
    let list: Vec<String> = subagents
        .iter()
        .take(8)
        .map(|a| {
            let what = if a.description.trim().is_empty() {
                a.name.trim()
            } else {
                a.description.trim()
            };
            let what: String = what.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("{} ({})", a.id, what.chars().take(32).collect::<String>())
        })
        .collect();
    format!(
        "\n- Sub-agents: {}. To delegate, reply with only a ```delegate block: the id, then the task on the next line.\n",
        list.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::prompt;
    use crate::domain::tokens::exact::ExactTokenizer;

    fn sub(id: &str, description: &str) -> AgentProfile {
        AgentProfile {
            id: id.into(),
            name: id.into(),
            description: description.into(),
            ..AgentProfile::default()
        }
    }

    #[test]
    fn the_delegation_line_is_one_short_line_and_costs_nothing_without_sub_agents() {
        let base = prompt::build_system_prompt(
            &AgentProfile::builtin_default(),
            &[],
            &prompt::Host {
                tools: prompt::DesktopTools::ALL,
                ..prompt::Host::default()
            },
        );
        assert_eq!(prompt_line(&[]), "");
        let subs = [
            sub("scout", "Finds files and reads logs"),
            sub("release-chores", "Tags releases and writes changelogs"),
        ];
        let line = prompt_line(&subs);
        assert_eq!(line.trim().lines().count(), 1, "{line}");
        let with = format!("{base}{line}");
        let tokenizer = ExactTokenizer::load().unwrap();
        let (n0, n1) = (tokenizer.count(&base), tokenizer.count(&with));
        println!(
            "default agent fixed prompt: {n0} tokens; with 2 sub-agents: {n1} (+{})",
            n1 - n0
        );
        assert!(n1 <= 350, "{n1} tokens with two sub-agents:\n{with}");
        assert!(
            n1 - n0 <= 50,
            "the delegation line costs {} tokens: {line}",
            n1 - n0
        );
    }
}
