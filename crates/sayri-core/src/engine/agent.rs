//! The agent engine: one ReAct turn over fenced `bash` blocks.
//!
//! A turn: store the request → system prompt + history by token budget → stream the model →
//! if the answer holds a `bash`/`sh` block: permission gate → sandbox → redacted output →
//! stored as a `tool` message → observation back to the model → repeat, at most
//! [`AgentProfile::max_model_calls`] model calls (6, or 10 with `investigation_loop`).
//!
//! * **Several blocks in one reply**: the first runs; the observation tells the model how many
//!   others were not run.
//! * **A block in the last allowed step** is not run; the final answer says so.
//! * **History search** (```` ```search_history ````) is answered from the store, at any level.
//! * **Memory**: a ```` ```recall ```` block is answered with the facts the agent may read
//!   (`domain::memory`), within `memory.recall_tokens`, as outside text; with none it falls back
//!   to a history search. A ```` ```remember ```` block is stored in the agent's own memory after
//!   a card (an `allow` rule does not skip it), or at once with `memory.auto_accept`; on a path
//!   with no approver and no `auto_accept` it is not stored and the model is told.
//!   `memory.auto_recall` adds matching facts to the first request of a turn, capped the same.
//! * **Skill reading** (```` ```read_skill ````) is answered from the installed skills the agent
//!   may use, only while their files still match their scan.
//! * **MCP tools** (```` ```mcp ````): the approved tools of the user's MCP servers the agent
//!   may use are listed one line per server; a call goes through the gate as action `mcp`
//!   (see `agent::mcp`), its result is outside text.
//! * **Cancellation**: the turn's `CancellationToken` is checked before every model call,
//!   authorisation and command, aborts the model stream at once (the stream is dropped), ends
//!   open permission questions and kills the running command (the sandbox takes the token).
//!   After it fires, the turn emits nothing and calls nothing more.
//! * **`finish_reason: length`** and stream errors end the turn with an error record stored and an
//!   `error` event; a cut-off answer never runs a command.
//! * **Remote turns** (`approver_available = false`) pass that flag to the gate at every step.
//! * **Context budget**: every request fits the model's context window (see
//!   `domain::context`); observations keep the head and tail of long output
//!   (`domain::observation`); token counts are estimates calibrated by the server's usage
//!   reports, per model (`domain::tokens`).
//! * **Repetition guard**: a command that already ran twice with the same result is not run a
//!   third time (`domain::repetition`); insisting on it ends the turn.
//! * **Learned preferences** record the current request as the intent.
//! * **Outside text** (command output, a sub-agent's answer, history search hits, a skill's
//!   file) reaches the model inside the turn's random boundary (`domain::frame`); a command
//!   that came from it (`domain::provenance`) goes to the gate marked as such, so no allow
//!   rule or saved approval runs it.
//! * **One budget per request**: every model call of the request's delegation tree takes one
//!   call from one budget first (`domain::agents::delegation`); when it is used up, the
//!   person's turn ends with a note saying so.

use super::delta_filter::DeltaFilter;
use super::events::{CoreEvent, EventSink};
use super::gate::{GateRequest, GateVerdict, PermissionGate};
use crate::domain::agents::allow;
use crate::domain::agents::delegation::{Budget, BudgetSpent};
use crate::domain::codeblock;
use crate::domain::context::{ContextBudget, StepObservation, Transcript, TurnStep};
use crate::domain::frame::{Boundary, framed};
use crate::domain::hints;
use crate::domain::history::{self, HistoryBudget};
use crate::domain::memory::MemorySettings;
use crate::domain::observation::{CommandObservation, Excerpt, step_label};
use crate::domain::profile::AgentProfile;
use crate::domain::prompt::{self, SkillSummary};
use crate::domain::provenance::FromOutside;
use crate::domain::repetition::{self, RepetitionGuard, Verdict};
use crate::domain::strip::strip_patterns;
use crate::domain::title;
use crate::domain::tokens::{TokenEstimator, weighted_bytes};
use crate::ports::MemoryBook;
use crate::ports::{
    AgentDirectory, ChatError, ChatEvent, ChatImage, ChatMessage, ChatModel, ChatRequest, Clock,
    Entropy, ExecRequest, ExecResult, ExecStatus, FinishReason, NewMessage, PreferenceUpdate,
    Redactor, Role, Sandbox, SessionSeed, SessionStore, SkillLibrary, SkillReadError, StoreError,
    ToolCallRecord, Usage, redacted_prefix,
};
use crate::sync::{lock, read, write};
use futures::StreamExt;
use futures::future::BoxFuture;
use sayri_permissions::Action;
use sayri_protocol::SandboxLevel;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

mod mcp;
mod memory;
mod subagents;
mod tree;

use tree::Tree;

/// Engine-wide settings (from `sayri.toml`'s `provider.*`; the daemon maps them).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSettings {
    /// Model used when a profile says `"default"`.
    pub model: String,
    /// Temperature of the title request (default 0.3). Turns use the profile's temperature.
    pub title_temperature: f32,
    /// Completion cap when the profile has none (`None` = server default).
    pub max_tokens: Option<u32>,
    /// `provider.strip_patterns` (see `domain::strip`).
    pub strip_patterns: String,
    /// History budget.
    pub history: HistoryBudget,
    /// The model's context window in tokens; `None` asks the server (its model list), and
    /// falls back to [`ContextBudget::DEFAULT_CONTEXT_TOKENS`].
    pub context_tokens: Option<usize>,
    /// Bytes of output the sandbox captures.
    pub output_limit: usize,
    /// Whether sessions get a generated title after their first exchange.
    pub generate_titles: bool,
    /// Whether commands at the host levels run as root (the daemon's effective user is root):
    /// the prompt says so instead of "as the user (not root)".
    pub runs_as_root: bool,
    /// The desktop tools (`sayri` subcommands) this build has; the prompt announces those that
    /// work at the agent's level.
    pub desktop_tools: prompt::DesktopTools,
    /// Environment variables every command receives (after the sandbox's allow-list, before
    /// the agent's secrets). The daemon passes settings a command of its own needs this way,
    /// since levels 1–2 hide Sayri's settings file: the `sayri lookup` endpoints.
    pub command_env: Vec<(String, String)>,
    /// What one request may spend, its sub-agents included (`agent.delegation_budget_calls`,
    /// `agent.delegation_budget_tokens`).
    pub delegation_budget: Budget,
    /// Long-term memory (`[memory]`).
    pub memory: MemorySettings,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            model: "default".into(),
            title_temperature: 0.3,
            max_tokens: None,
            strip_patterns: String::new(),
            history: HistoryBudget::default(),
            context_tokens: None,
            output_limit: 64 * 1024,
            generate_titles: true,
            runs_as_root: false,
            desktop_tools: prompt::DesktopTools::default(),
            command_env: Vec::new(),
            delegation_budget: Budget::default(),
            memory: MemorySettings::default(),
        }
    }
}

/// The ports the engine uses.
#[derive(Clone)]
pub struct EnginePorts {
    /// The chat model.
    pub model: Arc<dyn ChatModel>,
    /// Runs commands.
    pub sandbox: Arc<dyn Sandbox>,
    /// Authorises commands.
    pub gate: Arc<dyn PermissionGate>,
    /// Hides secrets in output.
    pub redactor: Arc<dyn Redactor>,
    /// Sessions, messages, preferences.
    pub store: Arc<dyn SessionStore>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Randomness (each turn's boundary around outside text).
    pub entropy: Arc<dyn Entropy>,
}

/// One turn to run.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// Session to append to (created with the first message if new).
    pub session_id: String,
    /// Title for the session if this turn creates it; `None` = the first 30 characters of `text`.
    pub title_if_new: Option<String>,
    /// The agent.
    pub agent: Arc<AgentProfile>,
    /// Requested level; the engine uses `min(level, agent's level)` — never higher.
    pub level: SandboxLevel,
    /// The request text.
    pub text: String,
    /// Images sent with the request text (see `attach_image`); empty for most turns.
    pub images: Vec<ChatImage>,
    /// Whether a person can answer permission questions (false for gateways and routines).
    pub approver_available: bool,
    /// The model sees none of the session's earlier messages (routine runs: each run starts
    /// from a clean context, while its messages still accumulate in the routine's session).
    pub fresh_context: bool,
    /// Cancels the turn.
    pub cancel: CancellationToken,
}

/// Why a `read_skill` step gets no skill text; the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SkillRefusal {
    /// No skill library, or no skill by that name.
    #[error("No skill named {0} is installed.")]
    NotInstalled(String),
    /// The agent's `allowed_skills` leave it out.
    #[error("Skill {0} is not allowed for this agent.")]
    NotAllowed(String),
    /// The library refused it or could not read it.
    #[error("Cannot read skill {id}: {source}")]
    Unreadable {
        /// The skill as the model named it.
        id: String,
        /// The library's reason.
        source: SkillReadError,
    },
}

/// A command that was not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Refusal {
    /// The command as clients see it (redacted).
    pub command: String,
    /// The refusal as the model was told it (redacted): the subject, the rule or policy and its
    /// source, and what would let it run.
    pub reason: String,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnOutcome {
    /// Session id.
    pub session_id: String,
    /// Final answer (after `strip_patterns`), if there is one.
    pub text: Option<String>,
    /// Error message, if the turn failed (`None` on success).
    pub error: Option<String>,
    /// Whether it was interrupted.
    pub cancelled: bool,
    /// Model calls made.
    pub model_calls: usize,
    /// Commands handed to the sandbox.
    pub commands_run: usize,
    /// Commands proposed but not run because they were refused (denied by a rule, or needing
    /// an approval no one could give), as shown to clients (redacted), each with why.
    pub refused_commands: Vec<Refusal>,
    /// Summed token usage of the turn's model calls (as reported by the server).
    pub usage: Usage,
    /// Whether the session was created by this turn (its first exchange).
    pub new_session: bool,
    /// Facts of long-term memory put in this turn's requests (recalled or added by
    /// `memory.auto_recall`).
    pub facts_recalled: usize,
    /// Facts the model proposed that were stored.
    pub facts_saved: usize,
    /// Facts the model proposed that wait for the person (nobody could be asked in the turn).
    pub facts_proposed: usize,
}

/// The system message of the session-title request (it starts with
/// "Write an ultra-short title", which tells it apart from turn requests).
pub const TITLE_INSTRUCTION: &str = "Write an ultra-short title (3-4 words) for this request, in its language. Only the words: no quotes, no period.";

/// Message stored and returned when a turn is interrupted.
pub const INTERRUPTED: &str = "The request was interrupted.";

/// Commands that only look things up: not recorded as learned preferences (a preference is a
/// command that did something for the request).
const LOOKUP_PREFIXES: &[&str] = &[
    "sayri pref",
    "sayri-pref",
    "grep",
    "which",
    "find",
    "cat",
    "echo",
    "pwd",
    "ls",
    "search_history",
];

/// The ReAct engine. Share it with `Arc`; turns may run concurrently (different sessions).
pub struct AgentEngine {
    ports: EnginePorts,
    settings: RwLock<EngineSettings>,
    /// Installed skills (set by the daemon; without it no skill is listed or read).
    skills: RwLock<Option<Arc<dyn SkillLibrary>>>,
    /// Calibrated token estimators per model (loaded from the store on first use).
    rates: Mutex<HashMap<String, TokenEstimator>>,
    /// Context windows the servers published, per (agent endpoint, model) (`None`: it did not
    /// say). The endpoint is `None` for the provider's.
    windows: Mutex<HashMap<WindowKey, Option<usize>>>,
    /// Stored agents, for delegation and creation (set by the core; without it neither happens).
    agents: RwLock<Option<Arc<dyn AgentDirectory>>>,
    /// Long-term memory (set by the daemon; without it recall finds nothing and nothing is
    /// remembered).
    memory: RwLock<Option<Arc<dyn MemoryBook>>>,
    /// The user's MCP servers (set by the daemon; without it no MCP tool is offered).
    mcp: RwLock<Option<Arc<dyn crate::ports::McpTools>>>,
}

/// Whose context window: (the agent's own endpoint, or `None` for the provider's; model name).
type WindowKey = (Option<String>, String);

/// One model step's result.
struct Step {
    answer: String,
    reasoning: String,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
}

enum StepEnd {
    Done(Step),
    Failed(ChatError),
    Cancelled,
}

/// Forwards events only while the turn is not cancelled.
struct TurnSink<'a> {
    inner: &'a dyn EventSink,
    cancel: &'a CancellationToken,
}

impl TurnSink<'_> {
    fn emit(&self, e: CoreEvent) {
        if !self.cancel.is_cancelled() {
            self.inner.emit(e);
        }
    }
}

impl AgentEngine {
    /// An engine over `ports` with `settings`.
    pub fn new(ports: EnginePorts, settings: EngineSettings) -> AgentEngine {
        AgentEngine {
            ports,
            settings: RwLock::new(settings),
            skills: RwLock::new(None),
            rates: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
            agents: RwLock::new(None),
            memory: RwLock::new(None),
            mcp: RwLock::new(None),
        }
    }

    /// Sets the long-term memory recall and remember blocks use.
    pub fn set_memory(&self, book: Arc<dyn MemoryBook>) {
        *write(&self.memory) = Some(book);
    }

    /// The memory, if one is set.
    fn memory_book(&self) -> Option<Arc<dyn MemoryBook>> {
        read(&self.memory).clone()
    }

    /// Replaces the settings (e.g. after `config_set`); running turns keep theirs. Context
    /// windows learnt from the server are asked again (the provider may have changed).
    pub fn set_settings(&self, settings: EngineSettings) {
        *write(&self.settings) = settings;
        lock(&self.windows).clear();
    }

    /// The current settings.
    pub fn settings(&self) -> EngineSettings {
        read(&self.settings).clone()
    }

    /// Sets the installed skills: listed in prompts (those the agent may use) and read by the
    /// model's ```` ```read_skill ```` step.
    pub fn set_skills(&self, library: Arc<dyn SkillLibrary>) {
        *write(&self.skills) = Some(library);
    }

    /// The installed skills the prompt may list (checked against their scan on each call).
    fn offered_skills(&self) -> Vec<SkillSummary> {
        let lib = read(&self.skills).clone();
        lib.map(|l| l.offered()).unwrap_or_default()
    }

    /// Answers a `read_skill` request of `agent`: `Ok` with the skill's `SKILL.md` (outside
    /// text), or `Err` with why not.
    fn read_skill(&self, agent: &AgentProfile, id: &str) -> Result<String, SkillRefusal> {
        let lib = read(&self.skills).clone();
        let Some(lib) = lib else {
            return Err(SkillRefusal::NotInstalled(id.into()));
        };
        let known = lib
            .offered()
            .into_iter()
            .find(|s| s.id.eq_ignore_ascii_case(id) || s.name.eq_ignore_ascii_case(id));
        if let Some(s) = &known
            && !(allow::permits(&agent.allowed_skills, &s.id)
                || allow::permits(&agent.allowed_skills, &s.name))
        {
            return Err(SkillRefusal::NotAllowed(id.into()));
        }
        lib.read(known.as_ref().map_or(id, |s| s.id.as_str()))
            .map_err(|source| SkillRefusal::Unreadable {
                id: id.into(),
                source,
            })
    }

    /// The ports (the core uses the store and clock directly).
    pub fn ports(&self) -> &EnginePorts {
        &self.ports
    }

    /// The token estimator of `model`: calibrated by earlier usage reports (kept in the store
    /// across restarts), or [`TokenEstimator::conservative`] before the first report.
    pub fn estimator(&self, model: &str) -> TokenEstimator {
        if let Some(e) = lock(&self.rates).get(model) {
            return *e;
        }
        let e = match self.ports.store.token_rate(model) {
            Ok(Some(rate)) => TokenEstimator::with_rate(rate),
            _ => TokenEstimator::conservative(),
        };
        lock(&self.rates).insert(model.to_string(), e);
        e
    }

    /// Calibrates `model`'s estimator with a usage report: a request of `messages` messages
    /// whose contents weighed `weight` took `prompt_tokens` by the server's count. The new
    /// rate is stored.
    fn calibrate(
        &self,
        model: &str,
        weight: usize,
        messages: usize,
        prompt_tokens: u32,
    ) -> Result<(), StoreError> {
        let before = self.estimator(model);
        let after = before.calibrated(weight, messages, prompt_tokens);
        if after == before {
            return Ok(());
        }
        lock(&self.rates).insert(model.to_string(), after);
        self.ports
            .store
            .set_token_rate(model, after.bytes_per_token, self.ports.clock.now_unix())
    }

    /// The token estimators used so far in this process, per model (for `status`), sorted by
    /// model name.
    pub fn token_rates(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = lock(&self.rates)
            .iter()
            .map(|(m, e)| (m.clone(), e.bytes_per_token))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// The context budget of a request to `model` through `chat` (the provider's model, or
    /// the agent's own `endpoint`) with completion cap `max_tokens`: the configured window,
    /// else the one the server publishes (asked once per endpoint and model, at most 10 s),
    /// else [`ContextBudget::DEFAULT_CONTEXT_TOKENS`].
    async fn context_budget(
        &self,
        chat: &dyn ChatModel,
        model: &str,
        endpoint: Option<&str>,
        configured: Option<usize>,
        max_tokens: Option<u32>,
        cancel: &CancellationToken,
    ) -> ContextBudget {
        let key = (endpoint.map(str::to_string), model.to_string());
        let window = match configured {
            Some(n) => Some(n),
            None => {
                let known = lock(&self.windows).get(&key).copied();
                match known {
                    Some(w) => w,
                    None => {
                        let ask = chat.context_window(model);
                        let w = tokio::select! {
                            _ = cancel.cancelled() => None,
                            w = tokio::time::timeout(Duration::from_secs(10), ask) => w.ok().flatten().map(|n| n as usize),
                        };
                        lock(&self.windows).insert(key, w);
                        w
                    }
                }
            }
        };
        ContextBudget {
            context_tokens: window.unwrap_or(ContextBudget::DEFAULT_CONTEXT_TOKENS),
            completion_tokens: max_tokens
                .map_or(ContextBudget::DEFAULT_COMPLETION_TOKENS, |n| n as usize),
        }
    }

    /// The system prompt a turn of `agent` at `level` (capped at the agent's) would use.
    pub fn system_prompt(&self, agent: &AgentProfile, level: SandboxLevel) -> String {
        self.system_prompt_with(agent, level, &[])
    }

    /// [`AgentEngine::system_prompt`] listing the MCP servers `mcp`.
    fn system_prompt_with(
        &self,
        agent: &AgentProfile,
        level: SandboxLevel,
        mcp: &[crate::domain::mcp_block::McpServerSummary],
    ) -> String {
        let mut p = agent.clone();
        p.sandbox.level = level.min(agent.sandbox.level);
        let settings = self.settings();
        let host = prompt::Host {
            root: settings.runs_as_root,
            tools: settings.desktop_tools,
        };
        prompt::build_system_prompt_with(&p, &self.offered_skills(), &host, mcp)
    }

    /// Runs one turn to its end (answer, error, or cancellation). Events go to `sink` until
    /// the turn is cancelled. Never panics on model, sandbox or store failures: they become
    /// `error` in the outcome.
    pub async fn run_turn(&self, req: TurnRequest, sink: &dyn EventSink) -> TurnOutcome {
        self.run_turn_in(req, sink, None).await
    }

    /// [`AgentEngine::run_turn`] for the person's own turn (`parent` `None`) or a turn
    /// delegated by `parent` (boxed: a delegated turn runs inside its delegating turn).
    fn run_turn_in<'a>(
        &'a self,
        req: TurnRequest,
        sink: &'a dyn EventSink,
        parent: Option<Parent<'a>>,
    ) -> BoxFuture<'a, TurnOutcome> {
        Box::pin(async move {
            let title = req
                .title_if_new
                .clone()
                .unwrap_or_else(|| self.initial_title(&req.text));
            let mut turn = Turn::new(self, &req, &title, sink, parent);
            if let Err(out) = turn.start().await {
                return *out;
            }
            let mut outcome = turn.requests_about_agents().await;
            if outcome.is_none() {
                for call in 1..=turn.max_calls {
                    if let Some(out) = turn.step(call).await {
                        outcome = Some(out);
                        break;
                    }
                }
            }
            turn.journal_end();
            // `None` is unreachable in practice: the last call always finishes in `Turn::step`.
            outcome.unwrap_or_else(|| std::mem::take(&mut turn.out))
        })
    }

    async fn stream_step(
        &self,
        model: &dyn ChatModel,
        request: ChatRequest,
        sink: &TurnSink<'_>,
        cancel: &CancellationToken,
        separate: bool,
    ) -> StepEnd {
        let mut stream = model.stream_chat(request);
        let mut filter = DeltaFilter::default();
        let mut step = Step {
            answer: String::new(),
            reasoning: String::new(),
            usage: None,
            finish: None,
        };
        let mut need_sep = separate;
        let mut emit_text = |text: String, sink: &TurnSink<'_>| {
            if !text.is_empty() {
                if need_sep {
                    sink.emit(CoreEvent::AssistantDelta("\n\n".into()));
                    need_sep = false;
                }
                sink.emit(CoreEvent::AssistantDelta(text));
            }
        };
        loop {
            let item = tokio::select! {
                biased;
                _ = cancel.cancelled() => return StepEnd::Cancelled,
                item = stream.next() => item,
            };
            match item {
                None => break,
                Some(Err(e)) => return StepEnd::Failed(e),
                Some(Ok(ChatEvent::Content(c))) => {
                    step.answer.push_str(&c);
                    emit_text(filter.push(&c), sink);
                }
                Some(Ok(ChatEvent::Reasoning(r))) => {
                    step.reasoning.push_str(&r);
                    sink.emit(CoreEvent::ReasoningDelta(r));
                }
                Some(Ok(ChatEvent::Usage(u))) => step.usage = Some(u),
                Some(Ok(ChatEvent::ToolCall { .. })) => {}
                Some(Ok(ChatEvent::Finish(f))) => {
                    step.finish = Some(f);
                    break;
                }
            }
        }
        drop(stream);
        if step.finish.is_none() {
            return StepEnd::Failed(ChatError::CutOff);
        }
        emit_text(filter.finish(), sink);
        StepEnd::Done(step)
    }

    /// Judges and runs one command a client proposes for `agent` (Sayri as an MCP server),
    /// outside any turn: the same gate as a command its model proposed (rules, policies, saved
    /// approvals, a card where they ask; a person can answer, so the card waits the ask
    /// timeout), at `min(level, agent's level)`, in its sandbox with its workspace and
    /// secrets. The output and its tail come back redacted; nothing is stored in a session.
    pub async fn run_client_command(
        &self,
        agent: Arc<AgentProfile>,
        level: SandboxLevel,
        session_id: &str,
        command: &str,
        cancel: CancellationToken,
    ) -> ExecResult {
        let level = level.min(agent.sandbox.level);
        let req = TurnRequest {
            session_id: session_id.to_string(),
            title_if_new: None,
            agent: agent.clone(),
            level,
            text: command.to_string(),
            images: Vec::new(),
            approver_available: true,
            fresh_context: false,
            cancel,
        };
        self.authorize_and_run(&agent, level, &req, command, None)
            .await
            .redacted(self.ports.redactor.as_ref())
    }

    async fn authorize_and_run(
        &self,
        profile: &Arc<AgentProfile>,
        level: SandboxLevel,
        req: &TurnRequest,
        command: &str,
        outside: Option<FromOutside>,
    ) -> ExecResult {
        let cancel = &req.cancel;
        let refused = |output: String| ExecResult::new(ExecStatus::Denied, Some(126), output);
        if level == SandboxLevel::NoExec {
            return refused(
                "Refused: this agent runs at LEVEL_0_NO_EXEC (conversation only); nothing is executed.".into(),
            );
        }
        if let Some(why) = subagents::without_bash(profile) {
            return refused(why);
        }
        if cancel.is_cancelled() {
            return refused(INTERRUPTED.into());
        }
        let verdict = self
            .ports
            .gate
            .authorize(
                GateRequest {
                    agent: profile.clone(),
                    level,
                    session_id: req.session_id.clone(),
                    action: Action::Shell,
                    resource: command.to_string(),
                    approver_available: req.approver_available,
                    outside,
                },
                cancel.clone(),
            )
            .await;
        if let GateVerdict::Refuse { message, .. } = verdict {
            return refused(message);
        }
        if cancel.is_cancelled() {
            return refused(INTERRUPTED.into());
        }
        let settings = self.settings();
        let exec = ExecRequest {
            command: command.to_string(),
            level,
            agent_id: profile.id.clone(),
            workspace: profile.sandbox.isolated_dir.as_ref().map(PathBuf::from),
            timeout: Duration::from_secs(profile.sandbox.timeout_seconds.max(1)),
            allow_network: profile.sandbox.allow_network,
            env: settings.command_env,
            allowed_secrets: profile.allowed_secrets.clone(),
            output_limit: settings.output_limit,
            readable: None,
        };
        self.ports.sandbox.run(exec, cancel.clone()).await
    }

    /// Answers a `search_history` request: this session first, then (with `everywhere`) every
    /// session. `Some` holds the hits (text from earlier messages, outside text for this
    /// turn), `None` when there are none.
    fn search_history(&self, session_id: &str, q: &str, everywhere: bool) -> Option<String> {
        let store = &self.ports.store;
        let mut hits = store
            .search_messages(q, Some(session_id), 6)
            .unwrap_or_default();
        if hits.is_empty() && everywhere {
            hits = store.search_messages(q, None, 8).unwrap_or_default();
        }
        if hits.is_empty() {
            return None;
        }
        let mut s = String::new();
        for h in hits {
            let role = match h.role {
                Role::User => "USER",
                Role::Tool => "TOOL",
                _ => "SAYRI",
            };
            s.push_str(&format!(
                "- [{role} ({})]: {}\n",
                h.session_title,
                self.ports.redactor.redact(&h.content)
            ));
        }
        Some(s)
    }

    /// The title a session starts with: the first words of its first request
    /// ([`title::from_request`]), with secrets redacted before the cut (a cut must not leave a
    /// secret's unrecognisable prefix).
    fn initial_title(&self, first_request: &str) -> String {
        title::from_request(&redacted_prefix(
            self.ports.redactor.as_ref(),
            first_request.trim(),
            4 * title::MAX_TITLE_CHARS,
        ))
    }

    /// Generates a 3–4 word title for a session of `agent` from its first request with a
    /// short streamed request to the agent's model (an agent with an endpoint of its own never
    /// sends its requests elsewhere), and stores it if the title is still the initial one.
    /// Returns the title set, or `None` (errors are ignored: a title is cosmetic).
    pub async fn generate_title(
        &self,
        agent: &AgentProfile,
        session_id: &str,
        first_request: &str,
    ) -> Option<String> {
        let settings = self.settings();
        let request = ChatRequest {
            model: subagents::model_name(agent, &settings),
            messages: vec![
                ChatMessage::new(Role::System, TITLE_INSTRUCTION),
                ChatMessage::new(
                    Role::User,
                    redacted_prefix(self.ports.redactor.as_ref(), first_request, 120),
                ),
            ],
            temperature: Some(settings.title_temperature),
            max_tokens: Some(15),
            tools: None,
        };
        let mut stream = self.chat_model_for(agent).stream_chat(request);
        let mut text = String::new();
        let collect = async {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(ChatEvent::Content(c)) => text.push_str(&c),
                    Ok(ChatEvent::Finish(_)) => return true,
                    Ok(_) => {}
                    Err(_) => return false,
                }
            }
            false
        };
        let complete = tokio::time::timeout(Duration::from_secs(10), collect)
            .await
            .unwrap_or(false);
        if !complete {
            return None;
        }
        // Not a title (an answer, a greeting, too long): the first words of the request stay.
        let title = title::clean_model_title(&text)?;
        let initial = self.initial_title(first_request);
        let current = self.ports.store.session(session_id).ok().flatten()?;
        if current.title != initial {
            return None;
        }
        self.ports
            .store
            .rename_session(session_id, &title)
            .ok()
            .filter(|ok| *ok)
            .map(|_| title)
    }
}

/// One running turn: the request, the settings and profile it runs with, where its rows go,
/// and its outcome so far. Each step of the ReAct loop is a method.
struct Turn<'a> {
    engine: &'a AgentEngine,
    req: &'a TurnRequest,
    /// The settings at the start of the turn (later changes do not affect it).
    settings: EngineSettings,
    seed: SessionSeed<'a>,
    sink: TurnSink<'a>,
    /// The agent at the turn's level (`min(requested, agent's)`).
    profile: Arc<AgentProfile>,
    level: SandboxLevel,
    /// The model name sent to the provider.
    model: String,
    /// The agent's model: the provider's, or its own endpoint's.
    chat: Arc<dyn ChatModel>,
    /// Delegations above this turn (0 for the person's own agent).
    depth: usize,
    max_tokens: Option<u32>,
    max_calls: usize,
    /// Whether an earlier step streamed prose (the next step's prose is separated from it).
    streamed_any: bool,
    out: TurnOutcome,
    /// What the requests are built from.
    transcript: Transcript,
    /// The model's context window and completion cap.
    budget: ContextBudget,
    /// Token estimates for this model (calibrated as usage reports arrive).
    est: TokenEstimator,
    /// Commands run in this turn and their results.
    guard: RepetitionGuard,
    /// Weighted size and message count of the last request sent (to calibrate `est`).
    sent: (usize, usize),
    /// The turn's id in the store's journal while it runs (see `engine::interrupted`).
    journal: Option<i64>,
    /// The boundary around this turn's outside text, drawn fresh for the turn.
    boundary: Boundary,
    /// What the request's delegation tree shares (budget, outside text seen, commands run).
    tree: Arc<Tree>,
    /// The agents and requests from the person's turn down to this one (cycles and tasks
    /// handed down unchanged are refused).
    chain: Vec<(String, String)>,
    /// Where the person sees events: the person's turn's sink, also from a delegated turn
    /// (an interrupted sub-turn says so there).
    person_sink: &'a dyn EventSink,
    /// The command between its proposal and its stored result (an interrupt records it as not
    /// completed).
    pending_command: Option<String>,
    /// The MCP servers and tools this turn offers (listed in its prompt at its start).
    mcp: Vec<crate::domain::mcp_block::McpServerSummary>,
}

/// What a delegated turn gets from the turn that delegates it.
pub(super) struct Parent<'a> {
    tree: Arc<Tree>,
    chain: Vec<(String, String)>,
    person_sink: &'a dyn EventSink,
    depth: usize,
    /// The delegating turn's session (the sub-agent's session's parent).
    session: &'a str,
}

/// How a command step ended when the turn goes on.
enum Observed {
    /// The observation was recorded; the next model call follows.
    Continue,
    /// The turn ended (it was cancelled while the command ran).
    End(TurnOutcome),
}

impl<'a> Turn<'a> {
    fn new(
        engine: &'a AgentEngine,
        req: &'a TurnRequest,
        title: &'a str,
        sink: &'a dyn EventSink,
        parent: Option<Parent<'a>>,
    ) -> Turn<'a> {
        let settings = engine.settings();
        let root = parent.is_none();
        let parent = parent.unwrap_or_else(|| Parent {
            tree: Tree::new(&req.text, settings.delegation_budget),
            chain: Vec::new(),
            person_sink: sink,
            depth: 0,
            session: &req.session_id,
        });
        let mut chain = parent.chain;
        chain.push((req.agent.id.clone(), req.text.clone()));
        let level = req.level.min(req.agent.sandbox.level);
        let mut profile = (*req.agent).clone();
        profile.sandbox.level = level;
        let model = subagents::model_name(&profile, &settings);
        let max_tokens = profile.model.max_tokens.or(settings.max_tokens);
        let est = engine.estimator(&model);
        Turn {
            est,
            engine,
            req,
            seed: SessionSeed {
                id: &req.session_id,
                agent_id: &req.agent.id,
                title,
                parent: (!root).then_some(parent.session),
            },
            sink: TurnSink {
                inner: sink,
                cancel: &req.cancel,
            },
            max_calls: profile.max_model_calls(),
            chat: engine.chat_model_for(&profile),
            depth: parent.depth,
            boundary: Boundary::from_nonce(engine.ports.entropy.nonce()),
            tree: parent.tree,
            chain,
            person_sink: parent.person_sink,
            pending_command: None,
            mcp: Vec::new(),
            profile: Arc::new(profile),
            level,
            model,
            max_tokens,
            settings,
            streamed_any: false,
            journal: None,
            out: TurnOutcome {
                session_id: req.session_id.clone(),
                ..TurnOutcome::default()
            },
            transcript: Transcript::default(),
            budget: ContextBudget::default(),
            guard: RepetitionGuard::default(),
            sent: (0, 0),
        }
    }

    fn now(&self) -> f64 {
        self.engine.ports.clock.now_unix()
    }

    /// `text` with every known secret replaced by its marker: how command text and history
    /// search results are shown in events and stored, like command output.
    fn redacted(&self, text: &str) -> String {
        self.engine.ports.redactor.redact(text)
    }

    /// Stores a message of this turn's session; a store failure is reported as an `error`
    /// event and the turn goes on.
    fn store(&self, m: NewMessage) {
        if let Err(e) = self.engine.ports.store.append_message(&self.seed, &m) {
            self.sink.emit(CoreEvent::Error(e.to_string()));
        }
    }

    /// Reads the history before this turn, builds the transcript within the model's context
    /// and stores the request. Returns the finished outcome when the store fails or the
    /// request cannot fit the context (then nothing is stored or sent).
    async fn start(&mut self) -> Result<(), Box<TurnOutcome>> {
        let store = &self.engine.ports.store;
        let past = match store.messages(&self.req.session_id) {
            Ok(p) => p,
            Err(e) => return Err(Box::new(self.fail(None, e.to_string()))),
        };
        self.out.new_session = past.is_empty();
        // `provider.context_tokens` describes the provider's model; an agent with an endpoint
        // of its own gets the window its server publishes.
        let endpoint = self.profile.model.base_url.clone();
        let configured = match endpoint {
            None => self.settings.context_tokens,
            Some(_) => None,
        };
        self.budget = self
            .engine
            .context_budget(
                self.chat.as_ref(),
                &self.model,
                endpoint.as_deref(),
                configured,
                self.max_tokens,
                &self.req.cancel,
            )
            .await;
        self.mcp = self
            .engine
            .mcp_offered(&self.profile, self.level, self.req.cancel.clone())
            .await;
        let mut system = self
            .engine
            .system_prompt_with(&self.profile, self.level, &self.mcp);
        system.push_str(&self.delegation_prompt());
        let past: &[_] = if self.req.fresh_context { &[] } else { &past };
        self.transcript = history::build_transcript(
            &system,
            past,
            &self.req.text,
            &self.settings.history,
            &self.est,
        );
        let recalled = self.auto_recalled();
        self.transcript.current.push_str(&recalled);
        self.transcript.current_images = self.req.images.clone();
        if let Err(e) = self.transcript.check_fits(&self.budget, &self.est) {
            return Err(Box::new(self.fail(None, format!("Not sent: {e}."))));
        }
        let mut request = NewMessage::new(Role::User, self.req.text.clone(), self.now());
        request.images = self.req.images.clone();
        let request_id = match self.engine.ports.store.append_message(&self.seed, &request) {
            Ok(id) => id,
            Err(e) => return Err(Box::new(self.fail(None, e.to_string()))),
        };
        self.journal_start(request_id);
        Ok(())
    }

    /// Writes the running turn into the store's journal, so that a crash before
    /// [`Turn::journal_end`] is closed as interrupted at the next start. A failure is reported
    /// and the turn goes on (only the clean-up after a crash would miss it).
    fn journal_start(&mut self, request_id: i64) {
        let store = &self.engine.ports.store;
        match store.turn_started(&self.req.session_id, request_id, self.now()) {
            Ok(id) => self.journal = Some(id),
            Err(e) => self.sink.emit(CoreEvent::Error(e.to_string())),
        }
    }

    /// Forgets the turn in the journal: it ended, however it ended.
    fn journal_end(&mut self) {
        if let Some(id) = self.journal.take()
            && let Err(e) = self.engine.ports.store.turn_ended(id)
        {
            self.sink.emit(CoreEvent::Error(e.to_string()));
        }
    }

    /// Ends the turn with an error: stores `warning` (an error record) when given,
    /// emits `error` with `message`, and returns the outcome carrying `message`.
    fn fail(&mut self, warning: Option<NewMessage>, message: String) -> TurnOutcome {
        if let Some(w) = warning {
            self.store(w);
        }
        self.sink.emit(CoreEvent::Error(message.clone()));
        self.out.error = Some(message);
        std::mem::take(&mut self.out)
    }

    /// The outcome of an interrupted turn. The person's own turn emits and stores nothing (the
    /// person stopped it); a delegated turn records in its session that it was interrupted —
    /// the command it was at as not completed, then a note — and tells the person with an
    /// `error` event.
    fn cancelled(&mut self) -> TurnOutcome {
        if self.depth > 0 {
            self.record_interrupted();
        }
        self.out.cancelled = true;
        self.out.error = Some(INTERRUPTED.into());
        std::mem::take(&mut self.out)
    }

    /// The rows and the event of a delegated turn cut short by an interrupt.
    fn record_interrupted(&mut self) {
        let now = self.now();
        let what = match self.pending_command.take() {
            Some(command) => {
                self.store(super::interrupted::not_completed_by_interrupt(
                    &command, now,
                ));
                format!(
                    " while the command `{command}` was waiting for permission or running; it was stopped"
                )
            }
            None => String::new(),
        };
        let note = format!(
            "This delegated task of {} was interrupted{what}. Nothing more was run.",
            self.profile.name
        );
        self.store(error_row(&note, now));
        self.person_sink.emit(CoreEvent::Error(format!(
            "The delegated task of sub-agent {} (session {}) was interrupted{what}.",
            self.profile.id, self.req.session_id
        )));
    }

    /// Ends the turn because the request's budget is used up (`why`). The person's own turn
    /// ends with a note as its answer, streamed like one; a delegated turn fails with it, and
    /// the turn that delegated it is told.
    fn out_of_budget(&mut self, call: usize, why: BudgetSpent) -> TurnOutcome {
        let spent = self.tree.spent();
        if self.depth > 0 {
            let msg = format!("Stopped: {why}.");
            return self.fail(Some(error_row(&msg, self.now())), msg);
        }
        let raise = match why {
            BudgetSpent::Calls { budget } => {
                format!("agent.delegation_budget_calls {}", budget.saturating_mul(2))
            }
            BudgetSpent::Tokens { budget, .. } => {
                format!(
                    "agent.delegation_budget_tokens {}",
                    budget.saturating_mul(2)
                )
            }
        };
        let note = format!(
            "I stopped here: {why}; {} model calls and {} tokens were used. Ask me to continue if you want more done, or raise the budget (`sayri config set {raise}`).",
            spent.calls, spent.tokens
        );
        let sep = if call > 1 && self.streamed_any {
            "\n\n"
        } else {
            ""
        };
        self.sink
            .emit(CoreEvent::AssistantDelta(format!("{sep}{note}")));
        self.finish(note, None, None)
    }

    /// Stores the final answer, emits `assistant_done` and ends the turn.
    fn finish(
        &mut self,
        text: String,
        usage: Option<Usage>,
        reasoning: Option<String>,
    ) -> TurnOutcome {
        let mut m = NewMessage::new(Role::Assistant, text.clone(), self.now());
        m.usage = usage;
        m.reasoning = reasoning;
        self.store(m);
        self.sink.emit(CoreEvent::AssistantDone(text.clone()));
        self.out.text = Some(text);
        std::mem::take(&mut self.out)
    }

    /// One model call and what its answer asks for: a history search, a command, or the final
    /// answer. Returns the outcome when the turn ends here, `None` when it goes on.
    async fn step(&mut self, call: usize) -> Option<TurnOutcome> {
        if self.req.cancel.is_cancelled() {
            return Some(self.cancelled());
        }
        let request = match self.chat_request() {
            Ok(r) => r,
            Err(e) => {
                let msg = format!("Stopped: {e}.");
                return Some(self.fail(Some(error_row(&msg, self.now())), msg));
            }
        };
        if let Err(why) = self.tree.take_call() {
            return Some(self.out_of_budget(call, why));
        }
        self.out.model_calls += 1;
        let step = match self.call_model(request).await {
            Ok(s) => s,
            Err(out) => return Some(out),
        };
        self.streamed_any |= !step.answer.trim().is_empty();
        let estimate = self
            .est
            .tokens_of_weight(self.sent.0 + weighted_bytes(&step.answer));
        self.tree.add_tokens(step.usage, estimate);
        if let Some(u) = step.usage {
            self.count_usage(u);
        }
        let reasoning = (!step.reasoning.is_empty()).then(|| step.reasoning.clone());
        let now = self.now();
        if let Some(out) = self.unfinished_answer(&step, reasoning.clone(), now) {
            return Some(out);
        }
        let last_step = call == self.max_calls;
        if !last_step && let Some(q) = codeblock::memory_recall(&step.answer) {
            self.answer_recall(&step, &q);
            return None;
        }
        if !last_step && let Some(fact) = codeblock::memory_proposal(&step.answer) {
            self.answer_remember(&step, &fact).await;
            return None;
        }
        if !last_step && let Some(q) = codeblock::history_search(&step.answer) {
            self.answer_history_search(&step, &q);
            return None;
        }
        if !last_step && let Some(id) = codeblock::skill_read(&step.answer) {
            self.answer_skill_read(&step, &id);
            return None;
        }
        if let Some(body) = codeblock::mcp_request(&step.answer) {
            if last_step {
                let note = "(I reached the step limit for this request, so this tool was not called. Ask me to continue if you want it called.)".to_string();
                return Some(self.stop_with_note(call, &step, note, reasoning));
            }
            return match self.answer_mcp(&step, &body, reasoning, now).await {
                Observed::Continue => None,
                Observed::End(out) => Some(out),
            };
        }
        if !last_step && let Some(d) = subagents::delegation_first(&step.answer) {
            return match self.delegate(&step, d, reasoning, now).await {
                Observed::Continue => None,
                Observed::End(out) => Some(out),
            };
        }
        let blocks = codeblock::command_blocks(&step.answer);
        if let Some(first) = blocks.first() {
            let command = first.body.trim().to_string();
            if last_step {
                let note = format!(
                    "(I reached the step limit for this request, so this command was not run: `{}`. Ask me to continue if you want it run.)",
                    self.redacted(&command)
                );
                return Some(self.stop_with_note(call, &step, note, reasoning));
            }
            match self.guard.check(&command) {
                Verdict::Run => {}
                Verdict::Refuse => {
                    self.refuse_repeat(&step, &command, reasoning, now);
                    return None;
                }
                Verdict::Stop => {
                    let note = repetition::stop_note(&self.redacted(&command));
                    return Some(self.stop_with_note(call, &step, note, reasoning));
                }
            }
            let not_run = blocks.len() - 1;
            return match self
                .run_command(&step, command, not_run, reasoning, now)
                .await
            {
                Observed::Continue => None,
                Observed::End(out) => Some(out),
            };
        }
        Some(self.final_answer(step, reasoning, now))
    }

    /// Streams one model call; the turn's outcome when it was cancelled or the provider failed
    /// (with a hint when the provider cannot be reached).
    async fn call_model(&mut self, request: ChatRequest) -> Result<Step, TurnOutcome> {
        match self
            .engine
            .stream_step(
                self.chat.as_ref(),
                request,
                &self.sink,
                &self.req.cancel,
                self.streamed_any,
            )
            .await
        {
            StepEnd::Done(s) => Ok(s),
            StepEnd::Cancelled => Err(self.cancelled()),
            StepEnd::Failed(e) => {
                let e = image_refusal(e, !self.req.images.is_empty());
                let msg = match &e {
                    ChatError::Unreachable { url } => format!(
                        "Provider error: {e} — {}",
                        hints::unreachable(&self.profile, url)
                    ),
                    _ => format!("Provider error: {e}"),
                };
                let now = self.now();
                Err(self.fail(Some(error_row(&msg, now)), msg))
            }
        }
    }

    /// The request of the next model call, within the model's context. Redacted with the
    /// secrets known now: a value that became a secret after it was observed (e.g.
    /// `vault_set` while a card was open) never goes out again.
    fn chat_request(&mut self) -> Result<ChatRequest, crate::domain::context::ContextError> {
        let redactor = &self.engine.ports.redactor;
        let messages: Vec<ChatMessage> = self
            .transcript
            .render(&self.budget, &self.est)?
            .into_iter()
            .map(|m| ChatMessage {
                content: redactor.redact(&m.content),
                ..m
            })
            .collect();
        self.sent = (
            messages.iter().map(|m| weighted_bytes(&m.content)).sum(),
            messages.len(),
        );
        Ok(ChatRequest {
            model: self.model.clone(),
            messages,
            temperature: Some(self.profile.model.temperature),
            max_tokens: self.max_tokens,
            tools: None,
        })
    }

    /// Adds a usage report to the turn's totals and calibrates the model's token estimate
    /// with it (a store failure is reported and the turn goes on).
    fn count_usage(&mut self, u: Usage) {
        self.out.usage.prompt_tokens += u.prompt_tokens;
        self.out.usage.completion_tokens += u.completion_tokens;
        self.out.usage.total_tokens += u.total_tokens;
        let (weight, messages) = self.sent;
        if let Err(e) = self
            .engine
            .calibrate(&self.model, weight, messages, u.prompt_tokens)
        {
            self.sink.emit(CoreEvent::Error(e.to_string()));
        }
        self.est = self.engine.estimator(&self.model);
    }

    /// An answer the provider did not finish normally. A plain-text answer that hit the token
    /// limit is still an answer: it is kept, with a note that it was cut off. A cut-off reply
    /// that was writing a code block is an error (its command cannot be trusted, so nothing
    /// runs), and so is a filtered answer. `None` when the answer finished normally.
    fn unfinished_answer(
        &mut self,
        step: &Step,
        reasoning: Option<String>,
        now: f64,
    ) -> Option<TurnOutcome> {
        let strip = &self.settings.strip_patterns;
        match &step.finish {
            Some(FinishReason::Length)
                if !step.answer.contains("```")
                    && !strip_patterns(&step.answer, strip).is_empty() =>
            {
                let note = format!(
                    "\n\n(The answer was cut off at the token limit; for longer answers run `{}`.)",
                    hints::raise_max_tokens(&self.profile, self.max_tokens)
                );
                self.sink.emit(CoreEvent::AssistantDelta(note.clone()));
                let text = format!("{}{note}", strip_patterns(&step.answer, strip));
                Some(self.finish(text, step.usage, reasoning))
            }
            Some(FinishReason::Length) => {
                let msg = format!(
                    "The answer was cut off at the token limit (finish_reason: length), so nothing in it was run. Raise the limit with `{}`, or ask for a shorter answer.",
                    hints::raise_max_tokens(&self.profile, self.max_tokens)
                );
                if !step.answer.trim().is_empty() {
                    let mut m = NewMessage::new(Role::Assistant, step.answer.clone(), now);
                    m.usage = step.usage;
                    m.reasoning = reasoning;
                    self.store(m);
                }
                let partial = strip_patterns(&step.answer, strip);
                self.out.text = (!partial.is_empty()).then_some(partial);
                Some(self.fail(Some(error_row(&msg, now)), msg))
            }
            Some(FinishReason::ContentFilter) => {
                let msg = "The provider filtered the answer (finish_reason: content_filter). Rephrase the request.".to_string();
                Some(self.fail(Some(error_row(&msg, now)), msg))
            }
            _ => None,
        }
    }

    /// Answers a ```` ```search_history ```` block from the store; the results go back to the
    /// model as the observation.
    fn answer_history_search(&mut self, step: &Step, query: &str) {
        let label = self.redacted(&format!("search_history: {query}"));
        self.sink.emit(CoreEvent::ToolStart(label.clone()));
        // A sub-agent searches other sessions only where it may read its creator's memory.
        let everywhere = self.memory_scope().every_agent;
        let obs = match self
            .engine
            .search_history(&self.req.session_id, query, everywhere)
        {
            Some(hits) => {
                let hits = self.redacted(&hits);
                self.tree.saw(&label, &hits);
                let header = format!("[History search for '{}'] found:", step_label(query));
                self.redacted(&framed(&header, &self.boundary, &hits, ""))
            }
            None => self.redacted(&format!(
                "[History search for '{}']: no matching messages.",
                step_label(query)
            )),
        };
        self.sink.emit(CoreEvent::ToolFinish {
            command: label,
            output: obs.clone(),
            exit_code: Some(0),
        });
        self.observe(&step.answer, StepObservation::Text(obs));
    }

    /// Answers a ```` ```read_skill ```` block: the skill's `SKILL.md` (or why not) goes back to
    /// the model as the observation.
    fn answer_skill_read(&mut self, step: &Step, id: &str) {
        let label = self.redacted(&format!("read_skill: {id}"));
        self.sink.emit(CoreEvent::ToolStart(label.clone()));
        let obs = match self.engine.read_skill(&self.profile, id) {
            Ok(text) => {
                let text = self.redacted(&text);
                self.tree.saw(&label, &text);
                let header = format!("[Skill {}: its SKILL.md]", step_label(id));
                framed(&header, &self.boundary, &text, "")
            }
            Err(why) => self.redacted(&why.to_string()),
        };
        self.sink.emit(CoreEvent::ToolFinish {
            command: label,
            output: obs.clone(),
            exit_code: Some(0),
        });
        self.observe(&step.answer, StepObservation::Text(obs));
    }

    /// Ends the turn without running the command `step` proposes (the step limit was reached,
    /// or the model insists on a refused repeat): the final answer is the prose before the
    /// block plus `note`.
    fn stop_with_note(
        &mut self,
        call: usize,
        step: &Step,
        note: String,
        reasoning: Option<String>,
    ) -> TurnOutcome {
        let prose = strip_patterns(&step.answer, &self.settings.strip_patterns);
        let before = prose.split("```").next().unwrap_or("").trim().to_string();
        // The prose was streamed already; stream the note too, so clients that show the
        // streamed text (e.g. `sayri ask`) tell the user what was not run.
        let sep = if call > 1 || !before.is_empty() {
            "\n\n"
        } else {
            ""
        };
        self.sink
            .emit(CoreEvent::AssistantDelta(format!("{sep}{note}")));
        let text = if before.is_empty() {
            note
        } else {
            format!("{before}\n\n{note}")
        };
        self.finish(text, step.usage, reasoning)
    }

    /// Stores the model's answer of a step that proposes a command.
    fn store_step(&self, step: &Step, reasoning: Option<String>, now: f64) {
        let mut m = NewMessage::new(Role::Assistant, step.answer.clone(), now);
        m.usage = step.usage;
        m.reasoning = reasoning;
        self.store(m);
    }

    /// Stores the step, authorises and runs `command`, stores its redacted result as a `tool`
    /// row (the observation as the model sees it, and the whole capture), records a learned
    /// preference, and feeds the observation back to the model.
    async fn run_command(
        &mut self,
        step: &Step,
        command: String,
        not_run: usize,
        reasoning: Option<String>,
        now: f64,
    ) -> Observed {
        self.store_step(step, reasoning, now);
        // The command as clients, the database and the log may see it.
        let shown = self.redacted(&command);
        self.sink.emit(CoreEvent::ToolStart(shown.clone()));
        let outside = self.tree.outside_origin(&command);
        self.pending_command = Some(shown.clone());
        let redactor = &self.engine.ports.redactor;
        let result = self
            .engine
            .authorize_and_run(&self.profile, self.level, self.req, &command, outside)
            .await
            .redacted(redactor.as_ref());
        if result.status == ExecStatus::Denied {
            self.out.refused_commands.push(Refusal {
                command: shown.clone(),
                reason: result.output.clone(),
            });
        } else {
            self.out.commands_run += 1;
        }
        let observation = CommandObservation::new(
            result.status,
            result.exit_code,
            Excerpt {
                head: result.output.clone(),
                tail: result.output_tail.clone(),
                omitted: result.omitted,
            },
            not_run,
            shown.clone(),
            self.boundary.clone(),
        );
        let output = observation.output.text();
        let budget = self
            .budget
            .observation_tokens(self.transcript.fixed_tokens(&self.est));
        let mut tool = NewMessage::new(
            Role::Tool,
            observation.render(budget, &self.est),
            self.now(),
        );
        tool.tool_call = Some(ToolCallRecord {
            command: shown.clone(),
            exit_code: result.exit_code,
            status: result.status.as_str().into(),
            output: output.clone(),
            duration_ms: result.duration.as_secs_f64() * 1000.0,
            delegated: None,
        });
        self.store(tool);
        self.pending_command = None;
        if result.status != ExecStatus::Denied {
            self.tree.ran(&command);
            self.tree.saw(&shown, &output);
        }
        if self.req.cancel.is_cancelled() {
            return Observed::End(self.cancelled());
        }
        if matches!(
            result.status,
            ExecStatus::Success | ExecStatus::Failed | ExecStatus::Timeout
        ) {
            self.guard.record_run(&command, result.exit_code, &output);
        }
        self.sink.emit(CoreEvent::ToolFinish {
            command: shown,
            output,
            exit_code: result.exit_code,
        });
        self.learn_preference(&command, result.status);
        self.observe(&step.answer, StepObservation::Command(observation));
        Observed::Continue
    }

    /// Does not run `command`, which already ran twice in this turn with the same result:
    /// stores the step and the refusal (a `tool` row, so a replayed history shows why it did
    /// not run) and tells the model to try something else or answer.
    fn refuse_repeat(&mut self, step: &Step, command: &str, reasoning: Option<String>, now: f64) {
        self.store_step(step, reasoning, now);
        let obs = repetition::refusal_observation(command);
        let mut tool = NewMessage::new(Role::Tool, obs.clone(), self.now());
        tool.tool_call = Some(ToolCallRecord {
            command: self.redacted(command),
            exit_code: None,
            status: "repeated".into(),
            output: String::new(),
            duration_ms: 0.0,
            delegated: None,
        });
        self.store(tool);
        self.guard.record_refusal(command);
        self.observe(&step.answer, StepObservation::Text(obs));
    }

    /// Adds the model's `answer` and what it was told next to the turn's transcript.
    fn observe(&mut self, answer: &str, observation: StepObservation) {
        self.transcript.steps.push(TurnStep {
            answer: answer.to_string(),
            observation,
        });
    }

    /// With `reinforcement_learning`, records `(agent, request, command, success)` for a
    /// command that ran and is not a lookup.
    fn learn_preference(&self, command: &str, status: ExecStatus) {
        if !self.profile.reinforcement_learning
            || !matches!(status, ExecStatus::Success | ExecStatus::Failed)
            || LOOKUP_PREFIXES.iter().any(|p| command.starts_with(p))
        {
            return;
        }
        let update = PreferenceUpdate {
            agent_id: self.profile.id.clone(),
            intent: self.req.text.clone(),
            command: command.to_string(),
            success: status == ExecStatus::Success,
            rejected_command: None,
            notes: None,
            now: self.now(),
        };
        if let Err(e) = self.engine.ports.store.record_preference(&update) {
            self.sink.emit(CoreEvent::Error(e.to_string()));
        }
    }

    /// An answer without a block ends the turn; an empty one (after `strip_patterns`) is an
    /// error.
    fn final_answer(&mut self, step: Step, reasoning: Option<String>, now: f64) -> TurnOutcome {
        let clean = strip_patterns(&step.answer, &self.settings.strip_patterns);
        if clean.is_empty() {
            let msg = "The model returned an empty answer. Try again, or check the model server."
                .to_string();
            return self.fail(Some(error_row(&msg, now)), msg);
        }
        self.finish(clean, step.usage, reasoning)
    }
}

/// A request the server refused while it carried an image is, most often, a model that does not
/// read images: the error says so and what to do (a refusal for another reason keeps the
/// server's words).
fn image_refusal(e: ChatError, with_images: bool) -> ChatError {
    match e {
        ChatError::Http {
            status,
            message,
            retry_after,
        } if with_images
            && (400..500).contains(&status)
            && ![401, 403, 408, 429].contains(&status) =>
        {
            ChatError::Http {
                status,
                message: format!(
                    "the model did not accept the attached image ({message}); choose a model that reads images (a vision model) for this agent, or ask without the image"
                ),
                retry_after,
            }
        }
        other => other,
    }
}

/// The error record stored when a turn ends with an error (shown as an error, never replayed
/// to a model).
fn error_row(message: &str, now: f64) -> NewMessage {
    NewMessage::new(Role::Error, message, now)
}
