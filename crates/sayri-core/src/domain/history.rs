//! History by token budget, not by message count.
//!
//! A request is: `[system prompt] + [summary of older messages] + recent messages verbatim +
//! the current request`. Recent messages are taken newest-first while they fit
//! [`HistoryBudget::verbatim_tokens`]; everything older is summarised into one line per
//! message (newest-first while it fits [`HistoryBudget::summary_tokens`]) in a user message
//! before the history, with the `search_history` escape hatch named so the model can recall
//! verbatim details. The system prompt itself never changes with the history, so every request
//! of a session starts with the same bytes (servers reuse their prompt cache) and nothing can
//! push it out. The model's context window may cut the history further
//! (see [`super::context`]).
//!
//! Replay rules: `user` rows as user; `assistant` rows as assistant (their content only —
//! reasoning is never replayed); `tool` rows as the **observation** the model saw (role user),
//! so a replayed conversation keeps the command results; `system` rows and error records
//! (`error` rows) are not replayed, not even in the summary. Consecutive messages of one role are merged (some chat templates
//! require alternation).

use super::context::Transcript;
use super::tokens::TokenEstimator;
use crate::ports::{ChatMessage, Role, StoredMessage};

/// Token budget of the replayed history. The default fits a 4 k-context local model:
/// ≤ 350 prompt + 1 000 verbatim + 200 summary + the current turn's steps + 512 completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryBudget {
    /// Tokens for recent messages replayed word for word.
    pub verbatim_tokens: usize,
    /// Tokens for the one-line summaries of older messages.
    pub summary_tokens: usize,
}

impl Default for HistoryBudget {
    fn default() -> Self {
        HistoryBudget {
            verbatim_tokens: 1000,
            summary_tokens: 200,
        }
    }
}

/// First line of the summary message.
pub const SUMMARY_TITLE: &str =
    "[Earlier in this conversation (summary; use search_history for details)]";

/// Characters kept of each summarised message.
pub const SUMMARY_SNIPPET_CHARS: usize = 90;

/// How a stored message is replayed to the model, or `None` if it is not.
pub fn replay(m: &StoredMessage) -> Option<ChatMessage> {
    match m.role {
        Role::System => None,
        Role::User => Some(ChatMessage::new(Role::User, m.content.clone())),
        Role::Error => None,
        Role::Assistant => Some(ChatMessage::new(Role::Assistant, m.content.clone())),
        Role::Tool => Some(ChatMessage::new(Role::User, m.content.clone())),
    }
}

fn summary_line(m: &StoredMessage) -> Option<String> {
    let text = match (&m.role, &m.tool_call) {
        (Role::System | Role::Error, _) => return None,
        (Role::Tool, Some(t)) => format!(
            "Ran `{}` (exit {})",
            t.command,
            t.exit_code.map_or("none".to_string(), |c| c.to_string())
        ),
        _ => m.content.split_whitespace().collect::<Vec<_>>().join(" "),
    };
    if text.is_empty() {
        return None;
    }
    let who = match m.role {
        Role::User => "User",
        Role::Tool => "Tool",
        _ => "Sayri",
    };
    let mut snippet: String = text.chars().take(SUMMARY_SNIPPET_CHARS).collect();
    if text.chars().count() > SUMMARY_SNIPPET_CHARS {
        snippet.push('…');
    }
    Some(format!("- {who}: {snippet}"))
}

/// Builds the transcript of a new turn: `system_prompt`, the summary of older messages and
/// the recent history of `past` within `budget` (counted with `est`), then `current`.
pub fn build_transcript(
    system_prompt: &str,
    past: &[StoredMessage],
    current: &str,
    budget: &HistoryBudget,
    est: &TokenEstimator,
) -> Transcript {
    let mut used = 0;
    let mut split = past.len();
    for (i, m) in past.iter().enumerate().rev() {
        let Some(msg) = replay(m) else {
            split = i;
            continue;
        };
        let cost = est.count_message(&msg.content);
        if used + cost > budget.verbatim_tokens {
            break;
        }
        used += cost;
        split = i;
    }
    // The replayed history starts with something the person wrote.
    while split < past.len() && past[split].role != Role::User {
        split += 1;
    }
    let (older, recent) = past.split_at(split);

    let mut lines = Vec::new();
    let mut sum_used = 0;
    for m in older.iter().rev() {
        if let Some(line) = summary_line(m) {
            let cost = est.count(&line) + 1;
            if sum_used + cost > budget.summary_tokens {
                break;
            }
            sum_used += cost;
            lines.push(line);
        }
    }
    let summary = (!older.is_empty()).then(|| {
        lines.reverse();
        if lines.is_empty() {
            lines.push("- (older messages omitted)".into());
        }
        format!("{SUMMARY_TITLE}\n{}", lines.join("\n"))
    });

    let mut history: Vec<ChatMessage> = Vec::new();
    for msg in recent.iter().filter_map(replay) {
        push_merged(&mut history, msg);
    }
    Transcript {
        system: system_prompt.to_string(),
        summary,
        history,
        current: current.to_string(),
        current_images: Vec::new(),
        steps: Vec::new(),
    }
}

/// Appends `msg`, merging it into the previous message when both have the same role.
pub fn push_merged(out: &mut Vec<ChatMessage>, msg: ChatMessage) {
    match out.last_mut() {
        Some(last) if last.role == msg.role && msg.role != Role::System => {
            last.content.push_str("\n\n");
            last.content.push_str(&msg.content);
            last.images.extend(msg.images);
        }
        _ => out.push(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::context::ContextBudget;
    use crate::ports::ToolCallRecord;

    fn render(system: &str, past: &[StoredMessage], current: &str) -> Vec<ChatMessage> {
        let est = TokenEstimator::conservative();
        build_transcript(system, past, current, &HistoryBudget::default(), &est)
            .render(&ContextBudget::default(), &est)
            .unwrap()
    }

    fn msg(id: i64, role: Role, content: &str) -> StoredMessage {
        StoredMessage {
            id,
            session_id: "s".into(),
            role,
            content: content.into(),
            tool_call: None,
            usage: None,
            reasoning: Some("SECRET REASONING".into()),
            timestamp: id as f64,
        }
    }

    #[test]
    fn short_history_is_replayed_verbatim_with_tool_observations() {
        let mut tool = msg(3, Role::Tool, "[exit 0]\n/dev/sda1 40G free");
        tool.tool_call = Some(ToolCallRecord {
            command: "df -h".into(),
            exit_code: Some(0),
            status: "success".into(),
            output: "/dev/sda1 40G free".into(),
            duration_ms: 3.0,
            delegated: None,
        });
        let past = vec![
            msg(1, Role::User, "disk?"),
            msg(2, Role::Assistant, "```bash\ndf -h\n```"),
            tool,
            msg(4, Role::Assistant, "40G free."),
            msg(5, Role::Error, "Sayri Error: boom"),
        ];
        let m = render("SYS", &past, "and memory?");
        let roles: Vec<_> = m.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        assert_eq!(m[0].content, "SYS");
        assert!(m[3].content.contains("40G free"));
        assert_eq!(m[5].content, "and memory?");
        assert!(
            m.iter()
                .all(|x| !x.content.contains("SECRET REASONING") && !x.content.contains("boom"))
        );
    }

    #[test]
    fn long_history_is_cut_by_tokens_and_summarised() {
        let past: Vec<_> = (0..200)
            .map(|i| {
                msg(
                    i,
                    if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    &format!("message number {i} about printers and the weather today"),
                )
            })
            .collect();
        let budget = HistoryBudget::default();
        let est = TokenEstimator::conservative();
        let t = build_transcript("SYS", &past, "now?", &budget, &est);
        assert_eq!(
            t.system, "SYS",
            "the system prompt never carries the history"
        );
        let verbatim: usize = t
            .history
            .iter()
            .map(|x| est.count_message(&x.content))
            .sum();
        assert!(verbatim <= budget.verbatim_tokens, "{verbatim}");
        assert!(
            t.history.len() > 10,
            "recent messages kept: {}",
            t.history.len()
        );
        assert_eq!(t.history[0].role, Role::User);
        assert!(
            t.history
                .iter()
                .any(|x| x.content.contains("message number 199"))
        );
        let summary = t.summary.unwrap();
        assert!(summary.starts_with(SUMMARY_TITLE));
        assert!(summary.contains("- User: message number"));
        assert!(
            est.count(&summary) <= budget.summary_tokens + 30,
            "{}",
            est.count(&summary)
        );
        assert!(
            !summary.contains("message number 0 "),
            "oldest dropped from the summary"
        );
    }

    #[test]
    fn consecutive_user_messages_are_merged() {
        let past = vec![msg(1, Role::User, "first (interrupted)")];
        let m = render("S", &past, "second");
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].content, "first (interrupted)\n\nsecond");
    }
}
