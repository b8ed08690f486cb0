//! `sayri mcp serve [--agent ID]`: Sayri as an MCP server on stdin/stdout for other MCP clients
//! (see `sayri_mcp::serve`). Each tool call is its own connection to the daemon, so a call the
//! client cancels closes it (the daemon does not yet end the card or the command on that alone).
//!
//! stdout carries the protocol only; everything for the person goes to stderr.

use sayri_client::autostart::connect_or_start;
use sayri_client::client::Client;
use sayri_client::paths::Paths;
use sayri_mcp::serve::{Backend, BackendFuture, serve_stdio};
use sayri_protocol::SandboxLevel;
use sayri_protocol::params::{AskParams, RunCommandParams, StatusParams};
use sayri_protocol::reply::sessions::{AskReply, RunCommandReply};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

/// How long a `run_command` may take in the daemon: a card's wait and the command's own
/// timeout, both bounded there; this only stops a daemon that never answers.
const COMMAND_WAIT: Duration = Duration::from_secs(3600);

/// How long an `ask` turn may take (the daemon interrupts it then).
const ASK_SECONDS: f64 = 600.0;

/// The daemon, one connection per call.
struct Daemon {
    paths: Paths,
    allow_start: bool,
    agent: String,
    /// The session the served agent's `ask` turns continue (the first starts a new one, so a
    /// client's questions never land in the person's own conversation).
    session: Mutex<Option<String>>,
}

impl Daemon {
    async fn connect(&self) -> Result<Client, String> {
        connect_or_start(&self.paths, self.allow_start)
            .await
            .map_err(|e| format!("cannot reach the Sayri daemon: {e}"))
    }
}

impl Backend for Daemon {
    fn run_command<'a>(
        &'a self,
        command: &'a str,
        level: Option<SandboxLevel>,
    ) -> BackendFuture<'a, RunCommandReply> {
        Box::pin(async move {
            let mut c = self.connect().await?;
            let p = RunCommandParams {
                command: command.to_string(),
                agent_id: self.agent.clone(),
                level,
            };
            c.call_with(&p, COMMAND_WAIT, |_| {})
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn ask<'a>(&'a self, text: &'a str) -> BackendFuture<'a, AskReply> {
        Box::pin(async move {
            let mut c = self.connect().await?;
            let session = self.session.lock().map(|s| s.clone()).unwrap_or_default();
            let p = AskParams {
                text: text.to_string(),
                timeout: Some(ASK_SECONDS),
                agent_id: Some(self.agent.clone()),
                new: session.is_none(),
                session_id: session,
                ..AskParams::default()
            };
            let wait = Duration::from_secs_f64(ASK_SECONDS + 30.0);
            let r = c
                .call_with(&p, wait, |_| {})
                .await
                .map_err(|e| e.to_string())?;
            if let Ok(mut s) = self.session.lock() {
                *s = Some(r.session_id.clone());
            }
            Ok(r)
        })
    }

    fn status(&self) -> BackendFuture<'_, Value> {
        Box::pin(async move {
            let mut c = self.connect().await?;
            let s = c
                .request_with(&StatusParams {})
                .await
                .map_err(|e| e.to_string())?;
            // What another program may see: no addresses, paths or key state.
            Ok(json!({
                "version": s.version,
                "state": s.state,
                "busy": s.busy,
                "active_agent": s.agent,
                "served_agent": self.agent,
                "model": s.provider.model,
                "local_model": s.provider.local,
                "sandbox": s.sandbox,
                "uptime_ms": s.uptime_ms,
            }))
        })
    }
}

/// Serves until the MCP client closes stdin.
pub(crate) async fn run(paths: &Paths, allow_start: bool, agent: String) -> anyhow::Result<()> {
    // The agent must exist before a client is told about it.
    let mut c = connect_or_start(paths, allow_start).await?;
    let agents = c
        .request_with(&sayri_protocol::params::AgentsListParams {})
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !agents.iter().any(|a| a.id() == agent) {
        let ids: Vec<&str> = agents.iter().map(|a| a.id()).collect();
        anyhow::bail!(
            "no agent {agent:?}; the agents are {} (sayri agents list)",
            ids.join(", ")
        );
    }
    drop(c);
    eprintln!("sayri: serving MCP on stdin/stdout for agent {agent}");
    let daemon = Daemon {
        paths: paths.clone(),
        allow_start,
        agent: agent.clone(),
        session: Mutex::new(None),
    };
    serve_stdio(daemon, agent).await.map_err(anyhow::Error::msg)
}
