//! The MCP step of a turn: a ```` ```mcp ```` block calls a tool of one of the user's MCP
//! servers or asks for its input schema (see `domain::mcp_block`, `ports::mcp`).
//!
//! # Rules
//! - A turn offers only what the adapter lists as approved now, filtered by the agent's
//!   `allowed_tools` (`mcp` allows every server, `mcp:<server>` one server, `<server>.<tool>`
//!   one tool); at level 0 nothing is offered. What the turn offered at its start is all it may
//!   call: a tool that is not in that list is refused without asking anyone.
//! - A bare tool name is called only when exactly one offered server has it; otherwise the
//!   model is told to name the server. A call is never re-routed to another server: a bare
//!   name holding a dot (`files.write` where no offered server is `files`) reads as a server
//!   and a tool, so it is not resolved to a tool of another server literally named so — the
//!   model is told to write that server's name in front.
//! - Every call is judged by the permission gate (action `mcp`, resource `server.tool`), with
//!   the block marked as outside text when it was copied from outside text; `describe` is not
//!   judged (it returns the approved schema only).
//! - A result — and a server's error text — is outside text: redacted, cut to the observation
//!   budget (head and tail), framed in the turn's boundary, recorded as seen (a block copied
//!   from it is judged as outside text), and stored as a `tool` row.

use super::{AgentEngine, Observed, Step, Turn};
use crate::domain::context::StepObservation;
use crate::domain::frame::framed;
use crate::domain::mcp_block::{self, McpRequest, McpServerSummary};
use crate::domain::observation::{Excerpt, step_label};
use crate::domain::profile::AgentProfile;
use crate::engine::events::CoreEvent;
use crate::engine::gate::{GateRequest, GateVerdict};
use crate::ports::{ExecStatus, McpCallError, McpTools, NewMessage, Role, ToolCallRecord};
use crate::sync::{read, write};
use sayri_permissions::Action;
use sayri_protocol::SandboxLevel;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

impl AgentEngine {
    /// Sets the user's MCP servers: listed in prompts (approved tools the agent may use) and
    /// called by the model's ```` ```mcp ```` step.
    pub fn set_mcp(&self, tools: Arc<dyn McpTools>) {
        *write(&self.mcp) = Some(tools);
    }

    fn mcp_tools(&self) -> Option<Arc<dyn McpTools>> {
        read(&self.mcp).clone()
    }

    /// The MCP servers and tools a turn of `agent` at `level` is offered now.
    pub async fn mcp_offered(
        &self,
        agent: &AgentProfile,
        level: SandboxLevel,
        cancel: CancellationToken,
    ) -> Vec<McpServerSummary> {
        let Some(tools) = self.mcp_tools() else {
            return Vec::new();
        };
        if level.min(agent.sandbox.level) == SandboxLevel::NoExec {
            return Vec::new();
        }
        mcp_block::offered_to(agent, level, tools.offered(cancel).await)
    }

    /// [`AgentEngine::system_prompt`] with the MCP servers the agent is offered now.
    pub async fn system_prompt_now(
        &self,
        agent: &AgentProfile,
        level: SandboxLevel,
        cancel: CancellationToken,
    ) -> String {
        let mcp = self.mcp_offered(agent, level, cancel).await;
        self.system_prompt_with(agent, level, &mcp)
    }
}

/// A resolved target, or what the model is told instead.
type Target = Result<(String, String), String>;

impl Turn<'_> {
    /// `target` as (server, tool) among the tools this turn offers.
    fn mcp_target(&self, target: &str) -> Target {
        let names: Vec<&str> = self.mcp.iter().map(|s| s.name.as_str()).collect();
        let offered = |server: &str, tool: &str| {
            self.mcp
                .iter()
                .any(|s| s.name == server && s.tools.iter().any(|t| t == tool))
        };
        let not_offered = || {
            if self.mcp.is_empty() {
                format!(
                    "[MCP: no MCP tool is offered to this agent, so `{}` was not called.]",
                    step_label(target)
                )
            } else {
                format!(
                    "[MCP: `{}` is not one of the offered tools ({}); nothing was called.]",
                    step_label(target),
                    self.mcp_listing()
                )
            }
        };
        match mcp_block::split_target(target, &names) {
            (Some(server), tool) if offered(server, tool) => {
                Ok((server.to_string(), tool.to_string()))
            }
            (Some(_), _) => Err(not_offered()),
            (None, tool) => {
                let owners: Vec<&str> = self
                    .mcp
                    .iter()
                    .filter(|s| s.tools.iter().any(|t| t == tool))
                    .map(|s| s.name.as_str())
                    .collect();
                match owners.as_slice() {
                    [one] if tool.contains('.') => Err(format!(
                        "[MCP: no offered server is named `{}`, so `{}` was not called. If you \
                         mean the tool `{}` of server {one}, write `{one}.{}`.]",
                        step_label(tool.split('.').next().unwrap_or(tool)),
                        step_label(tool),
                        step_label(tool),
                        step_label(tool)
                    )),
                    [one] => Ok((one.to_string(), tool.to_string())),
                    [] => Err(not_offered()),
                    many => Err(format!(
                        "[MCP: several servers offer `{}` ({}); nothing was called. Name one, e.g. `{}.{}`.]",
                        step_label(tool),
                        many.join(", "),
                        many[0],
                        step_label(tool)
                    )),
                }
            }
        }
    }

    /// Every offered `server.tool`, comma-separated.
    fn mcp_listing(&self) -> String {
        self.mcp
            .iter()
            .flat_map(|s| s.tools.iter().map(move |t| format!("{}.{t}", s.name)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Answers a ```` ```mcp ```` block (see the module rules).
    pub(super) async fn answer_mcp(
        &mut self,
        step: &Step,
        body: &str,
        reasoning: Option<String>,
        now: f64,
    ) -> Observed {
        self.store_step(step, reasoning, now);
        let request = match mcp_block::parse_block(body) {
            Ok(r) => r,
            Err(e) => {
                let obs = format!("[MCP: {e}. Nothing was called.]");
                return self.mcp_observed(step, "mcp", obs, ExecStatus::Failed, 0.0);
            }
        };
        let (target, arguments) = match request {
            McpRequest::Describe { target } => {
                return self.mcp_describe(step, &target).await;
            }
            McpRequest::Call { target, arguments } => (target, arguments),
        };
        let label = self.redacted(&format!(
            "mcp: {target} {}",
            Value::Object(arguments.clone())
        ));
        let (server, tool) = match self.mcp_target(&target) {
            Ok(t) => t,
            Err(obs) => return self.mcp_observed(step, &label, obs, ExecStatus::Denied, 0.0),
        };
        self.sink.emit(CoreEvent::ToolStart(label.clone()));
        let resource = format!("{server}.{tool}");
        if let Some(refusal) = self.mcp_gate(body, &resource).await {
            self.out.refused_commands.push(super::Refusal {
                command: label.clone(),
                reason: self.redacted(&refusal),
            });
            return self.mcp_finish(step, &label, refusal, ExecStatus::Denied, 0.0);
        }
        self.pending_command = Some(label.clone());
        let started = Instant::now();
        let (obs, status) = self.mcp_call(&server, &tool, arguments).await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        self.pending_command = None;
        if self.req.cancel.is_cancelled() {
            return Observed::End(self.cancelled());
        }
        if status != ExecStatus::Denied {
            self.out.commands_run += 1;
        }
        self.mcp_finish(step, &label, obs, status, ms)
    }

    /// Asks the gate about calling `resource`; `Some` holds the refusal the model is told.
    async fn mcp_gate(&mut self, body: &str, resource: &str) -> Option<String> {
        let outside = self.tree.outside_origin(body.trim());
        let verdict = self
            .engine
            .ports
            .gate
            .authorize(
                GateRequest {
                    agent: self.profile.clone(),
                    level: self.level,
                    session_id: self.req.session_id.clone(),
                    action: Action::Mcp,
                    resource: resource.to_string(),
                    approver_available: self.req.approver_available,
                    outside,
                },
                self.req.cancel.clone(),
            )
            .await;
        match verdict {
            GateVerdict::Allow { .. } => None,
            GateVerdict::Refuse { message, .. } => Some(message),
        }
    }

    /// Calls the tool; the observation and how it ended.
    async fn mcp_call(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> (String, ExecStatus) {
        let Some(tools) = self.engine.mcp_tools() else {
            return (
                "[MCP: no MCP servers are set up.]".into(),
                ExecStatus::Denied,
            );
        };
        let cancel = self.req.cancel.clone();
        match tools.call(server, tool, arguments, cancel).await {
            Ok(out) => {
                let header = if out.is_error {
                    format!("[MCP {server}.{tool} reported an error]")
                } else {
                    format!("[MCP {server}.{tool} result]")
                };
                let status = if out.is_error {
                    ExecStatus::Failed
                } else {
                    ExecStatus::Success
                };
                (self.mcp_framed(&header, &out.text), status)
            }
            Err(McpCallError::InvalidArguments { message, schema }) => {
                let header =
                    format!("[MCP {server}.{tool} was not called: {message}. Its input schema]");
                (self.mcp_framed(&header, &schema), ExecStatus::Failed)
            }
            Err(McpCallError::NotOffered(why)) => (
                format!("[MCP {server}.{tool} was not called: {why}]"),
                ExecStatus::Denied,
            ),
            // The server's own error text and stderr: outside text like a result.
            Err(McpCallError::Failed(why)) => (
                self.mcp_framed(&format!("[MCP {server}.{tool} failed]"), &why),
                ExecStatus::Failed,
            ),
        }
    }

    /// `text` from a server, redacted, cut to the observation budget and framed.
    fn mcp_framed(&mut self, header: &str, text: &str) -> String {
        let text = self.redacted(text);
        let budget = self
            .budget
            .observation_tokens(self.transcript.fixed_tokens(&self.est));
        let cut = Excerpt::whole(text).fit(budget, &self.est).text();
        self.tree.saw(header, &cut);
        framed(header, &self.boundary, &cut, "")
    }

    /// Answers `describe target` with the tool's approved input schema.
    async fn mcp_describe(&mut self, step: &Step, target: &str) -> Observed {
        let label = self.redacted(&format!("mcp: describe {target}"));
        let (server, tool) = match self.mcp_target(target) {
            Ok(t) => t,
            Err(obs) => return self.mcp_observed(step, &label, obs, ExecStatus::Denied, 0.0),
        };
        let Some(tools) = self.engine.mcp_tools() else {
            let obs = "[MCP: no MCP servers are set up.]".to_string();
            return self.mcp_observed(step, &label, obs, ExecStatus::Denied, 0.0);
        };
        let cancel = self.req.cancel.clone();
        let (obs, status) = match tools.describe(&server, &tool, cancel).await {
            Ok(schema) => {
                let header = format!("[MCP {server}.{tool}: its input schema]");
                (self.mcp_framed(&header, &schema), ExecStatus::Success)
            }
            Err(e) => (
                self.mcp_framed(&format!("[MCP {server}.{tool}: no schema]"), &e.to_string()),
                ExecStatus::Failed,
            ),
        };
        self.mcp_observed(step, &label, obs, status, 0.0)
    }

    /// Emits the start of `label` and finishes it with `obs`.
    fn mcp_observed(
        &mut self,
        step: &Step,
        label: &str,
        obs: String,
        status: ExecStatus,
        ms: f64,
    ) -> Observed {
        self.sink.emit(CoreEvent::ToolStart(label.to_string()));
        self.mcp_finish(step, label, obs, status, ms)
    }

    /// Stores `obs` as the step's `tool` row, emits the finish and feeds it to the model.
    fn mcp_finish(
        &mut self,
        step: &Step,
        label: &str,
        obs: String,
        status: ExecStatus,
        ms: f64,
    ) -> Observed {
        let obs = self.redacted(&obs);
        let exit_code = Some(i32::from(status != ExecStatus::Success));
        let mut row = NewMessage::new(Role::Tool, obs.clone(), self.now());
        row.tool_call = Some(ToolCallRecord {
            command: label.to_string(),
            exit_code,
            status: status.as_str().into(),
            output: obs.clone(),
            duration_ms: ms,
            delegated: None,
        });
        self.store(row);
        self.sink.emit(CoreEvent::ToolFinish {
            command: label.to_string(),
            output: obs.clone(),
            exit_code,
        });
        self.observe(&step.answer, StepObservation::Text(obs));
        Observed::Continue
    }
}
