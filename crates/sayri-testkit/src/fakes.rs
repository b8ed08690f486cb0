//! In-memory fakes of `sayri-core`'s ports, for tests that drive the engine, the permission
//! gate or the core without a model server, a sandbox, a database or a clock.
//!
//! * [`ScriptedModel`] — a [`ChatModel`] that replays [`ModelReply`]s and records requests.
//! * [`RecordingSandbox`] — a [`Sandbox`] that records commands and answers with fixed output,
//!   or hangs until cancelled.
//! * [`RecordingGate`] — a [`PermissionGate`] that allows or refuses everything and records
//!   the questions.
//! * [`FixedClock`] — a [`Clock`] at a fixed time, optionally advancing one second per reading.
//! * [`MemoryStore`] — a [`SessionStore`] with the contract of `sayri-store` (which is tested
//!   on SQLite).
//! * [`MemoryApprovals`] — an [`ApprovalStore`] with the same contract.
//! * [`RecordingSink`] — an [`EventSink`] that keeps every event.
//! * [`PermissionFanout`] — a [`PermissionSink`] that broadcasts to subscribed "clients", as
//!   the daemon does.
//! * [`LiteralRedactor`] — a [`Redactor`] that masks given literal values only (the vault's
//!   redactor, with every encoded form, is tested in `sayri-vault`).
//!
//! End-to-end tests use the real adapters instead; these drive the domain logic.

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use sayri_core::engine::broker::{PermissionRequest, PermissionSink};
use sayri_core::engine::gate::{
    Confirmation, GateRequest, GateVerdict, PermissionGate, RefusalKind,
};
use sayri_core::engine::{CoreEvent, EventSink};
use sayri_core::ports::{
    ApprovalStore, ChatError, ChatEvent, ChatModel, ChatRequest, ChatStream, Clock, ExecRequest,
    ExecResult, ExecStatus, FinishReason, NewMessage, OpenTurn, Preference, PreferenceUpdate,
    Redactor, SECRET_MARKER_PREFIX, Sandbox, SearchHit, SessionInfo, SessionSeed, SessionStore,
    StoreError, StoredMessage, Usage,
};
use sayri_core::sync::lock;
use sayri_permissions::Approval;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One scripted reply of [`ScriptedModel`].
#[derive(Clone)]
pub enum ModelReply {
    /// Content deltas, then usage (100 prompt + 10 completion tokens), then `Finish(Stop)`.
    Text(Vec<&'static str>),
    /// Raw events exactly as given (e.g. to end without a finish reason, or with an error).
    Events(Vec<Result<ChatEvent, ChatError>>),
    /// One content delta, then never ends; [`ScriptedModel::dropped`] is set when the stream is
    /// dropped.
    Hang(&'static str),
}

/// A reply of one content delta `s` (see [`ModelReply::Text`]).
pub fn text(s: &'static str) -> ModelReply {
    ModelReply::Text(vec![s])
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A [`ChatModel`] that answers each request with the next scripted reply; when the script is
/// exhausted the stream fails with `script exhausted`.
#[derive(Default)]
pub struct ScriptedModel {
    /// Replies not used yet, in order.
    pub script: Mutex<VecDeque<ModelReply>>,
    /// Every request received, in order.
    pub requests: Mutex<Vec<ChatRequest>>,
    /// Set when a [`ModelReply::Hang`] stream was dropped.
    pub dropped: Arc<AtomicBool>,
}

impl ScriptedModel {
    /// A model that will answer with `replies`, in order.
    pub fn new(replies: Vec<ModelReply>) -> Arc<Self> {
        Arc::new(ScriptedModel {
            script: Mutex::new(replies.into()),
            ..Default::default()
        })
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }
}

impl ChatModel for ScriptedModel {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        lock(&self.requests).push(request);
        let reply = lock(&self.script).pop_front();
        match reply {
            None => stream::iter(vec![Err(ChatError::Other("script exhausted".into()))]).boxed(),
            Some(ModelReply::Text(parts)) => {
                let mut ev: Vec<Result<ChatEvent, ChatError>> = parts
                    .into_iter()
                    .map(|p| Ok(ChatEvent::Content(p.to_string())))
                    .collect();
                ev.push(Ok(ChatEvent::Usage(Usage {
                    prompt_tokens: 100,
                    completion_tokens: 10,
                    total_tokens: 110,
                })));
                ev.push(Ok(ChatEvent::Finish(FinishReason::Stop)));
                stream::iter(ev).boxed()
            }
            Some(ModelReply::Events(ev)) => stream::iter(ev).boxed(),
            Some(ModelReply::Hang(first)) => {
                let flag = DropFlag(self.dropped.clone());
                stream::once(async move { Ok(ChatEvent::Content(first.to_string())) })
                    .chain(
                        stream::pending().map(move |x: Result<ChatEvent, ChatError>| {
                            let _keep = &flag;
                            x
                        }),
                    )
                    .boxed()
            }
        }
    }
}

/// A [`Sandbox`] that records every request and answers with [`RecordingSandbox::output`]
/// (exit code [`RecordingSandbox::exit_code`]: 0 is success, anything else a failure), or,
/// with [`RecordingSandbox::hang`] set, waits until cancelled and reports the command killed.
#[derive(Default)]
pub struct RecordingSandbox {
    /// Every request, in order.
    pub runs: Mutex<Vec<ExecRequest>>,
    /// Wait for cancellation instead of answering.
    pub hang: AtomicBool,
    /// Set when a hanging command was cancelled.
    pub killed: Arc<AtomicBool>,
    /// Exit code of every command (`None`: no exit code).
    pub exit_code: Mutex<Option<i32>>,
    /// Output of every command.
    pub output: Mutex<String>,
}

impl RecordingSandbox {
    /// A sandbox whose commands print `output` and exit 0.
    pub fn new(output: &str) -> Arc<Self> {
        let s = RecordingSandbox::default();
        *lock(&s.output) = output.to_string();
        *lock(&s.exit_code) = Some(0);
        Arc::new(s)
    }

    /// The commands run so far.
    pub fn commands(&self) -> Vec<String> {
        lock(&self.runs).iter().map(|r| r.command.clone()).collect()
    }
}

impl Sandbox for RecordingSandbox {
    fn run(
        &self,
        request: ExecRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ExecResult> {
        lock(&self.runs).push(request);
        let hang = self.hang.load(Ordering::SeqCst);
        let killed = self.killed.clone();
        let code = *lock(&self.exit_code);
        let output = lock(&self.output).clone();
        Box::pin(async move {
            if hang {
                cancel.cancelled().await;
                killed.store(true, Ordering::SeqCst);
                return ExecResult {
                    duration: Duration::from_millis(5),
                    ..ExecResult::new(ExecStatus::Killed, None, "")
                };
            }
            let status = if code == Some(0) {
                ExecStatus::Success
            } else {
                ExecStatus::Failed
            };
            ExecResult {
                duration: Duration::from_millis(7),
                ..ExecResult::new(status, code, output)
            }
        })
    }
}

/// A [`PermissionGate`] that allows everything, or with [`RecordingGate::deny`] refuses
/// everything (as [`RefusalKind::NoApprover`] when no approver is available, else
/// [`RefusalKind::Denied`]); records every question and every confirmation (which it answers
/// like a person saying "Allow", or "Deny" with `deny`).
#[derive(Default)]
pub struct RecordingGate {
    /// Refuse every command.
    pub deny: bool,
    /// Every question, in order.
    pub asked: Mutex<Vec<GateRequest>>,
    /// Every confirmation asked for (e.g. creating an agent), in order.
    pub confirmed: Mutex<Vec<Confirmation>>,
}

impl PermissionGate for RecordingGate {
    fn confirm(
        &self,
        change: Confirmation,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict> {
        lock(&self.confirmed).push(change);
        let verdict = if self.deny {
            GateVerdict::Refuse {
                kind: RefusalKind::NotApproved,
                message: "a person said no".into(),
            }
        } else {
            GateVerdict::Allow {
                reason: "test".into(),
            }
        };
        Box::pin(std::future::ready(verdict))
    }

    fn authorize(
        &self,
        request: GateRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict> {
        let approver_available = request.approver_available;
        lock(&self.asked).push(request);
        let deny = self.deny;
        Box::pin(async move {
            if deny {
                let kind = if approver_available {
                    RefusalKind::Denied
                } else {
                    RefusalKind::NoApprover
                };
                GateVerdict::Refuse {
                    kind,
                    message: "Denied by agent rule shell \"*\" deny".into(),
                }
            } else {
                GateVerdict::Allow {
                    reason: "test".into(),
                }
            }
        })
    }
}

/// An [`Entropy`] that counts: `start`, `start + 1`, … (each turn of a test gets a distinct,
/// known boundary).
pub struct CountingEntropy {
    next: Mutex<u64>,
}

impl CountingEntropy {
    /// Counting from `start`.
    pub fn from(start: u64) -> Self {
        CountingEntropy {
            next: Mutex::new(start),
        }
    }
}

impl sayri_core::ports::Entropy for CountingEntropy {
    fn nonce(&self) -> u64 {
        let mut next = lock(&self.next);
        let n = *next;
        *next = next.wrapping_add(1);
        n
    }
}

/// A [`Clock`] at a fixed time, in Unix seconds; a ticking one advances one second after each
/// reading (so stored rows get distinct, ordered timestamps).
pub struct FixedClock {
    next: Mutex<f64>,
    step: f64,
}

impl FixedClock {
    /// Always `unix_seconds`.
    pub fn at(unix_seconds: f64) -> Self {
        FixedClock {
            next: Mutex::new(unix_seconds),
            step: 0.0,
        }
    }

    /// `unix_seconds`, then one second later at each reading.
    pub fn ticking_from(unix_seconds: f64) -> Self {
        FixedClock {
            next: Mutex::new(unix_seconds),
            step: 1.0,
        }
    }
}

impl Clock for FixedClock {
    fn now_unix(&self) -> f64 {
        let mut next = lock(&self.next);
        let now = *next;
        *next += self.step;
        now
    }
}

/// An in-memory [`SessionStore`] with the contract of `sayri-store`: a session row appears
/// with its first message; sessions are listed newest first; search is case-insensitive.
/// Preference queries return nothing and clearing removes nothing.
#[derive(Default)]
pub struct MemoryStore {
    /// Sessions, oldest first.
    pub sessions: Mutex<Vec<SessionInfo>>,
    /// Messages of every session, in order.
    pub msgs: Mutex<Vec<StoredMessage>>,
    /// Recorded preferences, in order.
    pub prefs: Mutex<Vec<Preference>>,
    /// Calibrated token rates per model.
    pub token_rates: Mutex<std::collections::HashMap<String, f64>>,
    /// The turn journal: turns started and not yet ended.
    pub turns: Mutex<Vec<OpenTurn>>,
}

impl SessionStore for MemoryStore {
    fn append_message(&self, seed: &SessionSeed<'_>, m: &NewMessage) -> Result<i64, StoreError> {
        let mut s = lock(&self.sessions);
        match s.iter_mut().find(|x| x.id == seed.id) {
            Some(x) => {
                x.messages += 1;
                x.updated_at = m.timestamp;
            }
            None => s.push(SessionInfo {
                id: seed.id.into(),
                title: seed.title.into(),
                agent_id: seed.agent_id.into(),
                created_at: m.timestamp,
                updated_at: m.timestamp,
                messages: 1,
                parent_id: seed.parent.map(str::to_string),
            }),
        }
        let mut msgs = lock(&self.msgs);
        let id = i64::try_from(msgs.len()).unwrap_or(i64::MAX) + 1;
        msgs.push(StoredMessage {
            id,
            session_id: seed.id.into(),
            role: m.role,
            content: m.content.clone(),
            tool_call: m.tool_call.clone(),
            usage: m.usage,
            reasoning: m.reasoning.clone(),
            timestamp: m.timestamp,
        });
        Ok(id)
    }

    fn session(&self, id: &str) -> Result<Option<SessionInfo>, StoreError> {
        Ok(lock(&self.sessions).iter().find(|s| s.id == id).cloned())
    }

    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut ids: Vec<String> = lock(&self.sessions)
            .iter()
            .filter(|s| s.id.starts_with(prefix))
            .map(|s| s.id.clone())
            .collect();
        ids.sort();
        ids.truncate(limit);
        Ok(ids)
    }

    fn sub_sessions(&self, parent_id: &str) -> Result<Vec<SessionInfo>, StoreError> {
        Ok(lock(&self.sessions)
            .iter()
            .filter(|s| s.parent_id.as_deref() == Some(parent_id))
            .cloned()
            .collect())
    }

    fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, StoreError> {
        let mut v = lock(&self.sessions).clone();
        v.reverse();
        v.truncate(limit);
        Ok(v)
    }

    fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        Ok(lock(&self.msgs)
            .iter()
            .filter(|m| m.session_id == session_id)
            .cloned()
            .collect())
    }

    fn rename_session(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        let mut s = lock(&self.sessions);
        Ok(s.iter_mut()
            .find(|x| x.id == id)
            .map(|x| x.title = title.into())
            .is_some())
    }

    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        lock(&self.msgs).retain(|m| m.session_id != id);
        let mut s = lock(&self.sessions);
        let n = s.len();
        s.retain(|x| x.id != id);
        Ok(s.len() < n)
    }

    fn search_messages(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let q = query.to_lowercase();
        let mut hits: Vec<SearchHit> = lock(&self.msgs)
            .iter()
            .rev()
            .filter(|m| {
                session_id.is_none_or(|s| s == m.session_id)
                    && m.content.to_lowercase().contains(&q)
            })
            .take(limit)
            .map(|m| SearchHit {
                session_id: m.session_id.clone(),
                session_title: "t".into(),
                role: m.role,
                content: m.content.clone(),
                timestamp: m.timestamp,
            })
            .collect();
        hits.reverse();
        Ok(hits)
    }

    fn record_preference(&self, u: &PreferenceUpdate) -> Result<Preference, StoreError> {
        let p = Preference {
            id: 1,
            agent_id: u.agent_id.clone(),
            intent: u.intent.clone(),
            command: u.command.clone(),
            rejected_command: String::new(),
            success_count: u32::from(u.success),
            failure_count: u32::from(!u.success),
            score: if u.success { 1.0 } else { -1.5 },
            notes: String::new(),
            updated_at: u.now,
        };
        lock(&self.prefs).push(p.clone());
        Ok(p)
    }

    fn query_preferences(
        &self,
        _text: &str,
        _agent_id: Option<&str>,
        _limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        Ok(vec![])
    }

    fn list_preferences(
        &self,
        _agent_id: Option<&str>,
        _limit: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        Ok(lock(&self.prefs).clone())
    }

    fn clear_preferences(&self, _agent_id: Option<&str>) -> Result<usize, StoreError> {
        Ok(0)
    }

    fn token_rate(&self, model: &str) -> Result<Option<f64>, StoreError> {
        Ok(lock(&self.token_rates).get(model).copied())
    }

    fn set_token_rate(&self, model: &str, rate: f64, _now: f64) -> Result<(), StoreError> {
        lock(&self.token_rates).insert(model.to_string(), rate);
        Ok(())
    }

    fn turn_started(
        &self,
        session_id: &str,
        request_message_id: i64,
        now: f64,
    ) -> Result<i64, StoreError> {
        let mut t = lock(&self.turns);
        let id = t.iter().map(|x| x.id).max().unwrap_or(0) + 1;
        t.push(OpenTurn {
            id,
            session_id: session_id.into(),
            request_message_id,
            started_at: now,
        });
        Ok(id)
    }

    fn turn_ended(&self, id: i64) -> Result<(), StoreError> {
        lock(&self.turns).retain(|t| t.id != id);
        Ok(())
    }

    fn open_turns(&self) -> Result<Vec<OpenTurn>, StoreError> {
        Ok(lock(&self.turns).clone())
    }

    fn close_interrupted_turn(
        &self,
        turn: &OpenTurn,
        notes: &[NewMessage],
    ) -> Result<(), StoreError> {
        let agent = self
            .session(&turn.session_id)?
            .map(|s| s.agent_id)
            .unwrap_or_default();
        let seed = SessionSeed {
            id: &turn.session_id,
            agent_id: &agent,
            title: "",
            parent: None,
        };
        for n in notes {
            self.append_message(&seed, n)?;
        }
        self.turn_ended(turn.id)
    }
}

/// An in-memory [`ApprovalStore`] with the port's contract: an identical (agent, action,
/// resource) replaces the older approval.
#[derive(Default)]
pub struct MemoryApprovals(pub Mutex<Vec<Approval>>);

impl ApprovalStore for MemoryApprovals {
    fn approvals_for(&self, agent_id: &str) -> Result<Vec<Approval>, StoreError> {
        Ok(lock(&self.0)
            .iter()
            .filter(|a| a.agent_id == agent_id)
            .cloned()
            .collect())
    }

    fn all_approvals(&self) -> Result<Vec<Approval>, StoreError> {
        Ok(lock(&self.0).clone())
    }

    fn add_approval(&self, approval: &Approval) -> Result<(), StoreError> {
        let mut v = lock(&self.0);
        v.retain(|a| {
            !(a.agent_id == approval.agent_id
                && a.action == approval.action
                && a.resource == approval.resource)
        });
        v.push(approval.clone());
        Ok(())
    }

    fn forget_approvals(&self, action: Option<&str>, agent_id: &str) -> Result<usize, StoreError> {
        let mut v = lock(&self.0);
        let before = v.len();
        match action {
            None => v.clear(),
            Some(act) => v.retain(|a| !(a.action == act && a.agent_id == agent_id)),
        }
        Ok(before - v.len())
    }
}

/// An [`EventSink`] that keeps every event.
#[derive(Default)]
pub struct RecordingSink(pub Mutex<Vec<CoreEvent>>);

impl EventSink for RecordingSink {
    fn emit(&self, event: CoreEvent) {
        lock(&self.0).push(event);
    }
}

impl RecordingSink {
    /// The events so far.
    pub fn events(&self) -> Vec<CoreEvent> {
        lock(&self.0).clone()
    }

    /// The wire names of the events so far.
    pub fn names(&self) -> Vec<&'static str> {
        self.events().iter().map(|e| e.name()).collect()
    }
}

/// What a [`PermissionFanout`] subscriber receives.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionEvent {
    /// `permission_request`.
    Request(Box<PermissionRequest>),
    /// `permission_resolved` with the request id.
    Resolved(String),
}

/// A [`PermissionSink`] that broadcasts every event to each subscribed "client", like the
/// daemon does.
#[derive(Default)]
pub struct PermissionFanout(Mutex<Vec<mpsc::UnboundedSender<PermissionEvent>>>);

impl PermissionFanout {
    /// A new subscriber: receives every event from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<PermissionEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.0).push(tx);
        rx
    }

    fn send(&self, e: PermissionEvent) {
        for tx in lock(&self.0).iter() {
            let _ = tx.send(e.clone());
        }
    }
}

impl PermissionSink for PermissionFanout {
    fn permission_request(&self, request: &PermissionRequest) {
        self.send(PermissionEvent::Request(Box::new(request.clone())));
    }

    fn permission_resolved(&self, request_id: &str) {
        self.send(PermissionEvent::Resolved(request_id.to_string()));
    }
}

/// A [`Redactor`] that replaces each given literal value with `$SECRET:<NAME>`, and nothing else.
#[derive(Debug, Clone, Default)]
pub struct LiteralRedactor {
    /// `(name, value)` pairs, replaced in order.
    pub secrets: Vec<(String, String)>,
}

impl LiteralRedactor {
    /// A redactor for one secret.
    pub fn one(name: &str, value: &str) -> Self {
        LiteralRedactor {
            secrets: vec![(name.to_string(), value.to_string())],
        }
    }
}

impl Redactor for LiteralRedactor {
    fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, value) in &self.secrets {
            out = out.replace(value.as_str(), &format!("{SECRET_MARKER_PREFIX}{name}"));
        }
        out
    }
}
