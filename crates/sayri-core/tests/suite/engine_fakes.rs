//! In-test fakes of the ports: a scripted chat model, a recording sandbox, a gate, an
//! in-memory store, a fixed clock and a recording event sink. The lead's end-to-end tests use
//! the real adapters; these drive the domain logic.

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use sayri_core::assistant::{SayriCore, StaticAgents};
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::gate::{GateRequest, GateVerdict, PermissionGate, RefusalKind};
use sayri_core::engine::{AgentEngine, CoreEvent, EnginePorts, EngineSettings, EventSink};
use sayri_core::ports::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One scripted model reply.
#[derive(Clone)]
pub enum Reply {
    /// Content deltas, then usage, then `Finish(Stop)`.
    Text(Vec<&'static str>),
    /// Raw events as given.
    Events(Vec<Result<ChatEvent, ChatError>>),
    /// One delta, then never ends (until dropped); sets the flag when dropped.
    Hang(&'static str),
}

pub fn text(s: &'static str) -> Reply {
    Reply::Text(vec![s])
}

struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Default)]
pub struct ScriptedModel {
    pub script: Mutex<VecDeque<Reply>>,
    pub requests: Mutex<Vec<ChatRequest>>,
    pub dropped: Arc<AtomicBool>,
}

impl ScriptedModel {
    pub fn new(replies: Vec<Reply>) -> Arc<Self> {
        Arc::new(ScriptedModel {
            script: Mutex::new(replies.into()),
            ..Default::default()
        })
    }
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl ChatModel for ScriptedModel {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        self.requests.lock().unwrap().push(request);
        let reply = self.script.lock().unwrap().pop_front();
        match reply {
            None => stream::iter(vec![Err(ChatError::Other("script exhausted".into()))]).boxed(),
            Some(Reply::Text(parts)) => {
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
            Some(Reply::Events(ev)) => stream::iter(ev).boxed(),
            Some(Reply::Hang(first)) => {
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

/// Records requests; returns `output` with exit 0, or hangs until cancelled when `hang`.
#[derive(Default)]
pub struct RecordingSandbox {
    pub runs: Mutex<Vec<ExecRequest>>,
    pub hang: AtomicBool,
    pub killed: Arc<AtomicBool>,
    pub exit_code: Mutex<Option<i32>>,
    pub output: Mutex<String>,
}

impl RecordingSandbox {
    pub fn new(output: &str) -> Arc<Self> {
        let s = RecordingSandbox::default();
        *s.output.lock().unwrap() = output.to_string();
        *s.exit_code.lock().unwrap() = Some(0);
        Arc::new(s)
    }
    pub fn commands(&self) -> Vec<String> {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.command.clone())
            .collect()
    }
}

impl Sandbox for RecordingSandbox {
    fn run(
        &self,
        request: ExecRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ExecResult> {
        self.runs.lock().unwrap().push(request);
        let hang = self.hang.load(Ordering::SeqCst);
        let killed = self.killed.clone();
        let code = *self.exit_code.lock().unwrap();
        let output = self.output.lock().unwrap().clone();
        Box::pin(async move {
            if hang {
                cancel.cancelled().await;
                killed.store(true, Ordering::SeqCst);
                return ExecResult {
                    status: ExecStatus::Killed,
                    exit_code: None,
                    output: String::new(),
                    duration: Duration::from_millis(5),
                    background_pid: None,
                };
            }
            let status = if code == Some(0) {
                ExecStatus::Success
            } else {
                ExecStatus::Failed
            };
            ExecResult {
                status,
                exit_code: code,
                output,
                duration: Duration::from_millis(7),
                background_pid: None,
            }
        })
    }
}

/// Allows everything, or refuses everything; records questions.
#[derive(Default)]
pub struct TestGate {
    pub deny: bool,
    pub asked: Mutex<Vec<GateRequest>>,
}

impl PermissionGate for TestGate {
    fn authorize(
        &self,
        request: GateRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, GateVerdict> {
        let approver_available = request.approver_available;
        self.asked.lock().unwrap().push(request);
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

pub struct FixedClock(pub AtomicUsize);
impl Clock for FixedClock {
    fn now_unix(&self) -> f64 {
        1000.0 + self.0.fetch_add(1, Ordering::SeqCst) as f64
    }
}

/// In-memory `SessionStore` with the same contract as sayri-store (tested there on SQLite).
#[derive(Default)]
pub struct MemStore {
    pub sessions: Mutex<Vec<SessionInfo>>,
    pub msgs: Mutex<Vec<StoredMessage>>,
    pub prefs: Mutex<Vec<Preference>>,
}

impl SessionStore for MemStore {
    fn append_message(&self, seed: &SessionSeed<'_>, m: &NewMessage) -> Result<i64, StoreError> {
        let mut s = self.sessions.lock().unwrap();
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
            }),
        }
        let mut msgs = self.msgs.lock().unwrap();
        let id = msgs.len() as i64 + 1;
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
        Ok(self
            .sessions
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.id == id)
            .cloned())
    }
    fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, StoreError> {
        let mut v = self.sessions.lock().unwrap().clone();
        v.reverse();
        v.truncate(limit);
        Ok(v)
    }
    fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        Ok(self
            .msgs
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.session_id == session_id)
            .cloned()
            .collect())
    }
    fn rename_session(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        let mut s = self.sessions.lock().unwrap();
        Ok(s.iter_mut()
            .find(|x| x.id == id)
            .map(|x| x.title = title.into())
            .is_some())
    }
    fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.msgs.lock().unwrap().retain(|m| m.session_id != id);
        let mut s = self.sessions.lock().unwrap();
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
        let mut hits: Vec<SearchHit> = self
            .msgs
            .lock()
            .unwrap()
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
        self.prefs.lock().unwrap().push(p.clone());
        Ok(p)
    }
    fn query_preferences(
        &self,
        _t: &str,
        _a: Option<&str>,
        _l: usize,
    ) -> Result<Vec<Preference>, StoreError> {
        Ok(vec![])
    }
    fn list_preferences(&self, _a: Option<&str>, _l: usize) -> Result<Vec<Preference>, StoreError> {
        Ok(self.prefs.lock().unwrap().clone())
    }
    fn clear_preferences(&self, _a: Option<&str>) -> Result<usize, StoreError> {
        Ok(0)
    }
}

/// Records every event.
#[derive(Default)]
pub struct RecordingSink(pub Mutex<Vec<CoreEvent>>);
impl EventSink for RecordingSink {
    fn emit(&self, event: CoreEvent) {
        self.0.lock().unwrap().push(event);
    }
}
impl RecordingSink {
    pub fn events(&self) -> Vec<CoreEvent> {
        self.0.lock().unwrap().clone()
    }
    pub fn names(&self) -> Vec<&'static str> {
        self.events().iter().map(|e| e.name()).collect()
    }
}

/// Everything wired together.
pub struct Rig {
    pub model: Arc<ScriptedModel>,
    pub sandbox: Arc<RecordingSandbox>,
    pub gate: Arc<TestGate>,
    pub store: Arc<MemStore>,
    pub engine: Arc<AgentEngine>,
}

pub fn rig(replies: Vec<Reply>, deny: bool) -> Rig {
    let model = ScriptedModel::new(replies);
    let sandbox = RecordingSandbox::new("Filesystem Size Avail\n/dev/sda1 100G 40G");
    let gate = Arc::new(TestGate {
        deny,
        ..Default::default()
    });
    let store = Arc::new(MemStore::default());
    let settings = EngineSettings {
        model: "test-model".into(),
        generate_titles: false,
        ..EngineSettings::default()
    };
    let engine = Arc::new(AgentEngine::new(
        EnginePorts {
            model: model.clone(),
            sandbox: sandbox.clone(),
            gate: gate.clone(),
            redactor: Arc::new(NoSecrets),
            store: store.clone(),
            clock: Arc::new(FixedClock(AtomicUsize::new(0))),
        },
        settings,
    ));
    Rig {
        model,
        sandbox,
        gate,
        store,
        engine,
    }
}

impl Rig {
    pub fn core(&self, agents: Vec<AgentProfile>, sink: Arc<RecordingSink>) -> SayriCore {
        SayriCore::new(
            self.engine.clone(),
            Arc::new(StaticAgents::new(agents)),
            sink,
            "default",
        )
        .unwrap()
    }
}
