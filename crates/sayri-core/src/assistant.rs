//! `SayriCore`: the active agent and session, one local turn at a time, interrupt, sessions,
//! agent switching and remote (gateway/routine) turns.
//!
//! * **One local turn at a time.** `talk`/`ask` while a turn runs are refused with
//!   [`CoreError::Busy`] (and a `hint`), never queued: a person who wants the new request
//!   interrupts first. Remote turns run independently (their own session and events).
//! * **Interrupt** cancels the turn's token (model stream dropped, command killed, open
//!   permission questions ended) and bumps a generation counter under the same lock that
//!   guards event delivery, so no event of the old turn reaches the sink afterwards.
//! * **Events** of local turns go to the core's sink (broadcast by the daemon); those of a
//!   remote turn go only to the sink its caller passes.
//! * **Spoken turns** ([`SayriCore::start_local_turn`] with `announce: false`) are local turns
//!   whose `busy`, `state` and `user` events the voice state machine emits itself (it already
//!   said `user` and `thinking`, and it knows when the spoken answer ends); the answer's events
//!   (`assistant_delta`, tools, `assistant_done`, `error`) reach clients as for a typed turn, and
//!   an observer sees them too (to speak the answer while it streams).
//! * **Rest state.** When a typed turn ends the state returns to the rest state — `idle`, or
//!   what the voice side says ([`SayriCore::set_rest_state`]: `listening` while the microphone
//!   waits for speech in `always` mode).

use crate::domain::agents::ChainError;
use crate::domain::profile::AgentProfile;
use crate::engine::agent::{AgentEngine, TurnOutcome, TurnRequest};
use crate::engine::events::{CoreEvent, CoreState, EventSink};
use crate::ports::{ChatImage, SessionInfo, StoreError, StoredMessage, effective_agent};
use crate::sync::{lock, read, write};
use sayri_protocol::SandboxLevel;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub use crate::ports::agents::{AgentDirectory, StaticAgents};

/// Errors of core operations, with what to do next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoreError {
    /// A local turn is running.
    #[error("a request is already running — wait for it to finish, or interrupt it first")]
    Busy,
    /// Empty request text.
    #[error("missing 'text'")]
    EmptyText,
    /// Unknown agent id.
    #[error("agent not found: {0}")]
    UnknownAgent(String),
    /// An agent file exists but is invalid, or its creators cannot be resolved.
    #[error(transparent)]
    BadAgent(ChainError),
    /// Unknown session id.
    #[error("session not found: {0} (`sayri sessions list` shows the ids)")]
    UnknownSession(String),
    /// A session id prefix that more than one session starts with.
    #[error("{prefix} matches {} sessions: {} — give more characters of the id", .matches.len(), .matches.join(", "))]
    AmbiguousSession {
        /// The prefix as given.
        prefix: String,
        /// Ids that start with it (at most [`MAX_PREFIX_MATCHES`]).
        matches: Vec<String>,
    },
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The turn task ended without a result (a bug; the log has details).
    #[error("the request ended unexpectedly — try again")]
    Lost,
}

/// Fewest characters of a session id prefix that [`SayriCore::resolve_session_id`] accepts.
pub const MIN_SESSION_PREFIX: usize = 4;
/// At most this many matches are listed for an ambiguous prefix.
pub const MAX_PREFIX_MATCHES: usize = 10;

/// Result of [`SayriCore::ask`], the `ask` command's reply: `{text, error, session_id}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AskResult {
    /// Final answer (`""` if none).
    pub text: String,
    /// Error message, `None` on success.
    pub error: Option<String>,
    /// Session of the turn.
    pub session_id: String,
}

/// A session with its messages (`session_get`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionDetail {
    /// The session.
    pub info: SessionInfo,
    /// Its messages in order.
    pub messages: Vec<StoredMessage>,
    /// The sessions of the sub-agents its requests delegated to, oldest first.
    pub sub_sessions: Vec<SessionInfo>,
}

/// A snapshot for `status`.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreStatus {
    /// State machine state.
    pub state: CoreState,
    /// Whether a local turn runs.
    pub busy: bool,
    /// Active session id (may have no row yet).
    pub session_id: String,
    /// Active agent id.
    pub agent_id: String,
}

/// A remote turn: a gateway message or a routine, run for someone who cannot answer
/// permission questions.
#[derive(Debug, Clone)]
pub struct RemoteRequest {
    /// Request text.
    pub text: String,
    /// Author as the gateway names them (e.g. `@bob`).
    pub author: String,
    /// Agent to use; `None` = the active agent.
    pub target_agent_id: Option<String>,
    /// Level requested by the caller: it can lower the agent's level, never raise it.
    pub sandbox_level: Option<SandboxLevel>,
    /// Gateway instance id (`""` for routines).
    pub instance_id: String,
    /// Session; `None` = `remote-<instance>-<agent>-<author>`.
    pub session_id: Option<String>,
    /// Cancels the turn (e.g. the gateway stopped).
    pub cancel: CancellationToken,
}

/// Most images waiting for the next request.
pub const MAX_ATTACHED_IMAGES: usize = 4;

struct Inner {
    state: CoreState,
    busy: bool,
    /// The running turn emits its own `busy`/`state` events (a typed turn).
    announced: bool,
    agent: Arc<AgentProfile>,
    session_id: String,
    turn: Option<CancellationToken>,
    generation: u64,
    /// Images attached for the next local request (`attach_image`).
    attached: Vec<ChatImage>,
}

/// The headless brain's front: what IPC commands call.
pub struct SayriCore {
    engine: Arc<AgentEngine>,
    agents: Arc<dyn AgentDirectory>,
    sink: Arc<dyn EventSink>,
    inner: Arc<Mutex<Inner>>,
    rest: Arc<RestState>,
}

/// The state a typed turn returns to when it ends (see [`SayriCore::set_rest_state`]).
pub type RestStateFn = Arc<dyn Fn() -> CoreState + Send + Sync>;

#[derive(Default)]
struct RestState(std::sync::RwLock<Option<RestStateFn>>);

impl RestState {
    fn get(&self) -> CoreState {
        let f = read(&self.0).clone();
        f.map_or(CoreState::Idle, |f| f())
    }
}

/// How a local turn started with [`SayriCore::start_local_turn`] shows itself.
#[derive(Clone, Default)]
pub struct TurnOptions {
    /// Emit the turn's `busy`, `state` and `user` events (typed turns). A spoken turn leaves
    /// them to the voice state machine, which already announced the query and knows when the
    /// spoken answer ends.
    pub announce: bool,
    /// Also receives every event of the turn while it is current (e.g. the answer's
    /// `assistant_delta`s, to speak them as they stream). Must not block.
    pub observer: Option<Arc<dyn EventSink>>,
}

/// A running local turn (from [`SayriCore::start_local_turn`]).
pub struct LocalTurn {
    /// The session it runs in.
    pub session_id: String,
    /// Its generation: [`SayriCore::interrupt_turn`] stops exactly this turn.
    pub generation: u64,
    outcome: oneshot::Receiver<TurnOutcome>,
}

impl LocalTurn {
    /// Waits for the turn to end (answer, error or interrupt).
    ///
    /// # Errors
    /// [`CoreError::Lost`] when the turn's task ended without a result.
    pub async fn outcome(self) -> Result<TurnOutcome, CoreError> {
        self.outcome.await.map_err(|_| CoreError::Lost)
    }
}

/// Delivers events of one local turn only while its generation is current. The check and
/// the delivery happen under the core's lock, so `interrupt` (which bumps the generation
/// under that lock) is a hard barrier.
struct GenerationSink {
    inner: Arc<Mutex<Inner>>,
    sink: Arc<dyn EventSink>,
    observer: Option<Arc<dyn EventSink>>,
    generation: u64,
}

impl EventSink for GenerationSink {
    /// Events of the running generation go to the observer and the sink. Once the turn was
    /// interrupted, only `error` events still reach the sink: the record that a delegated
    /// sub-turn was cut short is news to the person, nothing else of that turn is.
    fn emit(&self, event: CoreEvent) {
        let g = lock(&self.inner);
        if g.generation == self.generation {
            if let Some(o) = &self.observer {
                o.emit(event.clone());
            }
            self.sink.emit(event);
        } else if matches!(event, CoreEvent::Error(_)) {
            self.sink.emit(event);
        }
    }
}

fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl SayriCore {
    /// A core with `agent_id` active (falls back to `default`) and a fresh session id (no row
    /// until its first message). Emits nothing.
    pub fn new(
        engine: Arc<AgentEngine>,
        agents: Arc<dyn AgentDirectory>,
        sink: Arc<dyn EventSink>,
        agent_id: &str,
    ) -> Result<SayriCore, CoreError> {
        let agent = match effective_agent(&*agents, agent_id).map_err(CoreError::BadAgent)? {
            Some(a) => a,
            None => effective_agent(&*agents, "default")
                .map_err(CoreError::BadAgent)?
                .unwrap_or_else(AgentProfile::builtin_default),
        };
        engine.set_agents(agents.clone());
        Ok(SayriCore {
            engine,
            agents,
            sink,
            rest: Arc::default(),
            inner: Arc::new(Mutex::new(Inner {
                state: CoreState::Idle,
                busy: false,
                announced: false,
                agent: Arc::new(agent),
                session_id: new_session_id(),
                turn: None,
                generation: 0,
                attached: Vec::new(),
            })),
        })
    }

    /// The effective profile of agent `id`, as a turn would run it: its file bound by its
    /// creators' current profiles (every turn resolves its agent here, so tightening a creator
    /// reaches the next turn of its children).
    ///
    /// # Errors
    /// [`CoreError::UnknownAgent`] when there is no such agent, [`CoreError::BadAgent`] when its
    /// file or a creator's is invalid or a creator is missing.
    pub fn resolve(&self, id: &str) -> Result<Arc<AgentProfile>, CoreError> {
        effective_agent(&*self.agents, id)
            .map_err(CoreError::BadAgent)?
            .map(Arc::new)
            .ok_or_else(|| CoreError::UnknownAgent(id.into()))
    }

    /// The agent directory.
    pub fn agents(&self) -> &Arc<dyn AgentDirectory> {
        &self.agents
    }

    /// The engine (for `prompt show`, settings and skills).
    pub fn engine(&self) -> &Arc<AgentEngine> {
        &self.engine
    }

    /// Current status.
    pub fn status(&self) -> CoreStatus {
        let g = lock(&self.inner);
        CoreStatus {
            state: g.state,
            busy: g.busy,
            session_id: g.session_id.clone(),
            agent_id: g.agent.id.clone(),
        }
    }

    /// The active agent.
    pub fn active_agent(&self) -> Arc<AgentProfile> {
        lock(&self.inner).agent.clone()
    }

    /// Starts a local turn and returns at once with the session id (`talk`). Events:
    /// `busy true`, `state thinking`, `user`, deltas/tools, `assistant_done` or `error`,
    /// `busy false`, `state` back to the rest state.
    pub fn talk(&self, text: &str) -> Result<String, CoreError> {
        let turn = self.start_local_turn(text, Self::typed())?;
        Ok(turn.session_id)
    }

    /// Runs a local turn and resolves with its result (`ask`). Completion happens when the
    /// turn ends (answer, error or interrupt).
    pub async fn ask(&self, text: &str) -> Result<AskResult, CoreError> {
        let turn = self.start_local_turn(text, Self::typed())?;
        let session_id = turn.session_id.clone();
        let outcome = turn.outcome().await?;
        Ok(AskResult {
            text: outcome.text.unwrap_or_default(),
            error: outcome.error,
            session_id,
        })
    }

    fn typed() -> TurnOptions {
        TurnOptions {
            announce: true,
            observer: None,
        }
    }

    /// Makes `f` say which state a typed turn returns to when it ends or is interrupted
    /// (default `idle`): the voice side answers `listening` while its microphone waits for
    /// speech in `always` mode. `f` must be quick and must not call into the core.
    pub fn set_rest_state(&self, f: RestStateFn) {
        *write(&self.rest.0) = Some(f);
    }

    /// Starts a local turn in the active session with the active agent (resolved as every
    /// turn is) and returns at once. One local turn at a time: while one runs this is refused
    /// with [`CoreError::Busy`] (a typed turn also emits the hint "Please wait for the response
    /// to finish."). `options` says whether the turn announces itself (typed) or leaves that to
    /// the voice state machine (spoken), and who else sees its events. Must be called inside a
    /// Tokio runtime (the turn runs as a task).
    ///
    /// # Errors
    /// [`CoreError::EmptyText`], [`CoreError::Busy`], or the active agent's profile cannot be
    /// resolved.
    pub fn start_local_turn(
        &self,
        text: &str,
        options: TurnOptions,
    ) -> Result<LocalTurn, CoreError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(CoreError::EmptyText);
        }
        let cancel = CancellationToken::new();
        let active_id = lock(&self.inner).agent.id.clone();
        let agent = self.resolve(&active_id)?;
        let (generation, request) = {
            let mut g = lock(&self.inner);
            if g.busy {
                if options.announce {
                    self.sink.emit(CoreEvent::Hint(
                        "Please wait for the response to finish.".into(),
                    ));
                }
                return Err(CoreError::Busy);
            }
            if g.agent.id == agent.id {
                g.agent = agent;
            }
            g.generation += 1;
            g.busy = true;
            g.announced = options.announce;
            g.turn = Some(cancel.clone());
            if options.announce {
                g.state = CoreState::Thinking;
                self.sink.emit(CoreEvent::Busy(true));
                self.sink.emit(CoreEvent::State(CoreState::Thinking));
                self.sink.emit(CoreEvent::User(text.to_string()));
            }
            let request = TurnRequest {
                session_id: g.session_id.clone(),
                title_if_new: None,
                agent: g.agent.clone(),
                level: g.agent.sandbox.level,
                text: text.to_string(),
                images: std::mem::take(&mut g.attached),
                approver_available: true,
                fresh_context: false,
                cancel: cancel.clone(),
            };
            (g.generation, request)
        };
        let session_id = request.session_id.clone();
        let (tx, rx) = oneshot::channel();
        let engine = self.engine.clone();
        let inner = self.inner.clone();
        let sink = self.sink.clone();
        let rest = self.rest.clone();
        let observer = options.observer;
        tokio::spawn(async move {
            let gsink = GenerationSink {
                inner: inner.clone(),
                sink: sink.clone(),
                observer,
                generation,
            };
            let first_request = request.text.clone();
            let agent = request.agent.clone();
            let outcome = engine.run_turn(request, &gsink).await;
            {
                let mut g = lock(&inner);
                if g.generation == generation {
                    g.busy = false;
                    g.state = CoreState::Idle;
                    g.turn = None;
                    if g.announced {
                        sink.emit(CoreEvent::Busy(false));
                        sink.emit(CoreEvent::State(rest.get()));
                    }
                }
            }
            // A turn answered without the model (e.g. a refusal) gets no model-written title.
            if outcome.new_session
                && outcome.text.is_some()
                && outcome.model_calls > 0
                && engine.settings().generate_titles
            {
                let engine = engine.clone();
                let sid = outcome.session_id.clone();
                tokio::spawn(async move {
                    engine.generate_title(&agent, &sid, &first_request).await;
                });
            }
            let _ = tx.send(outcome);
        });
        Ok(LocalTurn {
            session_id,
            generation,
            outcome: rx,
        })
    }

    /// Attaches `image` to the next local request (`talk`/`ask`): it is sent with that
    /// request's text and stored with its message. Up to [`MAX_ATTACHED_IMAGES`] go together.
    /// Returns how many images are now waiting, or `None` (nothing attached) when that many
    /// are waiting already.
    pub fn attach_image(&self, image: ChatImage) -> Option<usize> {
        let mut g = lock(&self.inner);
        if g.attached.len() >= MAX_ATTACHED_IMAGES {
            return None;
        }
        g.attached.push(image);
        Some(g.attached.len())
    }

    /// Interrupts the running local turn: cancels its token, and from this call on none of
    /// its events reach the sink. Emits `busy false` and `state` (the rest state) if a typed
    /// turn was running. Returns whether a turn was running.
    pub fn interrupt(&self) -> bool {
        let mut g = lock(&self.inner);
        self.interrupt_locked(&mut g)
    }

    /// Interrupts the local turn of `generation` (from [`LocalTurn::generation`]) if it is
    /// still the running one; a later turn is left alone. Returns whether it was interrupted.
    pub fn interrupt_turn(&self, generation: u64) -> bool {
        let mut g = lock(&self.inner);
        if g.generation != generation || g.turn.is_none() {
            return false;
        }
        self.interrupt_locked(&mut g)
    }

    fn interrupt_locked(&self, g: &mut Inner) -> bool {
        g.generation += 1;
        let was = g.turn.take();
        if let Some(c) = &was {
            c.cancel();
        }
        if g.busy {
            g.busy = false;
            g.state = CoreState::Idle;
            if g.announced {
                self.sink.emit(CoreEvent::Busy(false));
                self.sink.emit(CoreEvent::State(self.rest.get()));
            }
        }
        was.is_some()
    }

    /// Starts a new conversation (interrupting a running turn). The session row appears with
    /// its first message. Emits `conversation_started` and a hint. Returns the new id.
    pub fn new_conversation(&self) -> String {
        self.interrupt();
        let id = new_session_id();
        lock(&self.inner).session_id = id.clone();
        self.sink.emit(CoreEvent::ConversationStarted(id.clone()));
        self.sink
            .emit(CoreEvent::Hint("New conversation started.".into()));
        id
    }

    /// Makes `session_id` active and switches to its agent (fallback: current agent). An
    /// unknown id changes nothing (no error, the current session stays). Returns the active
    /// session id.
    pub fn switch_session(&self, session_id: &str) -> Result<String, CoreError> {
        let store = &self.engine.ports().store;
        let Some(info) = store.session(session_id)? else {
            return Ok(lock(&self.inner).session_id.clone());
        };
        self.interrupt();
        let agent = self.resolve(&info.agent_id).ok();
        {
            let mut g = lock(&self.inner);
            g.session_id = info.id.clone();
            if let Some(a) = agent {
                g.agent = a;
            }
        }
        let short: String = info.title.chars().take(24).collect();
        self.sink
            .emit(CoreEvent::Hint(format!("Conversation: {short}…")));
        Ok(info.id)
    }

    /// Non-empty sessions, newest first.
    pub fn sessions_list(&self, limit: usize) -> Result<Vec<SessionInfo>, CoreError> {
        Ok(self.engine.ports().store.list_sessions(limit)?)
    }

    /// The full id of the session `given` names: an exact id, or a unique prefix of at least
    /// [`MIN_SESSION_PREFIX`] characters.
    ///
    /// # Errors
    /// [`CoreError::UnknownSession`] (no match, or a shorter prefix);
    /// [`CoreError::AmbiguousSession`] listing the matches; a store error.
    pub fn resolve_session_id(&self, given: &str) -> Result<String, CoreError> {
        let store = &self.engine.ports().store;
        let given = given.trim();
        if store.session(given)?.is_some() {
            return Ok(given.to_string());
        }
        if given.chars().count() < MIN_SESSION_PREFIX {
            return Err(CoreError::UnknownSession(given.into()));
        }
        let mut matches = store.session_ids_with_prefix(given, MAX_PREFIX_MATCHES)?;
        match matches.len() {
            0 => Err(CoreError::UnknownSession(given.into())),
            1 => Ok(matches.remove(0)),
            _ => Err(CoreError::AmbiguousSession {
                prefix: given.into(),
                matches,
            }),
        }
    }

    /// One session with its messages.
    pub fn session_get(&self, session_id: &str) -> Result<SessionDetail, CoreError> {
        let store = &self.engine.ports().store;
        let info = store
            .session(session_id)?
            .ok_or_else(|| CoreError::UnknownSession(session_id.into()))?;
        Ok(SessionDetail {
            info,
            messages: store.messages(session_id)?,
            sub_sessions: store.sub_sessions(session_id)?,
        })
    }

    /// Renames a session.
    pub fn session_rename(&self, session_id: &str, title: &str) -> Result<(), CoreError> {
        if self
            .engine
            .ports()
            .store
            .rename_session(session_id, title.trim())?
        {
            Ok(())
        } else {
            Err(CoreError::UnknownSession(session_id.into()))
        }
    }

    /// Deletes a session; deleting the active one starts a new conversation. Returns whether
    /// it existed.
    pub fn session_delete(&self, session_id: &str) -> Result<bool, CoreError> {
        let active = lock(&self.inner).session_id == session_id;
        if active {
            self.interrupt();
        }
        let existed = self.engine.ports().store.delete_session(session_id)?;
        if active {
            self.new_conversation();
        }
        Ok(existed)
    }

    /// Switches the active agent (takes effect at the next turn). Emits a hint.
    pub fn agent_switch(&self, agent_id: &str) -> Result<Arc<AgentProfile>, CoreError> {
        let agent = self.resolve(agent_id)?;
        lock(&self.inner).agent = agent.clone();
        self.sink
            .emit(CoreEvent::Hint(format!("Agent: {}", agent.name)));
        Ok(agent)
    }

    /// Runs a remote turn: no person can approve at **any** step (pinned by
    /// `remote_turns_never_approve_and_never_raise_the_level`); the level is `min(requested, agent's)`; there is no
    /// cut-off — events stream to `sink` until the turn ends. Does not touch the local state
    /// machine. Returns the outcome (the final text, or the error).
    pub async fn process_remote_message(
        &self,
        req: RemoteRequest,
        sink: &dyn EventSink,
    ) -> Result<TurnOutcome, CoreError> {
        self.remote_turn(req, false, sink).await
    }

    /// Runs a routine's (or a trigger's) turn: a remote turn — no approver, the agent's
    /// effective profile — whose model sees **none** of the session's earlier messages, so each
    /// run starts from the agent's system prompt and the routine's prompt alone while the runs
    /// still accumulate in the routine's own session (`req.session_id`). Pinned by the daemon
    /// test `a_routine_fires_once_at_its_slot_in_a_fresh_context_and_keeps_its_result`.
    pub async fn run_routine_turn(
        &self,
        req: RemoteRequest,
        sink: &dyn EventSink,
    ) -> Result<TurnOutcome, CoreError> {
        self.remote_turn(req, true, sink).await
    }

    async fn remote_turn(
        &self,
        req: RemoteRequest,
        fresh_context: bool,
        sink: &dyn EventSink,
    ) -> Result<TurnOutcome, CoreError> {
        if req.text.trim().is_empty() {
            return Err(CoreError::EmptyText);
        }
        let agent = match &req.target_agent_id {
            Some(id) if !id.is_empty() => self.resolve(id)?,
            _ => self.resolve(&self.active_agent().id)?,
        };
        let level = req
            .sandbox_level
            .map_or(agent.sandbox.level, |l| l.min(agent.sandbox.level));
        let author = req.author.trim_start_matches('@').to_string();
        let session_id = req.session_id.clone().unwrap_or_else(|| {
            if req.instance_id.is_empty() {
                format!("remote-{}-{}", agent.id, author)
            } else {
                format!("remote-{}-{}-{}", req.instance_id, agent.id, author)
            }
        });
        let label = {
            let l = req.instance_id.replace("sayri-gateway-", "");
            let mut c = l.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => "Gateway".into(),
            }
        };
        let request = TurnRequest {
            session_id,
            title_if_new: Some(format!("{} ({label})", req.author)),
            agent,
            level,
            text: req.text.trim().to_string(),
            images: Vec::new(),
            approver_available: false,
            fresh_context,
            cancel: req.cancel.clone(),
        };
        Ok(self.engine.run_turn(request, sink).await)
    }
}
