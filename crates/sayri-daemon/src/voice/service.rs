//! The voice service of a build with the `voice` feature: owns the one voice loop.
//!
//! Locks: `control` (settings, the running loop) is taken before `snapshot` (what the loop
//! last reported), never the other way round; the loop's thread and the core's rest-state
//! callback only take `snapshot`.

use super::agent::CoreAgent;
use super::status::{self, LoopState};
use crate::brain::{Brain, BroadcastSink};
use crate::bus::Broadcaster;
use crate::wire;
use sayri_core::domain::config::Config;
use sayri_core::domain::voice::{VoiceEvent, VoiceMode};
use sayri_core::engine::{CoreEvent, CoreState, EventSink};
use sayri_core::ports::audio::samples_to_ms;
use sayri_core::sync::lock;
use sayri_protocol::reply::runtime::StatusReply;
use sayri_protocol::{ErrorCode, ProtocolError};
use sayri_voice::audio::NullSink;
use sayri_voice::models::ModelStore;
use sayri_voice::plan::VoicePlan;
use sayri_voice::voice_loop::{
    Command, CommandInbox, LoopConfig, TimedEvent, VoiceHandle, VoiceLoop, command_channel,
};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Audio levels reach clients at most this often.
const LEVEL_INTERVAL: Duration = Duration::from_millis(50);
/// How often the service looks at connected clients (`UiVisible`) and at newly installed
/// models (a loop that could not start yet).
const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// The daemon's voice: one loop, its settings and what it last reported.
pub struct VoiceService {
    shared: Arc<Shared>,
}

struct Shared {
    broadcaster: Broadcaster,
    store: ModelStore,
    control: Mutex<Control>,
    snapshot: Mutex<Snapshot>,
}

struct Control {
    cfg: Config,
    brain: Option<Arc<Brain>>,
    rt: Option<tokio::runtime::Handle>,
    running: Option<Running>,
    /// The engine key of a loop that failed to start (not retried until settings change).
    failed_key: Option<String>,
    next_id: u64,
    /// The daemon is stopping: no loop starts any more.
    closed: bool,
}

struct Running {
    id: u64,
    key: String,
    handle: VoiceHandle,
    thread: JoinHandle<()>,
}

#[derive(Default)]
struct Snapshot {
    running: Option<u64>,
    mode: Option<VoiceMode>,
    state: Option<CoreState>,
    mic_on: bool,
    mic_problem: Option<String>,
    mic_device: Option<String>,
    busy: bool,
    speaking: bool,
    error: Option<String>,
    transcripts: Vec<oneshot::Sender<Result<String, String>>>,
    last_level: Option<Instant>,
    ui_visible: Option<bool>,
}

fn voice_err(code: ErrorCode, message: impl Into<String>) -> ProtocolError {
    ProtocolError::new(code, message.into())
}

impl VoiceService {
    /// The service for `cfg`; nothing runs until [`VoiceService::attach`].
    pub fn new(cfg: &Config, broadcaster: Broadcaster) -> VoiceService {
        VoiceService {
            shared: Arc::new(Shared {
                broadcaster,
                store: ModelStore::open_default(),
                control: Mutex::new(Control {
                    cfg: cfg.clone(),
                    brain: None,
                    rt: None,
                    running: None,
                    failed_key: None,
                    next_id: 1,
                    closed: false,
                }),
                snapshot: Mutex::default(),
            }),
        }
    }

    /// Connects the core (spoken queries become its turns; a typed turn returns to the voice
    /// side's rest state), starts the loop when the mode keeps the microphone on and speech
    /// to text is ready, and starts the poller. Must be called inside the daemon's runtime.
    pub fn attach(&self, brain: Arc<Brain>) {
        let rt = tokio::runtime::Handle::current();
        let snap = self.shared.clone();
        brain.core.set_rest_state(Arc::new(move || {
            let s = lock(&snap.snapshot);
            if s.running.is_some() && s.mic_on && s.mode == Some(VoiceMode::Always) {
                CoreState::Listening
            } else {
                CoreState::Idle
            }
        }));
        {
            let mut c = lock(&self.shared.control);
            c.brain = Some(brain);
            c.rt = Some(rt.clone());
            let plan = self.shared.plan(&c.cfg);
            lock(&self.shared.snapshot).mode = Some(plan.mode);
            if plan.mode.mic_always_on() && plan.stt_ready() {
                self.shared.start(&mut c, plan);
            }
        }
        let weak = Arc::downgrade(&self.shared);
        rt.spawn(async move {
            loop {
                tokio::time::sleep(POLL_INTERVAL).await;
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                shared.poll();
            }
        });
    }

    /// `listen`: captures one utterance and returns its transcript (`""` when nothing was
    /// said within the activation timeout or `timeout`); no query is sent.
    ///
    /// # Errors
    /// `unavailable` when speech input is off (`stt.mode = disabled`) or not ready (with
    /// what to install).
    pub async fn listen(&self, timeout: Duration) -> Result<String, ProtocolError> {
        let rx = {
            let mut c = lock(&self.shared.control);
            let handle = self.shared.ensure_running(&mut c)?;
            let (tx, rx) = oneshot::channel();
            lock(&self.shared.snapshot).transcripts.push(tx);
            handle.send(Command::ListenOnce);
            rx
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(text))) => Ok(text),
            Ok(Ok(Err(e))) => Err(voice_err(ErrorCode::Internal, e)),
            Ok(Err(_)) => Ok(String::new()),
            Err(_) => {
                self.shared.send(Command::Interrupt);
                Ok(String::new())
            }
        }
    }

    /// `stop_listening`: closes the microphone and stops a spoken query and its speech.
    ///
    /// # Errors
    /// None today (kept for the build without voice, which refuses).
    pub fn stop_listening(&self) -> Result<(), ProtocolError> {
        self.shared.send(Command::StopListening);
        Ok(())
    }

    /// `toggle_listening`: stops when the microphone is on or a spoken query runs, else starts
    /// listening for one query. Returns the state it leads to.
    ///
    /// # Errors
    /// As [`VoiceService::listen`] when it would start listening.
    pub fn toggle(&self) -> Result<CoreState, ProtocolError> {
        let mut c = lock(&self.shared.control);
        let running = {
            let s = lock(&self.shared.snapshot);
            s.running.is_some()
                && (s.mic_on
                    || s.busy
                    || s.speaking
                    || !matches!(s.state, None | Some(CoreState::Idle)))
        };
        if running {
            self.shared.send_locked(&c, Command::StopListening);
            return Ok(CoreState::Idle);
        }
        let handle = self.shared.ensure_running(&mut c)?;
        handle.send(Command::ToggleListening);
        Ok(CoreState::Activated)
    }

    /// `interrupt`: cuts a spoken query or its speech short (the microphone goes back to what
    /// the mode wants). Nothing happens when the loop is only waiting.
    pub fn interrupt(&self) {
        let active = {
            let s = lock(&self.shared.snapshot);
            s.busy
                || s.speaking
                || matches!(
                    s.state,
                    Some(CoreState::Activated | CoreState::Thinking | CoreState::Speaking)
                )
        };
        if active {
            self.shared.send(Command::Interrupt);
        }
    }

    /// A typed request is about to start: speech of an earlier spoken answer stops.
    pub fn before_typed_turn(&self) {
        let speaking = {
            let s = lock(&self.shared.snapshot);
            s.speaking || s.busy
        };
        if speaking {
            self.shared.send(Command::Interrupt);
        }
    }

    /// New settings: the loop is rebuilt when its models or devices change, stopped for
    /// `disabled`, started for `always`/`wakeword`, and otherwise told the new settings.
    pub fn reconfigure(&self, cfg: &Config) {
        let mut c = lock(&self.shared.control);
        c.cfg = cfg.clone();
        c.failed_key = None;
        let plan = self.shared.plan(&c.cfg);
        lock(&self.shared.snapshot).mode = Some(plan.mode);
        let key = plan.engine_key();
        match &c.running {
            Some(r) if plan.mode != VoiceMode::Disabled && r.key == key => {
                r.handle
                    .send(Command::Configure(Box::new(daemon_loop_config(&plan))));
            }
            Some(_) => {
                let old = self.shared.stop(&mut c);
                if plan.mode.mic_always_on() && plan.stt_ready() {
                    self.shared.start_after(&mut c, plan, old);
                }
            }
            None => {
                if plan.mode.mic_always_on() && plan.stt_ready() {
                    self.shared.start(&mut c, plan);
                }
            }
        }
    }

    /// The voice fields of `status`.
    pub fn fill_status(&self, status: &mut StatusReply) {
        let cfg = lock(&self.shared.control).cfg.clone();
        let plan = self.shared.plan(&cfg);
        let s = lock(&self.shared.snapshot);
        let state = LoopState {
            running: s.running.is_some(),
            mic_on: s.mic_on,
            armed: matches!(s.state, Some(CoreState::Activated))
                || (s.state == Some(CoreState::Listening) && s.mode != Some(VoiceMode::Always)),
            busy: s.busy,
            speaking: s.speaking,
            error: s.error.clone(),
            mic_problem: s.mic_problem.clone(),
            mic_device: s.mic_device.clone(),
        };
        status::fill(status, &plan, true, &state);
    }

    /// Whether this build has voice (always true here).
    pub fn available(&self) -> bool {
        true
    }

    /// The voice state machine's state while a loop runs.
    pub fn state(&self) -> Option<CoreState> {
        let s = lock(&self.shared.snapshot);
        s.running.and(s.state)
    }

    /// A spoken query runs or its answer is being spoken.
    pub fn busy(&self) -> bool {
        let s = lock(&self.shared.snapshot);
        s.busy || s.speaking
    }

    /// Stops the loop and waits (at most 3 s) for its thread: the microphone is released and
    /// a file being written is finished.
    pub fn shutdown(&self) {
        let old = {
            let mut c = lock(&self.shared.control);
            c.closed = true;
            self.shared.stop(&mut c)
        };
        if let Some(t) = old {
            let deadline = Instant::now() + Duration::from_secs(3);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            } else {
                tracing::warn!("the voice loop did not stop within 3 s");
            }
        }
    }
}

/// The loop configuration the daemon runs: the plan's, outliving a file source (the
/// microphone turns off when a file ends).
fn daemon_loop_config(plan: &VoicePlan) -> LoopConfig {
    LoopConfig {
        end_with_source: false,
        ..plan.loop_config.clone()
    }
}

impl Shared {
    fn plan(&self, cfg: &Config) -> VoicePlan {
        VoicePlan::resolve(cfg, &self.store)
    }

    fn send(&self, cmd: Command) {
        let c = lock(&self.control);
        self.send_locked(&c, cmd);
    }

    fn send_locked(&self, c: &Control, cmd: Command) {
        if let Some(r) = &c.running {
            r.handle.send(cmd);
        }
    }

    /// The running loop's handle, starting the loop when it does not run.
    fn ensure_running(self: &Arc<Self>, c: &mut Control) -> Result<VoiceHandle, ProtocolError> {
        if let Some(r) = c.running.as_ref().filter(|r| !r.thread.is_finished()) {
            return Ok(r.handle.clone());
        }
        let plan = self.plan(&c.cfg);
        if plan.mode == VoiceMode::Disabled {
            return Err(voice_err(
                ErrorCode::Unavailable,
                "speech input is off (stt.mode = disabled) — turn it on with `sayri config set stt.mode manual` (or wakeword, always)",
            ));
        }
        if !plan.stt_ready() {
            return Err(voice_err(
                ErrorCode::Unavailable,
                format!(
                    "speech input is not ready: {}",
                    plan.stt_missing().join("; ")
                ),
            ));
        }
        self.start(c, plan);
        c.running
            .as_ref()
            .map(|r| r.handle.clone())
            .ok_or_else(|| voice_err(ErrorCode::Internal, "the voice loop did not start"))
    }

    /// Asks the running loop to stop; returns its thread (to wait for).
    fn stop(&self, c: &mut Control) -> Option<JoinHandle<()>> {
        let r = c.running.take()?;
        r.handle.send(Command::Shutdown);
        Some(r.thread)
    }

    fn start(self: &Arc<Self>, c: &mut Control, plan: VoicePlan) {
        self.start_after(c, plan, None);
    }

    /// Starts a loop for `plan` on a thread of its own, after `previous` (a loop told to stop)
    /// ended: the new loop may open the same device or file.
    fn start_after(
        self: &Arc<Self>,
        c: &mut Control,
        plan: VoicePlan,
        previous: Option<JoinHandle<()>>,
    ) {
        let (Some(brain), Some(rt)) = (c.brain.clone(), c.rt.clone()) else {
            return;
        };
        if c.closed {
            return;
        }
        let id = c.next_id;
        c.next_id += 1;
        let key = plan.engine_key();
        let (handle, inbox) = command_channel();
        {
            let mut s = lock(&self.snapshot);
            s.running = Some(id);
            s.mode = Some(plan.mode);
            s.error = None;
        }
        let shared = self.clone();
        let spawned = std::thread::Builder::new()
            .name("sayri-voice".into())
            .spawn(move || {
                if let Some(p) = previous {
                    let _ = p.join();
                }
                shared.run_loop(id, plan, brain, rt, inbox);
            });
        match spawned {
            Ok(thread) => {
                c.running = Some(Running {
                    id,
                    key,
                    handle,
                    thread,
                })
            }
            Err(e) => {
                lock(&self.snapshot).running = None;
                tracing::error!("cannot start the voice thread: {e}");
            }
        }
    }

    /// The loop's thread: loads the engines, opens the devices, runs until told to stop.
    fn run_loop(
        self: Arc<Self>,
        id: u64,
        plan: VoicePlan,
        brain: Arc<Brain>,
        rt: tokio::runtime::Handle,
        inbox: CommandInbox,
    ) {
        let events = BroadcastSink::new(self.broadcaster.clone(), brain.redactor.clone());
        let key = plan.engine_key();
        match self.build_loop(id, &plan, brain, rt, inbox, events.clone()) {
            Ok(lp) => {
                tracing::info!(
                    "voice loop running ({} mode, whisper {}, wake phrase {})",
                    plan.mode.as_str(),
                    plan.whisper.name.as_deref().unwrap_or("-"),
                    plan.wake_phrase.as_deref().unwrap_or("none")
                );
                if let Err(e) = lp.run() {
                    let msg = format!("The voice loop stopped: {e}");
                    tracing::error!("{msg}");
                    events.emit(CoreEvent::Error(msg.clone()));
                    lock(&self.snapshot).error = Some(msg);
                }
            }
            Err(msg) => {
                tracing::error!("{msg}");
                events.emit(CoreEvent::Error(msg.clone()));
                lock(&self.snapshot).error = Some(msg);
                let mut c = lock(&self.control);
                c.failed_key = Some(key);
                if c.running.as_ref().is_some_and(|r| r.id == id) {
                    c.running = None;
                }
            }
        }
        self.loop_ended(id, &events);
    }

    fn build_loop(
        self: &Arc<Self>,
        id: u64,
        plan: &VoicePlan,
        brain: Arc<Brain>,
        rt: tokio::runtime::Handle,
        inbox: CommandInbox,
        events: BroadcastSink,
    ) -> Result<VoiceLoop, String> {
        let built = sayri_voice::engines::build(plan, &self.store)
            .map_err(|e| format!("Voice could not start: {e}"))?;
        for w in &built.warnings {
            tracing::warn!("voice: {w}");
        }
        let source = sayri_voice::engines::open_input(&plan.input)
            .map_err(|e| format!("Voice could not start: the microphone: {e}"))?;
        let sink = match sayri_voice::engines::open_output(&plan.output) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("No speaker ({e}): replies are not spoken");
                tracing::warn!("{msg}");
                events.emit(CoreEvent::Error(msg));
                Box::new(NullSink::default())
            }
        };
        let agent = Arc::new(CoreAgent::new(brain, rt, events.clone()));
        let shared = self.clone();
        let on_event = Box::new(move |e: TimedEvent| shared.on_event(id, e, &events));
        Ok(VoiceLoop::with_commands(
            built.engines,
            daemon_loop_config(plan),
            source,
            sink,
            agent,
            on_event,
            inbox,
        ))
    }

    /// One event of loop `id`: remembered for `status`, handed to a waiting `listen`, and
    /// broadcast (audio levels at most every 50 ms; `wake` with `at_ms`, its place on the
    /// loop's audio clock).
    fn on_event(&self, id: u64, timed: TimedEvent, events: &BroadcastSink) {
        let event = timed.event;
        {
            let mut s = lock(&self.snapshot);
            if s.running != Some(id) {
                return;
            }
            match &event {
                VoiceEvent::State(st) => s.state = Some(*st),
                VoiceEvent::Mic(on) => {
                    s.mic_on = *on;
                    if !*on {
                        s.mic_problem = None;
                    }
                }
                VoiceEvent::MicStatus {
                    active,
                    device,
                    problem,
                } => {
                    s.mic_on = *active;
                    s.mic_device = Some(device.clone());
                    s.mic_problem = problem.clone();
                }
                VoiceEvent::Busy(b) => s.busy = *b,
                VoiceEvent::Speaking(on) => s.speaking = *on,
                VoiceEvent::Transcript(t) => {
                    for tx in s.transcripts.drain(..) {
                        let _ = tx.send(Ok(t.clone()));
                    }
                }
                VoiceEvent::AudioLevel(_) => {
                    let now = Instant::now();
                    if s.last_level
                        .is_some_and(|at| now.duration_since(at) < LEVEL_INTERVAL)
                    {
                        return;
                    }
                    s.last_level = Some(now);
                }
                _ => {}
            }
        }
        events.broadcast_redacted(&wire::voice_event(&event, samples_to_ms(timed.at)));
    }

    /// Loop `id` ended: clients learn that the microphone is off and the state idle; waiting
    /// `listen`s get `""`.
    fn loop_ended(&self, id: u64, events: &BroadcastSink) {
        let (mic_was_on, state, busy, speaking) = {
            let mut s = lock(&self.snapshot);
            if s.running != Some(id) {
                return;
            }
            s.running = None;
            let why = s
                .error
                .clone()
                .unwrap_or_else(|| "the voice loop stopped".into());
            for tx in s.transcripts.drain(..) {
                let _ = tx.send(Err(why.clone()));
            }
            let out = (s.mic_on, s.state.take(), s.busy, s.speaking);
            s.mic_on = false;
            s.mic_problem = None;
            s.busy = false;
            s.speaking = false;
            out
        };
        for (on, ev) in [
            (mic_was_on, VoiceEvent::Mic(false)),
            (speaking, VoiceEvent::Speaking(false)),
            (busy, VoiceEvent::Busy(false)),
            (
                !matches!(state, None | Some(CoreState::Idle)),
                VoiceEvent::State(CoreState::Idle),
            ),
        ] {
            if on {
                events.broadcast_redacted(&wire::voice_event(&ev, 0));
            }
        }
    }

    /// Every few seconds: tells the loop whether a client is connected (a wake word heard
    /// while none is asks front-ends to `show`), and starts a loop that could not start
    /// before once speech to text became ready (models installed meanwhile).
    fn poll(self: &Arc<Self>) {
        let visible = self.broadcaster.client_count() > 0;
        let changed = {
            let mut s = lock(&self.snapshot);
            let changed = s.ui_visible != Some(visible);
            s.ui_visible = Some(visible);
            changed
        };
        let mut c = lock(&self.control);
        if changed {
            self.send_locked(&c, Command::UiVisible(visible));
        }
        if c.running.is_some() || c.brain.is_none() {
            return;
        }
        let plan = self.plan(&c.cfg);
        let key = plan.engine_key();
        if plan.mode.mic_always_on() && plan.stt_ready() && c.failed_key.as_ref() != Some(&key) {
            self.start(&mut c, plan);
        }
    }
}
