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

use crate::domain::codeblock::extract_blocks;
use crate::domain::profile::{AgentProfile, valid_agent_id};

/// How many delegations deep a turn may go (a sub-agent of a sub-agent is depth 2).
pub const MAX_DEPTH: usize = 2;

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
    let body = block.body.trim();
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
