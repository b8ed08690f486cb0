//! `sayri sessions list|show|rename|delete` (through the daemon).

use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::params::{
    SessionDeleteParams, SessionGetParams, SessionRenameParams, SessionsListParams,
};
use sayri_protocol::reply::sessions::{
    Delegated, SessionGetReply, SessionSummary, ToolCall, Usage,
};

/// `sayri sessions …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SessionsAction {
    /// List conversations, newest first.
    List {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one conversation with its messages and command steps.
    Show {
        /// Session id, or a unique prefix of at least 4 characters.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rename a conversation.
    Rename {
        /// Session id, or a unique prefix of at least 4 characters.
        id: String,
        /// New title.
        title: String,
    },
    /// Delete a conversation and its messages.
    Delete {
        /// Session id, or a unique prefix of at least 4 characters.
        id: String,
    },
}

/// Token usage of a run of messages, as the provider reported it.
#[derive(Default)]
struct TurnUsage {
    prompt: u64,
    completion: u64,
    calls: u64,
}

impl TurnUsage {
    fn add(&mut self, usage: &Usage) {
        self.prompt += u64::from(usage.prompt_tokens);
        self.completion += u64::from(usage.completion_tokens);
        self.calls += 1;
    }

    /// Adds what a delegation recorded with its step (its sub-agent's calls and tokens).
    fn add_delegated(&mut self, d: &Delegated) {
        self.prompt += d.prompt_tokens;
        self.completion += d.completion_tokens;
        self.calls += d.model_calls;
    }

    fn line(&self, what: &str) -> String {
        format!(
            "  ({what}: {} prompt + {} completion tokens over {} model call{}, as the provider reported)",
            self.prompt,
            self.completion,
            self.calls,
            if self.calls == 1 { "" } else { "s" }
        )
    }
}

/// Prints a `session_get` result: the title, every message (command steps with their exit
/// code and stored output; a delegation with its sub-agent's session and what it spent), the
/// provider-reported token usage after each turn and in total, sub-agents included.
fn print_session(v: &SessionGetReply) {
    println!("{}", terminal_safe(&v.title));
    let mut turn = TurnUsage::default();
    let mut total = TurnUsage::default();
    let flush = |turn: &mut TurnUsage| {
        if turn.calls > 0 {
            println!("{}", turn.line("turn"));
        }
        *turn = TurnUsage::default();
    };
    for m in &v.messages {
        let role = m.role.as_str();
        if role == "user" {
            flush(&mut turn);
        }
        if let Some(tc) = &m.tool_call {
            println!(
                "[{role}] $ {} → {}",
                terminal_safe(&tc.command),
                step_result(tc)
            );
            for line in tc.output.lines() {
                println!("    {}", terminal_safe(line));
            }
            if let Some(d) = &tc.delegated {
                println!("    {}", delegated_line(d));
                turn.add_delegated(d);
                total.add_delegated(d);
            }
        } else if role == "error" {
            // A failed request: an event, not something Sayri said.
            println!("[error] ✗ {}", terminal_safe(&m.content));
        } else {
            println!("[{}] {}", terminal_safe(role), terminal_safe(&m.content));
        }
        if let Some(u) = &m.usage {
            turn.add(u);
            total.add(u);
        }
    }
    flush(&mut turn);
    if total.calls > 0 {
        println!("{}", total.line("session total"));
    }
}

/// The line under a delegation step: the sub-agent, its session (shown with `sessions show`),
/// and what it spent.
fn delegated_line(d: &Delegated) -> String {
    let calls = d.model_calls;
    format!(
        "↳ sub-agent {}, session {}: {} prompt + {} completion tokens over {calls} model call{}",
        terminal_safe(&d.agent_id),
        terminal_safe(&d.session_id),
        d.prompt_tokens,
        d.completion_tokens,
        if calls == 1 { "" } else { "s" }
    )
}

/// Prints a `sessions_list` result, each sub-agent's session under the session that delegated
/// to it (when both are listed).
fn print_list(list: &[SessionSummary]) {
    let listed: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    let line = |s: &SessionSummary, indent: &str| {
        println!(
            "{indent}{}  {:>3} msgs  {}",
            s.id,
            s.messages,
            terminal_safe(&s.title)
        );
    };
    for s in list {
        if s.parent_id.as_deref().is_some_and(|p| listed.contains(&p)) {
            continue;
        }
        line(s, "");
        for child in list
            .iter()
            .filter(|c| c.parent_id.as_deref() == Some(&s.id))
        {
            line(child, "  ↳ ");
        }
    }
}

/// Runs `sayri sessions …`.
pub(crate) async fn run(
    paths: &Paths,
    allow_start: bool,
    action: SessionsAction,
) -> anyhow::Result<()> {
    let mut c = connect_or_start(paths, allow_start).await?;
    let remote = |e: sayri_client::client::ClientError| anyhow::anyhow!("{e}");
    match action {
        SessionsAction::List { limit, json } => {
            let v = c
                .request_with(&SessionsListParams { limit: Some(limit) })
                .await
                .map_err(remote)?;
            if json {
                crate::cli::print_json(&v)?;
            } else {
                if v.is_empty() {
                    println!("no conversations yet — start one with: sayri ask \"…\"");
                }
                print_list(&v);
            }
        }
        SessionsAction::Show { id, json } => {
            let v = c
                .request_with(&SessionGetParams { session_id: id })
                .await
                .map_err(remote)?;
            if json {
                return crate::cli::print_json(&v);
            }
            print_session(&v);
        }
        SessionsAction::Rename { id, title } => {
            c.request_with(&SessionRenameParams {
                session_id: id,
                title,
            })
            .await
            .map_err(remote)?;
            println!("renamed");
        }
        SessionsAction::Delete { id } => {
            let v = c
                .request_with(&SessionDeleteParams {
                    session_id: id.clone(),
                })
                .await
                .map_err(remote)?;
            if v.deleted {
                println!("deleted");
            } else {
                anyhow::bail!("session not found: {id}");
            }
        }
    }
    Ok(())
}

/// How a stored command step ended, for `sessions show`: `exit N`, or its status when it has no
/// exit code (`interrupted (not completed)` after a crash, `killed`).
fn step_result(tool_call: &ToolCall) -> String {
    match tool_call.exit_code {
        Some(code) => format!("exit {code}"),
        None => match tool_call.status.as_str() {
            "interrupted" => "interrupted (not completed, not run again)".into(),
            "" => "no exit code".into(),
            s => terminal_safe(s).into_owned(),
        },
    }
}
