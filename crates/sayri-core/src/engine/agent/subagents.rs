//! The turn's multi-agent steps: an agent's own model endpoint, natural-language agent creation
//! (and the skill-install refusal), and delegation to a sub-agent.
//!
//! * **Creation** ("create a subagent …", "crea un agente …" from the person, never from a
//!   delegated task): levels 0–2 are refused before any model call; at levels 3–4 one model
//!   request proposes the profile as JSON, which is parsed strictly, bound by the creator
//!   (`domain::agents::effective_profile`, from the creator's current profile) and shown on a
//!   `subagent` permission card with the resulting level, rules and secrets. Nothing is
//!   written before "Allow", and an existing id is never replaced.
//! * **Delegation** (```` ```delegate ```` blocks): only to the agent's own sub-agents, at most
//!   `MAX_DEPTH` deep, never round a cycle, never the delegating turn's own request handed down
//!   unchanged, at most `MAX_FAN_OUT` per reply (the model is told about the others), and only
//!   while the request's budget lasts. The sub-agent's turn runs with its own effective
//!   profile (model, level, rules, secrets) in a session of its own whose parent is the
//!   delegating session, every command through the same gate (its cards name the sub-agent),
//!   and its answer comes back as the observation, framed as outside text. The delegation's
//!   step records the sub-agent's session and what it spent, and the spending is added to the
//!   delegating turn's.

use super::{AgentEngine, INTERRUPTED, Observed, Parent, Step, Turn, TurnOutcome, TurnRequest};
use crate::domain::agents::delegation::{
    self, BudgetSpent, Delegation, MAX_DEPTH, MAX_FAN_OUT, same_task,
};
use crate::domain::agents::intent::{self, Intent};
use crate::domain::agents::{
    self, ChainError, clamped_for_storage, creators_of, effective_profile, narrowings, proposal,
};
use crate::domain::codeblock;
use crate::domain::context::StepObservation;
use crate::domain::frame::{framed, neutralise};
use crate::domain::observation::Excerpt;
use crate::domain::profile::AgentProfile;
use crate::domain::text::cut_chars;
use crate::engine::events::{CoreEvent, EventSink};
use crate::engine::gate::{Confirmation, GateVerdict};
use crate::ports::{
    AgentDirError, AgentDirectory, ChatError, ChatEvent, ChatMessage, ChatModel, ChatRequest,
    ChatStream, Delegated, ModelEndpoint, NewMessage, Role, ToolCallRecord, effective_agent,
    sub_agents,
};
use crate::sync::{read, write};
use futures::StreamExt;
use sayri_permissions::Action;
use std::sync::Arc;

impl AgentEngine {
    /// Gives the engine the stored agents (delegation and creation need them; the core sets
    /// this when it is built).
    pub fn set_agents(&self, agents: Arc<dyn AgentDirectory>) {
        *write(&self.agents) = Some(agents);
    }

    fn agent_directory(&self) -> Option<Arc<dyn AgentDirectory>> {
        read(&self.agents).clone()
    }

    /// The model a turn of `profile` talks to: the provider's, or the agent's own endpoint.
    /// An endpoint that cannot be used gives a model whose every answer is that error, so the
    /// turn fails saying why (never silently on the provider's model).
    pub(super) fn chat_model_for(&self, profile: &AgentProfile) -> Arc<dyn ChatModel> {
        let Some(base_url) = &profile.model.base_url else {
            return self.ports.model.clone();
        };
        let endpoint = ModelEndpoint {
            base_url: base_url.clone(),
            api_key_secret: profile.model.api_key_secret.clone(),
        };
        self.ports
            .model
            .at_endpoint(&endpoint)
            .unwrap_or_else(|e| Arc::new(FailingModel(e)))
    }
}

/// The model name a request of `agent` sends: its own, or the provider's for `"default"`.
pub(super) fn model_name(agent: &AgentProfile, settings: &super::EngineSettings) -> String {
    let own = agent.model.model_name.trim();
    if own.is_empty() || own == "default" {
        settings.model.clone()
    } else {
        own.to_string()
    }
}

/// A model that answers every request with one error.
struct FailingModel(ChatError);

impl ChatModel for FailingModel {
    fn stream_chat(&self, _: ChatRequest) -> ChatStream {
        futures::stream::iter([Err(self.0.clone())]).boxed()
    }
}

/// Forwards a delegated turn's command events (so the person sees what the sub-agent runs) and
/// keeps its prose and errors out of the person's conversation: they come back to the
/// delegating agent as the observation.
struct DelegateSink<'a>(&'a dyn EventSink);

impl EventSink for DelegateSink<'_> {
    fn emit(&self, e: CoreEvent) {
        if matches!(e, CoreEvent::ToolStart(_) | CoreEvent::ToolFinish { .. }) {
            self.0.emit(e);
        }
    }
}

/// Why `profile` may not run commands at all: its `allowed_tools` list leaves out `bash` (a
/// sub-agent's tools are never more than its creator's, so this is how "no commands" is
/// inherited). `None` when it may.
pub(super) fn without_bash(profile: &AgentProfile) -> Option<String> {
    (!agents::allow::permits(&profile.allowed_tools, "bash")).then(|| {
        format!(
            "Refused: this agent's allowed_tools ({}) do not include bash, so it runs no commands.",
            profile.allowed_tools.join(", ")
        )
    })
}

/// The delegations of `answer` when its first actionable block is a ```` ```delegate ````
/// block (a `bash` block before it runs instead); `None` when there are none.
pub(super) fn delegation_first(answer: &str) -> Option<Vec<Delegation>> {
    let first = codeblock::extract_blocks(answer)
        .into_iter()
        .find(|b| b.is_command() || b.lang == "delegate")?;
    if first.lang != "delegate" {
        return None;
    }
    let all = delegation::delegation_blocks(answer);
    (!all.is_empty()).then_some(all)
}

impl Turn<'_> {
    /// The prompt line offering delegation, when this agent has sub-agents and may delegate.
    pub(super) fn delegation_prompt(&self) -> String {
        if self.depth >= MAX_DEPTH || self.level == sayri_protocol::SandboxLevel::NoExec {
            return String::new();
        }
        match self.engine.agent_directory() {
            Some(dir) => delegation::prompt_line(&sub_agents(&*dir, &self.profile.id)),
            None => String::new(),
        }
    }

    /// Requests handled before the model (the person's own turns only): creating an agent, and
    /// installing a skill at levels 0–2 (refused). `None` when the turn goes to the model.
    pub(super) async fn requests_about_agents(&mut self) -> Option<TurnOutcome> {
        if self.depth > 0 {
            return None;
        }
        match intent::detect(&self.req.text)? {
            Intent::InstallSkill => {
                let refusal = agents::may_install_skills(self.level).err()?;
                Some(self.reply(refusal.to_string()))
            }
            Intent::CreateAgent => Some(match agents::may_create_agents(self.level) {
                Err(refusal) => self.reply(refusal.to_string()),
                Ok(()) => {
                    let text = self.create_agent().await;
                    if self.req.cancel.is_cancelled() {
                        return Some(self.cancelled());
                    }
                    self.reply(text)
                }
            }),
        }
    }

    /// Ends the turn with `text` as the answer (streamed once, then stored and `assistant_done`).
    fn reply(&mut self, text: String) -> TurnOutcome {
        self.sink.emit(CoreEvent::AssistantDelta(text.clone()));
        self.finish(text, None, None)
    }

    /// Natural-language creation: proposal → creator's limits → card → file. Returns the reply.
    async fn create_agent(&mut self) -> String {
        let Some(dir) = self.engine.agent_directory() else {
            return "Creating agents is not available here; use `sayri agents create`.".into();
        };
        if !self.req.approver_available {
            return "Nothing was created: a new agent needs your approval, and nobody can approve it on this channel. Ask for it in the Sayri app, or use `sayri agents create`.".into();
        }
        let answer = match self.ask_for_proposal().await {
            Ok(a) => a,
            Err(e) => {
                return format!("Nothing was created: the model could not be asked ({e}).");
            }
        };
        let now = self.now();
        let mut proposed = match proposal::parse(&answer, &self.profile.id, now) {
            Ok(p) => p,
            Err(e) => return e.to_string(),
        };
        proposed.id = proposal::unique_id(&proposed.id, |id| {
            dir.stored(id).ok().flatten().is_some() || dir.ids().iter().any(|x| x == id)
        });
        let creators = match creators_of(&proposed, |id| dir.stored(id)) {
            Ok(c) => c,
            Err(e) => return format!("Nothing was created: {e}"),
        };
        let effective = effective_profile(&proposed, &creators);
        let narrowed = narrowings(&proposed, &effective);
        let (resource, lines) = proposal::card(&proposed, &effective, &narrowed);
        let verdict = self
            .engine
            .ports
            .gate
            .confirm(
                Confirmation {
                    agent: self.profile.clone(),
                    level: self.level,
                    session_id: self.req.session_id.clone(),
                    action: Action::Subagent,
                    subject: proposed.id.clone(),
                    resource,
                    reason: format!(
                        "{} asks to create the sub-agent {}; it can never do more than its creator",
                        self.profile.name, proposed.id
                    ),
                    lines,
                    approver_available: self.req.approver_available,
                },
                self.req.cancel.clone(),
            )
            .await;
        if let GateVerdict::Refuse { message, .. } = verdict {
            return format!("The sub-agent {} was not created: {message}.", proposed.id);
        }
        let stored = clamped_for_storage(&proposed, &creators);
        if let Err(e) = dir.create(&stored) {
            return format!("The sub-agent {} was not created: {e}.", proposed.id);
        }
        created_reply(&proposed, &effective, &narrowed)
    }

    /// The one model request of a creation: the profile as JSON, collected without streaming it
    /// to the person.
    async fn ask_for_proposal(&mut self) -> Result<String, ChatError> {
        let redactor = &self.engine.ports.redactor;
        let request = ChatRequest {
            model: self.model.clone(),
            messages: vec![
                ChatMessage::new(Role::System, proposal::request_prompt()),
                ChatMessage::new(Role::User, redactor.redact(&self.req.text)),
            ],
            temperature: Some(0.2),
            max_tokens: self.max_tokens.or(Some(800)),
            tools: None,
        };
        self.tree
            .take_call()
            .map_err(|e| ChatError::Other(e.to_string()))?;
        self.out.model_calls += 1;
        let mut stream = self.chat.stream_chat(request);
        let mut text = String::new();
        loop {
            let item = tokio::select! {
                biased;
                _ = self.req.cancel.cancelled() => return Err(ChatError::Other(INTERRUPTED.into())),
                item = stream.next() => item,
            };
            match item {
                Some(Ok(ChatEvent::Content(c))) => text.push_str(&c),
                Some(Ok(ChatEvent::Usage(u))) => {
                    self.out.usage.prompt_tokens += u.prompt_tokens;
                    self.out.usage.completion_tokens += u.completion_tokens;
                    self.out.usage.total_tokens += u.total_tokens;
                    self.tree.add_tokens(Some(u), 0);
                }
                Some(Ok(ChatEvent::Finish(_))) => return Ok(text),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Err(ChatError::CutOff),
            }
        }
    }

    /// Runs the delegations of one reply, in order and at most [`MAX_FAN_OUT`]: each
    /// sub-agent's turn, their answers together as the observation; the model is told about the
    /// blocks beyond the limit, which do not run.
    pub(super) async fn delegate(
        &mut self,
        step: &Step,
        all: Vec<Delegation>,
        reasoning: Option<String>,
        now: f64,
    ) -> Observed {
        self.store_step(step, reasoning, now);
        let beyond = all.len().saturating_sub(MAX_FAN_OUT);
        let mut parts = Vec::new();
        for d in all.into_iter().take(MAX_FAN_OUT) {
            match self.delegate_one(d).await {
                Some(part) => parts.push(part),
                None => return Observed::End(self.cancelled()),
            }
        }
        let mut obs = parts.join("\n\n");
        if beyond > 0 {
            obs.push_str(&format!(
                "\n[Note: {beyond} more delegate block(s) of your reply were NOT run: one reply hands out at most {MAX_FAN_OUT} tasks. Hand them out in your next reply if they are still needed.]"
            ));
        }
        self.observe(&step.answer, StepObservation::Text(obs));
        Observed::Continue
    }

    /// Runs one delegation and stores its step; returns what the model is told of it, or
    /// `None` when the request was interrupted meanwhile.
    async fn delegate_one(&mut self, d: Delegation) -> Option<String> {
        let label = format!("delegate {}: {}", d.agent_id, cut_chars(&d.task, 80));
        self.sink.emit(CoreEvent::ToolStart(label.clone()));
        let (obs, status, delegated) = match self.may_delegate(&d) {
            Err(why) => (
                format!(
                    "[Delegation to {} NOT RUN: {why}]\nDo not retry it; answer the user yourself or say what is missing.",
                    d.agent_id
                ),
                "denied",
                None,
            ),
            Ok(agent) => {
                let sub = self.run_sub_turn(agent, &d.task).await;
                if self.req.cancel.is_cancelled() {
                    return None;
                }
                self.out.model_calls += sub.model_calls;
                self.out.commands_run += sub.commands_run;
                self.out.usage.prompt_tokens += sub.usage.prompt_tokens;
                self.out.usage.completion_tokens += sub.usage.completion_tokens;
                self.out.usage.total_tokens += sub.usage.total_tokens;
                let delegated = Delegated {
                    agent_id: d.agent_id.clone(),
                    session_id: sub.session_id.clone(),
                    prompt_tokens: u64::from(sub.usage.prompt_tokens),
                    completion_tokens: u64::from(sub.usage.completion_tokens),
                    model_calls: sub.model_calls as u64,
                };
                let (obs, status) = self.sub_turn_observation(&d.agent_id, &label, &sub);
                (obs, status, Some(delegated))
            }
        };
        let code = Some(if status == "success" { 0 } else { 1 });
        let mut tool = NewMessage::new(Role::Tool, obs.clone(), self.now());
        tool.tool_call = Some(ToolCallRecord {
            command: label.clone(),
            exit_code: code,
            status: status.into(),
            output: obs.clone(),
            duration_ms: 0.0,
            delegated,
        });
        self.store(tool);
        self.sink.emit(CoreEvent::ToolFinish {
            command: label,
            output: obs.clone(),
            exit_code: code,
        });
        Some(obs)
    }

    /// What the model is told of a finished sub-turn: its answer as outside text (recorded for
    /// provenance under `label`), or why it failed.
    fn sub_turn_observation(
        &self,
        id: &str,
        label: &str,
        sub: &TurnOutcome,
    ) -> (String, &'static str) {
        match (&sub.text, &sub.error) {
            (Some(text), None) => {
                let text = self.redacted(text);
                self.tree.saw(label, &text);
                let obs = framed(
                    &format!("[Sub-agent {id} answered]"),
                    &self.boundary,
                    &self.within_observation_budget(&text),
                    "Use this to answer the user.",
                );
                (obs, "success")
            }
            (_, error) => (
                format!(
                    "[Sub-agent {id} FAILED: {}]\nExplain this to the user; do not retry it.",
                    neutralise(&self.redacted(error.as_deref().unwrap_or("no answer")))
                ),
                "failed",
            ),
        }
    }

    /// The sub-agent `d` may be handed its task: `Ok` with its effective profile, or why not
    /// (too deep, not this agent's own, a cycle, the delegating turn's own request handed down,
    /// the request's budget used up).
    fn may_delegate(&self, d: &Delegation) -> Result<Arc<AgentProfile>, Refused> {
        if self.depth >= MAX_DEPTH {
            return Err(Refused::TooDeep { depth: self.depth });
        }
        if self.chain.iter().any(|(agent, _)| agent == &d.agent_id) {
            let path: Vec<&str> = self.chain.iter().map(|(a, _)| a.as_str()).collect();
            return Err(Refused::Circle {
                agent: d.agent_id.clone(),
                path: path.join(" → "),
            });
        }
        if self
            .chain
            .iter()
            .any(|(_, request)| same_task(&d.task, request))
        {
            return Err(Refused::SameTask {
                agent: d.agent_id.clone(),
            });
        }
        if let Some(why) = self.tree.spent().exhausted(&self.tree.budget()) {
            return Err(why.into());
        }
        self.sub_agent(&d.agent_id)
    }

    /// `text` cut to what one observation may take in this turn's context (its beginning and
    /// end, with the size of what was left out between).
    fn within_observation_budget(&self, text: &str) -> String {
        let budget = self
            .budget
            .observation_tokens(self.transcript.fixed_tokens(&self.est));
        Excerpt::whole(text).fit(budget, &self.est).text()
    }

    /// The effective profile of `id` if it is one of this agent's own sub-agents; otherwise
    /// why not.
    fn sub_agent(&self, id: &str) -> Result<Arc<AgentProfile>, Refused> {
        let dir = self.engine.agent_directory().ok_or(Refused::Unavailable)?;
        let stored = dir
            .stored(id)?
            .ok_or_else(|| Refused::NoSuchAgent(id.into()))?;
        if stored.parent.as_deref() != Some(self.profile.id.as_str()) {
            return Err(Refused::NotOwn {
                agent: id.into(),
                creator: self.profile.id.clone(),
            });
        }
        effective_agent(&*dir, id)?
            .map(Arc::new)
            .ok_or_else(|| Refused::NoSuchAgent(id.into()))
    }

    /// The sub-agent's own turn, in a session of its own (its parent: this turn's session), one
    /// level deeper, in this request's tree.
    async fn run_sub_turn(&self, agent: Arc<AgentProfile>, task: &str) -> TurnOutcome {
        let req = TurnRequest {
            session_id: format!("{}~{}", self.req.session_id, agent.id),
            title_if_new: Some(cut_chars(
                &format!("{} for {}: {task}", agent.name, self.profile.name),
                60,
            )),
            level: self.level.min(agent.sandbox.level),
            agent,
            text: task.to_string(),
            images: Vec::new(),
            approver_available: self.req.approver_available,
            fresh_context: false,
            cancel: self.req.cancel.clone(),
        };
        let sink = DelegateSink(self.sink.inner);
        let parent = Parent {
            tree: self.tree.clone(),
            chain: self.chain.clone(),
            person_sink: self.person_sink,
            depth: self.depth + 1,
            session: &self.req.session_id,
        };
        self.engine.run_turn_in(req, &sink, Some(parent)).await
    }
}

/// Why a delegation is not run; the model is told, with what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Refused {
    /// The delegating turn is [`MAX_DEPTH`] levels deep already.
    #[error("sub-agents can delegate at most {MAX_DEPTH} levels deep, and this is level {depth}")]
    TooDeep {
        /// The delegating turn's depth.
        depth: usize,
    },
    /// The sub-agent works on this request further up the chain.
    #[error(
        "{agent} already works on this request up the chain ({path} → {agent}); delegating to it again would go round in a circle"
    )]
    Circle {
        /// The sub-agent asked for.
        agent: String,
        /// The agents up the chain, `a → b`.
        path: String,
    },
    /// The task is a request up the chain, handed down unchanged.
    #[error(
        "the task is the request this agent was given, handed down unchanged; do the work yourself, or give {agent} a smaller, different part of it"
    )]
    SameTask {
        /// The sub-agent asked for.
        agent: String,
    },
    /// The request's budget is used up.
    #[error(transparent)]
    Budget(#[from] BudgetSpent),
    /// This engine has no agent directory.
    #[error("delegation is not available here")]
    Unavailable,
    /// No agent has this id.
    #[error("there is no agent {0}")]
    NoSuchAgent(String),
    /// The agent was not created by the delegating agent.
    #[error(
        "{agent} is not a sub-agent of {creator}; an agent can only delegate to agents it created"
    )]
    NotOwn {
        /// The agent asked for.
        agent: String,
        /// The delegating agent.
        creator: String,
    },
    /// The sub-agent's file cannot be read.
    #[error(transparent)]
    Directory(#[from] AgentDirError),
    /// The sub-agent's creators cannot be resolved.
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// The reply after a creation: the id, the level it got, and what its creator took away.
fn created_reply(
    proposed: &AgentProfile,
    effective: &AgentProfile,
    narrowed: &[agents::Narrowing],
) -> String {
    let mut text = format!(
        "Created the sub-agent {} ({}) at {}.",
        effective.id, effective.name, effective.sandbox.level
    );
    if !narrowed.is_empty() {
        let what: Vec<String> = narrowed
            .iter()
            .filter(|n| n.field != "sandbox.permission_rules")
            .map(|n| format!("{} {} instead of {}", n.field, n.effective, n.written))
            .collect();
        if !what.is_empty() {
            text.push_str(&format!(
                " A sub-agent never exceeds its creator {}, so it has {}.",
                proposed.parent.as_deref().unwrap_or(""),
                what.join(", ")
            ));
        }
    }
    text.push_str(&format!(
        " Use it with `sayri agents use {}`, or let me delegate to it.",
        effective.id
    ));
    text
}
