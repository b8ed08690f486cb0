//! `sayri sessions list|show|rename|delete` (through the daemon).

use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::params::{
    SessionDeleteParams, SessionGetParams, SessionRenameParams, SessionsListParams,
};
use serde_json::Value;

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
    fn add(&mut self, usage: &Value) {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.prompt += n("prompt_tokens");
        self.completion += n("completion_tokens");
        self.calls += 1;
    }

    /// Adds what a delegation recorded with its step (its sub-agent's calls and tokens).
    fn add_delegated(&mut self, d: &Value) {
        let n = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.prompt += n("prompt_tokens");
        self.completion += n("completion_tokens");
        self.calls += n("model_calls");
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
fn print_session(v: &Value) {
    println!(
        "{}",
        terminal_safe(v.get("title").and_then(Value::as_str).unwrap_or(""))
    );
    let mut turn = TurnUsage::default();
    let mut total = TurnUsage::default();
    let flush = |turn: &mut TurnUsage| {
        if turn.calls > 0 {
            println!("{}", turn.line("turn"));
        }
        *turn = TurnUsage::default();
    };
    for m in v
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = m.get("content").and_then(Value::as_str).unwrap_or("");
        if role == "user" {
            flush(&mut turn);
        }
        if let Some(tc) = m.get("tool_call").filter(|t| !t.is_null()) {
            println!(
                "[{role}] $ {} → {}",
                terminal_safe(tc.get("command").and_then(Value::as_str).unwrap_or("")),
                step_result(tc)
            );
            let output = tc.get("output").and_then(Value::as_str).unwrap_or("");
            for line in output.lines() {
                println!("    {}", terminal_safe(line));
            }
            if let Some(d) = tc.get("delegated").filter(|d| d.is_object()) {
                println!("    {}", delegated_line(d));
                turn.add_delegated(d);
                total.add_delegated(d);
            }
        } else if role == "error" {
            // A failed request: an event, not something Sayri said.
            println!("[error] ✗ {}", terminal_safe(content));
        } else {
            println!("[{}] {}", terminal_safe(role), terminal_safe(content));
        }
        if let Some(u) = m.get("usage").filter(|u| !u.is_null()) {
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
fn delegated_line(d: &Value) -> String {
    let s = |k: &str| terminal_safe(d.get(k).and_then(Value::as_str).unwrap_or("")).into_owned();
    let n = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0);
    let calls = n("model_calls");
    format!(
        "↳ sub-agent {}, session {}: {} prompt + {} completion tokens over {calls} model call{}",
        s("agent_id"),
        s("session_id"),
        n("prompt_tokens"),
        n("completion_tokens"),
        if calls == 1 { "" } else { "s" }
    )
}

/// Prints a `sessions_list` result, each sub-agent's session under the session that delegated
/// to it (when both are listed).
fn print_list(list: &[Value]) {
    let id = |s: &Value| {
        s.get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let parent = |s: &Value| {
        s.get("parent_id")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let listed: Vec<String> = list.iter().map(id).collect();
    let line = |s: &Value, indent: &str| {
        println!(
            "{indent}{}  {:>3} msgs  {}",
            id(s),
            s.get("messages").and_then(Value::as_u64).unwrap_or(0),
            terminal_safe(s.get("title").and_then(Value::as_str).unwrap_or(""))
        );
    };
    for s in list {
        if parent(s).is_some_and(|p| listed.contains(&p)) {
            continue;
        }
        line(s, "");
        for child in list.iter().filter(|c| parent(c).as_deref() == Some(&id(s))) {
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
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if let Some(list) = v.as_array() {
                if list.is_empty() {
                    println!("no conversations yet — start one with: sayri ask \"…\"");
                }
                print_list(list);
            }
        }
        SessionsAction::Show { id, json } => {
            let v = c
                .request_with(&SessionGetParams { session_id: id })
                .await
                .map_err(remote)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
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
            if v.get("deleted") == Some(&Value::Bool(true)) {
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
fn step_result(tool_call: &Value) -> String {
    match tool_call.get("exit_code").and_then(Value::as_i64) {
        Some(code) => format!("exit {code}"),
        None => match tool_call.get("status").and_then(Value::as_str) {
            Some("interrupted") => "interrupted (not completed, not run again)".into(),
            Some(s) => terminal_safe(s).into_owned(),
            None => "no exit code".into(),
        },
    }
}
