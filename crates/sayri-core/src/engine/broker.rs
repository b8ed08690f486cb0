//! The permission broker: asks every connected person a question and waits for one answer.
//!
//! [`PermissionBroker::ask`] opens a question: it emits a
//! [`PermissionRequest`] through the [`PermissionSink`] (the daemon broadcasts it as the
//! `permission_request` event to every client), then waits for
//! [`PermissionBroker::answer`] (`permission_answer`), the timeout (default
//! [`DEFAULT_TIMEOUT`]), the caller's `CancellationToken` (interrupt),
//! [`PermissionBroker::cancel_session`], [`PermissionBroker::cancel_all`] or
//! [`PermissionBroker::shutdown`]. However it ends — even when the waiting future is dropped —
//! the question is removed and `permission_resolved {request_id}` is emitted exactly once.
//! Questions ended by `cancel_*` or `shutdown` are announced before those calls return, so a
//! daemon that closes its clients right after `shutdown` still tells them.
//!
//! "Allow always" (`remember: true` with `allow: true`) stores the approvals planned for the
//! question through the [`ApprovalStore`] port, unless the question came from the policy layer:
//! a policy `ask` cannot be widened by "always", so nothing is stored for it.
//!
//! What a card shows — the resource, the reason and every segment — passes the broker's
//! [`Redactor`] first ([`PermissionBroker::with_redactor`]), so a secret in a command never
//! reaches a client through `permission_request` or `permission_list`.

use crate::ports::{ApprovalStore, Clock, NoSecrets, Redactor, StoreError};
use crate::sync::lock;

use sayri_permissions::Approval;
use serde::Serialize;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a question waits for an answer unless configured otherwise: 120 s. No answer in
/// time counts as "no".
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A question as shown to clients (payload of `permission_request`, item of
/// `permission_list.pending`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionRequest {
    /// 12 lower-case hex characters.
    pub id: String,
    /// Rule action, e.g. `shell`.
    pub action: String,
    /// The resource, e.g. the full command text.
    pub resource: String,
    /// Why it needs approval (names the rule and its source).
    pub reason: String,
    /// Agent asking.
    pub agent_id: String,
    /// Its display name.
    pub agent_name: String,
    /// Session of the turn.
    pub session_id: String,
    /// True when the ask came from the policy layer ("always" will not widen it).
    pub policy: bool,
    /// Seconds left before the question counts as "no", one decimal.
    pub expires_in: f64,
    /// Every subject judged inside the resource (each simple command of a compound shell
    /// command, file and web accesses), in order, so a card can show all of them.
    pub segments: Vec<AskedSegment>,
    /// When the command comes from outside text: the earlier step whose output it came from
    /// (e.g. `sayri lookup "widget"`), so the card can say why it asks although the rules
    /// allow it. `null` otherwise.
    pub from_step: Option<String>,
}

/// One judged part of an asked resource, as shown to clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AskedSegment {
    /// What was judged: a simple command, or `write /path`, `read /path`, `web URL`.
    pub command: String,
    /// Its own effect (`allow`, `ask` or `deny`).
    pub effect: sayri_permissions::Effect,
    /// Why, naming the rule and its source.
    pub reason: String,
}

/// Receives broker events; the daemon broadcasts them to every client. Must not block.
pub trait PermissionSink: Send + Sync {
    /// A question was opened (`permission_request` event with `{"request": request}`).
    fn permission_request(&self, request: &PermissionRequest);
    /// A question was settled for any reason (`permission_resolved {request_id}`).
    fn permission_resolved(&self, request_id: &str);
}

/// A question to ask.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Rule action, e.g. `shell`.
    pub action: String,
    /// The resource, e.g. the full command.
    pub resource: String,
    /// Why it needs approval.
    pub reason: String,
    /// Agent asking.
    pub agent_id: String,
    /// Its display name.
    pub agent_name: String,
    /// Session of the turn.
    pub session_id: String,
    /// True when the ask came from the policy layer (then nothing is remembered).
    pub policy: bool,
    /// What "Allow always" stores (see `sayri_permissions::plan_approvals`).
    pub remember: Vec<Approval>,
    /// Every judged part of the resource (shown on the card).
    pub segments: Vec<AskedSegment>,
    /// The earlier step whose output the command came from, when it came from outside text.
    pub from_step: Option<String>,
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AskOutcome {
    /// A person allowed it. `remembered` is how many approvals were stored ("Allow always").
    Allowed {
        /// Approvals stored.
        remembered: usize,
        /// Storing failed (the command is still allowed once).
        store_error: Option<StoreError>,
    },
    /// A person said no.
    Denied,
    /// Nobody answered in time.
    TimedOut,
    /// The turn was interrupted (token, `cancel_session` or `cancel_all`).
    Cancelled,
    /// The broker is shutting down.
    Shutdown,
}

enum Resolution {
    Answer { allow: bool, remember: bool },
    Cancelled,
    Shutdown,
}

struct Pending {
    request: PermissionRequest,
    deadline: Instant,
    tx: oneshot::Sender<Resolution>,
}

/// The in-memory set of open questions. One per daemon.
pub struct PermissionBroker {
    sink: Arc<dyn PermissionSink>,
    approvals: Arc<dyn ApprovalStore>,
    clock: Arc<dyn Clock>,
    redactor: Arc<dyn Redactor>,
    timeout: Duration,
    pending: Mutex<HashMap<String, Pending>>,
    /// Questions whose `permission_resolved` was already emitted by `end_where` (so the
    /// waiting side does not emit it again). Locked only while `pending` is locked.
    announced: Mutex<HashSet<String>>,
    closed: AtomicBool,
    counter: AtomicU64,
    ids: RandomState,
}

impl PermissionBroker {
    /// A broker with the default timeout.
    pub fn new(
        sink: Arc<dyn PermissionSink>,
        approvals: Arc<dyn ApprovalStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        PermissionBroker {
            sink,
            approvals,
            clock,
            redactor: Arc::new(NoSecrets),
            timeout: DEFAULT_TIMEOUT,
            pending: Mutex::new(HashMap::new()),
            announced: Mutex::new(HashSet::new()),
            closed: AtomicBool::new(false),
            counter: AtomicU64::new(0),
            ids: RandomState::new(),
        }
    }

    /// Sets how long questions wait.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Redacts what cards show with `redactor` (by default nothing is redacted).
    pub fn with_redactor(mut self, redactor: Arc<dyn Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The card for `question` as clients see it: its texts redacted.
    fn card(&self, id: String, question: &Question) -> PermissionRequest {
        let r = &self.redactor;
        PermissionRequest {
            id,
            action: question.action.clone(),
            resource: r.redact(&question.resource),
            reason: r.redact(&question.reason),
            agent_id: question.agent_id.clone(),
            agent_name: question.agent_name.clone(),
            session_id: question.session_id.clone(),
            policy: question.policy,
            expires_in: round1(self.timeout.as_secs_f64()),
            segments: question
                .segments
                .iter()
                .map(|s| AskedSegment {
                    command: r.redact(&s.command),
                    effect: s.effect,
                    reason: r.redact(&s.reason),
                })
                .collect(),
            from_step: question.from_step.as_ref().map(|s| r.redact(s)),
        }
    }

    /// The configured timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The approval store (for `permission_list` / `permission_forget`).
    pub fn store(&self) -> &Arc<dyn ApprovalStore> {
        &self.approvals
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        // A poisoned map only means a panic elsewhere while holding it; the data is still usable.
        lock(&self.pending)
    }

    fn new_id(&self, taken: &HashMap<String, Pending>) -> String {
        loop {
            let mut h = self.ids.build_hasher();
            h.write_u64(self.counter.fetch_add(1, Ordering::Relaxed));
            h.write_u64(self.clock.now_unix().to_bits());
            let id = format!("{:012x}", h.finish() & 0xffff_ffff_ffff);
            if !taken.contains_key(&id) {
                return id;
            }
        }
    }

    /// Asks `question` and waits for its end. Emits `permission_request` first and
    /// `permission_resolved` at the end, whatever happens.
    pub async fn ask(&self, question: Question, cancel: CancellationToken) -> AskOutcome {
        if self.closed.load(Ordering::SeqCst) {
            return AskOutcome::Shutdown;
        }
        let (tx, rx) = oneshot::channel();
        let deadline = Instant::now() + self.timeout;
        let request = {
            let mut map = self.lock();
            let id = self.new_id(&map);
            let request = self.card(id.clone(), &question);
            map.insert(
                id,
                Pending {
                    request: request.clone(),
                    deadline,
                    tx,
                },
            );
            request
        };
        let _guard = Resolved {
            broker: self,
            id: request.id.clone(),
        };
        self.sink.permission_request(&request);
        let resolution = tokio::select! {
            r = rx => r.ok(),
            _ = tokio::time::sleep_until(deadline) => return AskOutcome::TimedOut,
            _ = cancel.cancelled() => return AskOutcome::Cancelled,
        };
        match resolution {
            Some(Resolution::Answer {
                allow: true,
                remember,
            }) => {
                let (remembered, store_error) = if remember && !question.policy {
                    self.remember(&question.remember)
                } else {
                    (0, None)
                };
                AskOutcome::Allowed {
                    remembered,
                    store_error,
                }
            }
            Some(Resolution::Answer { allow: false, .. }) => AskOutcome::Denied,
            Some(Resolution::Cancelled) => AskOutcome::Cancelled,
            Some(Resolution::Shutdown) | None => AskOutcome::Shutdown,
        }
    }

    fn remember(&self, approvals: &[Approval]) -> (usize, Option<StoreError>) {
        let mut stored = 0;
        for a in approvals {
            if let Err(e) = self.approvals.add_approval(a) {
                return (stored, Some(e));
            }
            stored += 1;
        }
        (stored, None)
    }

    /// Delivers an answer (`permission_answer`). Returns false for an unknown or finished id.
    pub fn answer(&self, request_id: &str, allow: bool, remember: bool) -> bool {
        let pending = self.lock().remove(request_id);
        match pending {
            Some(p) => p.tx.send(Resolution::Answer { allow, remember }).is_ok(),
            None => false,
        }
    }

    /// Open questions with their remaining time (`permission_list.pending`), oldest deadline first.
    pub fn pending(&self) -> Vec<PermissionRequest> {
        let now = Instant::now();
        let mut list: Vec<(Instant, PermissionRequest)> = self
            .lock()
            .values()
            .map(|p| {
                let mut r = p.request.clone();
                r.expires_in = round1(p.deadline.saturating_duration_since(now).as_secs_f64());
                (p.deadline, r)
            })
            .collect();
        list.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
        list.into_iter().map(|(_, r)| r).collect()
    }

    fn end_where(
        &self,
        pred: impl Fn(&PermissionRequest) -> bool,
        how: fn() -> Resolution,
    ) -> usize {
        let ended: Vec<Pending> = {
            let mut map = self.lock();
            let ids: Vec<String> = map
                .values()
                .filter(|p| pred(&p.request))
                .map(|p| p.request.id.clone())
                .collect();
            let ended: Vec<Pending> = ids.iter().filter_map(|id| map.remove(id)).collect();
            let mut announced = lock(&self.announced);
            announced.extend(ended.iter().map(|p| p.request.id.clone()));
            ended
        };
        let n = ended.len();
        for p in ended {
            let _ = p.tx.send(how());
            // Announced here, synchronously: the caller may close every client next.
            self.sink.permission_resolved(&p.request.id);
        }
        n
    }

    /// Answers "no" (as cancelled) to every open question of `session_id` (`interrupt`).
    pub fn cancel_session(&self, session_id: &str) -> usize {
        self.end_where(|r| r.session_id == session_id, || Resolution::Cancelled)
    }

    /// Answers "no" (as cancelled) to every open question.
    pub fn cancel_all(&self) -> usize {
        self.end_where(|_| true, || Resolution::Cancelled)
    }

    /// Ends every open question and refuses new ones (daemon shutdown).
    pub fn shutdown(&self) -> usize {
        self.closed.store(true, Ordering::SeqCst);
        self.end_where(|_| true, || Resolution::Shutdown)
    }

    /// Saved approvals grouped by action (`permission_list.approvals`).
    ///
    /// # Errors
    /// The store's error.
    pub fn approvals_by_action(&self) -> Result<BTreeMap<String, Vec<Approval>>, StoreError> {
        let mut out: BTreeMap<String, Vec<Approval>> = BTreeMap::new();
        for a in self.approvals.all_approvals()? {
            out.entry(a.action.clone()).or_default().push(a);
        }
        Ok(out)
    }

    /// `permission_forget`: no action → remove all; else that action's approvals of `agent_id`.
    ///
    /// # Errors
    /// The store's error.
    pub fn forget(&self, action: Option<&str>, agent_id: &str) -> Result<usize, StoreError> {
        self.approvals
            .forget_approvals(action.filter(|a| !a.is_empty()), agent_id)
    }
}

/// Removes the question and emits `permission_resolved` when the `ask` future ends or is dropped.
struct Resolved<'a> {
    broker: &'a PermissionBroker,
    id: String,
}

impl Drop for Resolved<'_> {
    fn drop(&mut self) {
        let already = {
            let mut map = self.broker.lock();
            map.remove(&self.id);
            let mut announced = lock(&self.broker.announced);
            announced.remove(&self.id)
        };
        if !already {
            self.broker.sink.permission_resolved(&self.id);
        }
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
