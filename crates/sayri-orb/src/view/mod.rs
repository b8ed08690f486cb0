//! The orb's view model: everything the window shows, built only from daemon events, responses
//! and the person's actions, with no GTK in it. [`ViewModel::apply`] is the reducer: it takes
//! one [`Input`] and the current monotonic time in milliseconds, updates the state, marks what
//! changed in [`Changes`], and returns the requests to send to the daemon.
//!
//! Because all state comes from events, several orbs and the CLI stay in sync: a permission card
//! answered by any client disappears on `permission_resolved`, settings changed elsewhere arrive
//! as `settings_changed`, and a reconnect fetches everything again.

mod conversation;
mod permissions;
mod requests;
mod settings;

pub use conversation::{ToolStep, Turn, TurnItem};
pub use permissions::{PermissionCard, Segment};
pub use requests::{Request, Tag};
pub use settings::{OrbCorner, SettingRow, UiPrefs};

use sayri_protocol::{ErrorCode, Event, ProtocolError, names::event};
use serde_json::{Value, json};

/// Most notices (errors) kept on the card; older ones drop off.
pub const MAX_NOTICES: usize = 4;

/// The orb's animation state, from the daemon's `state` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OrbState {
    /// Nothing happening.
    #[default]
    Idle,
    /// Microphone open.
    Listening,
    /// Wake word heard, waiting for the request.
    Activated,
    /// A turn is running.
    Thinking,
    /// Speech output.
    Speaking,
}

impl OrbState {
    /// Parses a wire name; unknown names are `None` (ignored, as the protocol asks).
    pub fn from_wire(s: &str) -> Option<OrbState> {
        Some(match s {
            "idle" => OrbState::Idle,
            "listening" => OrbState::Listening,
            "activated" => OrbState::Activated,
            "thinking" => OrbState::Thinking,
            "speaking" => OrbState::Speaking,
            _ => return None,
        })
    }
    /// Words for people (accessible description, tooltip).
    pub fn label(self) -> &'static str {
        match self {
            OrbState::Idle => "idle",
            OrbState::Listening => "listening",
            OrbState::Activated => "listening for your request",
            OrbState::Thinking => "thinking",
            OrbState::Speaking => "speaking",
        }
    }
}

/// The connection to the daemon as the person sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LinkState {
    /// First connection attempt.
    #[default]
    Connecting,
    /// No daemon was running; `sayri` is starting one.
    StartingDaemon,
    /// Connected and greeted.
    Connected,
    /// The connection was lost (or never made); retrying in `retry_in_ms`.
    Reconnecting {
        /// Attempts so far.
        attempt: u32,
        /// Delay before the next attempt.
        retry_in_ms: u64,
        /// What went wrong, for people.
        reason: String,
    },
    /// Driven by a canned script (`--demo`), no daemon.
    Demo,
}

/// A line on the card that is not part of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Visible-form text.
    pub text: String,
    /// True for errors, false for information.
    pub error: bool,
}

/// An agent in the switcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRow {
    /// Id (profile file name).
    pub id: String,
    /// Display name (visible form).
    pub name: String,
}

/// A conversation in the session list.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    /// Session id.
    pub id: String,
    /// Title (visible form; `(untitled)` when empty).
    pub title: String,
    /// Stored messages.
    pub messages: u64,
    /// Unix seconds of the last message.
    pub updated_at: f64,
}

/// Which parts of the window need redrawing since the last [`ViewModel::take_changes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Changes {
    /// Orb colour/motion (state, level, busy, link).
    pub orb: bool,
    /// Transcript, reply, tool steps.
    pub conversation: bool,
    /// Permission cards (including countdowns).
    pub permissions: bool,
    /// Hint, errors, connection banner.
    pub notices: bool,
    /// Agent badge and switcher.
    pub agents: bool,
    /// Session list.
    pub sessions: bool,
    /// Settings view.
    pub settings: bool,
    /// Size, corner, stacking, card visibility.
    pub layout: bool,
    /// Window shown or hidden.
    pub visibility: bool,
}

impl Changes {
    /// Everything.
    pub fn all() -> Changes {
        Changes {
            orb: true,
            conversation: true,
            permissions: true,
            notices: true,
            agents: true,
            sessions: true,
            settings: true,
            layout: true,
            visibility: true,
        }
    }
}

/// What the person did (the widgets turn clicks and keys into these).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send `text` as a request (`talk`).
    Talk(String),
    /// Answer a permission card.
    Answer {
        /// `request.id` of the card.
        request_id: String,
        /// Allow (true) or deny.
        allow: bool,
        /// "Allow always": remember the approval.
        remember: bool,
    },
    /// Click on the orb.
    ToggleListening,
    /// Stop the running request.
    Interrupt,
    /// Start a new conversation.
    NewConversation,
    /// Continue another conversation.
    SwitchSession(String),
    /// Rename a conversation.
    RenameSession {
        /// Session id.
        id: String,
        /// New title.
        title: String,
    },
    /// Delete a conversation.
    DeleteSession(String),
    /// Use another agent.
    SwitchAgent(String),
    /// Store a setting (`group.key`).
    SetConfig {
        /// `group.key`.
        key: String,
        /// Typed value (the daemon converts text too).
        value: Value,
    },
    /// Close a notice.
    DismissNotice(usize),
    /// Show or hide the whole window (tray icon).
    ToggleWindow,
    /// Show or hide the card beside the orb (right click on the orb).
    ToggleCard,
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The connection changed.
    Link(LinkState),
    /// A (re)connection was greeted: `ready.info` (the status object).
    Ready(Value),
    /// A daemon event.
    Event(Event),
    /// The answer to a request sent with `tag`.
    Response {
        /// What the request was for.
        tag: Tag,
        /// Its result or error.
        result: Result<Value, ProtocolError>,
    },
    /// The person acted.
    Action(Action),
    /// Time passed (drives countdowns).
    Tick,
}

/// Everything the window shows. Fields are read by the widgets; change them only through
/// [`ViewModel::apply`].
#[derive(Debug, Clone, Default)]
pub struct ViewModel {
    /// Connection.
    pub link: LinkState,
    /// Orb state.
    pub orb: OrbState,
    /// Microphone or playback level, 0..1.
    pub audio_level: f32,
    /// A request is running.
    pub busy: bool,
    /// Microphone on.
    pub mic: bool,
    /// Live transcript (visible form; empty when none).
    pub partial: String,
    /// The conversation, oldest first.
    pub turns: Vec<Turn>,
    /// Open permission questions, oldest first.
    pub permissions: Vec<PermissionCard>,
    /// Latest hint (visible form).
    pub hint: Option<String>,
    /// Errors and information, oldest first.
    pub notices: Vec<Notice>,
    /// Active agent id.
    pub agent_id: Option<String>,
    /// Known agents.
    pub agents: Vec<AgentRow>,
    /// Active session id.
    pub session_id: Option<String>,
    /// Recent sessions, newest first.
    pub sessions: Vec<SessionRow>,
    /// Settings in table order.
    pub settings: Vec<SettingRow>,
    /// Window shown (`show`/`hide`/`toggle` events).
    pub visible: bool,
    /// Card shown beside the orb: follows `ui.bubble_visible`, toggled by the person, and
    /// opened whenever a permission question arrives.
    pub card_open: bool,
    changes: Changes,
}

impl ViewModel {
    /// A fresh model: not connected, window visible, everything to draw.
    pub fn new() -> ViewModel {
        ViewModel {
            visible: true,
            card_open: true,
            changes: Changes::all(),
            ..ViewModel::default()
        }
    }

    /// Marks everything as changed (the next redraw draws it all).
    pub fn mark_all_changed(&mut self) {
        self.changes = Changes::all();
    }

    /// Returns what changed since the last call and clears it.
    pub fn take_changes(&mut self) -> Changes {
        std::mem::take(&mut self.changes)
    }

    /// The `ui.*` preferences (defaults until `config_list` arrives).
    pub fn ui(&self) -> UiPrefs {
        UiPrefs::from_rows(&self.settings)
    }

    /// Display name of the active agent (its id when the list has not arrived).
    pub fn agent_name(&self) -> Option<String> {
        let id = self.agent_id.as_ref()?;
        Some(self.agents.iter().find(|a| &a.id == id).map_or_else(
            || crate::safe_text::visible(id).into_owned(),
            |a| a.name.clone(),
        ))
    }

    /// The reducer: applies `input` at monotonic time `now_ms`; returns requests to send.
    pub fn apply(&mut self, input: Input, now_ms: u64) -> Vec<Request> {
        match input {
            Input::Link(link) => self.on_link(link),
            Input::Ready(info) => self.on_ready(&info, now_ms),
            Input::Event(ev) => self.on_event(&ev, now_ms),
            Input::Response { tag, result } => self.on_response(tag, result, now_ms),
            Input::Action(action) => self.on_action(action),
            Input::Tick => {
                if !self.permissions.is_empty() {
                    self.changes.permissions = true;
                }
                Vec::new()
            }
        }
    }

    fn on_link(&mut self, link: LinkState) -> Vec<Request> {
        if link != LinkState::Connected && self.link == LinkState::Connected {
            // Nothing pending survives a lost connection: the daemon settles open questions
            // and requests when it stops, and a restarted daemon knows none of them.
            self.permissions.clear();
            self.busy = false;
            self.orb = OrbState::Idle;
            self.audio_level = 0.0;
            self.partial.clear();
            self.changes.permissions = true;
            self.changes.conversation = true;
        }
        self.link = link;
        self.changes.orb = true;
        self.changes.notices = true;
        Vec::new()
    }

    fn on_ready(&mut self, info: &Value, now_ms: u64) -> Vec<Request> {
        let _ = now_ms;
        self.link = LinkState::Connected;
        self.changes.orb = true;
        self.changes.notices = true;
        self.apply_status(info);
        let mut out = vec![
            Request::new(Tag::PermissionList, json!({})),
            Request::new(Tag::AgentsList, json!({})),
            Request::new(Tag::SessionsList, json!({"limit": 20})),
            Request::new(Tag::ConfigList, json!({})),
        ];
        if let Some(id) = &self.session_id {
            out.push(Request::new(Tag::SessionGet, json!({"session_id": id})));
        }
        out
    }

    /// Takes `state`, `busy`, `session_id` and `agent` from a status object.
    fn apply_status(&mut self, info: &Value) {
        if let Some(s) = info
            .get("state")
            .and_then(Value::as_str)
            .and_then(OrbState::from_wire)
        {
            self.orb = s;
        }
        if let Some(b) = info.get("busy").and_then(Value::as_bool) {
            self.busy = b;
        }
        let session = info
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        if session != self.session_id {
            self.session_id = session;
            self.changes.sessions = true;
        }
        if let Some(a) = info.get("agent").and_then(Value::as_str)
            && self.agent_id.as_deref() != Some(a)
        {
            self.agent_id = Some(a.to_string());
            self.changes.agents = true;
        }
        self.changes.orb = true;
    }

    fn notice(&mut self, text: &str, error: bool) {
        self.notices.push(Notice {
            text: crate::safe_text::visible(text).into_owned(),
            error,
        });
        if self.notices.len() > MAX_NOTICES {
            let extra = self.notices.len() - MAX_NOTICES;
            self.notices.drain(..extra);
        }
        self.changes.notices = true;
    }

    fn on_event(&mut self, ev: &Event, now_ms: u64) -> Vec<Request> {
        let p = &ev.payload;
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        let b = |k: &str| p.get(k).and_then(Value::as_bool).unwrap_or(false);
        match ev.event.as_str() {
            event::READY => {
                let info = p.get("info").cloned().unwrap_or(Value::Null);
                return self.on_ready(&info, now_ms);
            }
            event::STATE => {
                if let Some(st) = OrbState::from_wire(s("state")) {
                    self.orb = st;
                    self.changes.orb = true;
                }
            }
            event::AUDIO_LEVEL => {
                let level = p.get("level").and_then(Value::as_f64).unwrap_or(0.0);
                self.audio_level = if level.is_finite() {
                    level.clamp(0.0, 1.0) as f32
                } else {
                    0.0
                };
                self.changes.orb = true;
            }
            event::MIC => {
                self.mic = b("active");
                self.changes.orb = true;
            }
            event::BUSY => {
                self.busy = b("active");
                self.changes.orb = true;
                if !self.busy {
                    self.conversation_finished();
                    return vec![
                        Request::new(Tag::Status, json!({})),
                        Request::new(Tag::SessionsList, json!({"limit": 20})),
                    ];
                }
            }
            event::PARTIAL => {
                self.partial = crate::safe_text::visible(s("text")).into_owned();
                self.changes.conversation = true;
            }
            event::USER => self.user_turn(s("text")),
            event::ASSISTANT_DELTA => self.delta(s("delta")),
            event::REASONING_DELTA => self.reasoning(s("delta")),
            event::ASSISTANT_DONE => self.done(s("text")),
            event::TOOL_START => self.tool_start(s("command")),
            event::TOOL_FINISH => {
                let code = p.get("exit_code").and_then(Value::as_i64);
                self.tool_finish(s("command"), s("output"), code);
            }
            event::HINT => {
                self.hint = Some(crate::safe_text::visible(s("text")).into_owned())
                    .filter(|h| !h.is_empty());
                self.changes.notices = true;
            }
            event::ERROR => {
                let text = s("error").to_string();
                self.error_in_turn(&text);
                self.notice(&text, true);
            }
            event::SPEAKING => self.changes.orb = true,
            event::SHOW => self.set_visible(true),
            event::HIDE => self.set_visible(false),
            event::TOGGLE => self.set_visible(!self.visible),
            event::CONVERSATION_STARTED => {
                self.session_id = Some(s("session_id").to_string()).filter(|s| !s.is_empty());
                self.turns.clear();
                self.changes.conversation = true;
                self.changes.sessions = true;
                return vec![Request::new(Tag::SessionsList, json!({"limit": 20}))];
            }
            event::PERMISSION_REQUEST => {
                if let Some(r) = p.get("request") {
                    self.open_card(r, now_ms);
                }
            }
            event::PERMISSION_RESOLVED => self.close_card(s("request_id")),
            event::SETTINGS_CHANGED => self.settings_changed(p),
            event::SHUTDOWN => {
                self.hint = Some("The Sayri daemon is stopping.".into());
                self.changes.notices = true;
            }
            _ => {}
        }
        Vec::new()
    }

    fn set_visible(&mut self, v: bool) {
        self.visible = v;
        self.changes.visibility = true;
    }

    fn on_response(
        &mut self,
        tag: Tag,
        result: Result<Value, ProtocolError>,
        now_ms: u64,
    ) -> Vec<Request> {
        let value = match result {
            Ok(v) => v,
            Err(e) => return self.on_failure(tag, e),
        };
        match tag {
            Tag::Status => self.apply_status(&value),
            Tag::PermissionList => {
                let pending = value.get("pending").and_then(Value::as_array);
                for r in pending.into_iter().flatten() {
                    self.open_card(r, now_ms);
                }
            }
            Tag::AgentsList => self.set_agents(&value),
            Tag::SessionsList => self.set_sessions(&value),
            Tag::SessionGet => self.load_session(&value),
            Tag::ConfigList => self.set_settings(&value),
            Tag::SetConfig { key } => self.setting_stored(&key, &value),
            Tag::AgentSwitch => {
                if let Some(id) = value.get("agent_id").and_then(Value::as_str) {
                    self.agent_id = Some(id.to_string());
                    self.changes.agents = true;
                }
            }
            Tag::SwitchSession | Tag::NewConversation => {
                let id = value.get("session_id").and_then(Value::as_str);
                if let Some(id) = id.filter(|id| self.session_id.as_deref() != Some(*id)) {
                    self.session_id = Some(id.to_string());
                    self.turns.clear();
                    self.changes.conversation = true;
                    self.changes.sessions = true;
                    return vec![Request::new(Tag::SessionGet, json!({"session_id": id}))];
                }
            }
            Tag::RenameSession | Tag::DeleteSession => {
                return vec![Request::new(Tag::SessionsList, json!({"limit": 20}))];
            }
            Tag::Answer { .. } | Tag::Talk | Tag::ToggleListening | Tag::Interrupt => {}
        }
        Vec::new()
    }

    fn on_failure(&mut self, tag: Tag, e: ProtocolError) -> Vec<Request> {
        match tag {
            Tag::SetConfig { key } => self.setting_failed(&key, &e.message),
            Tag::Answer { request_id } => {
                if e.code == ErrorCode::NotFound {
                    // Already settled elsewhere (or expired): the card has nothing left to ask.
                    self.close_card(&request_id);
                } else {
                    self.card_failed(&request_id, &e.message);
                }
            }
            Tag::ToggleListening if e.code == ErrorCode::NotImplemented => {
                self.hint = Some("Voice is not available in this daemon yet; type instead.".into());
                self.changes.notices = true;
            }
            Tag::ToggleListening if e.code == ErrorCode::Unavailable => {
                // Speech input is off or not installed: the message says what to do.
                self.hint = Some(e.message);
                self.changes.notices = true;
            }
            Tag::SessionGet if e.code == ErrorCode::NotFound => {}
            _ => self.notice(&e.message, true),
        }
        Vec::new()
    }

    fn on_action(&mut self, action: Action) -> Vec<Request> {
        match action {
            Action::Talk(text) => {
                let text = text.trim().to_string();
                if text.is_empty() {
                    return Vec::new();
                }
                vec![Request::new(Tag::Talk, json!({"text": text}))]
            }
            Action::Answer {
                request_id,
                allow,
                remember,
            } => self.answer_card(request_id, allow, remember),
            Action::ToggleListening => vec![Request::new(Tag::ToggleListening, json!({}))],
            Action::Interrupt => vec![Request::new(Tag::Interrupt, json!({}))],
            Action::NewConversation => vec![Request::new(Tag::NewConversation, json!({}))],
            Action::SwitchSession(id) => {
                vec![Request::new(Tag::SwitchSession, json!({"session_id": id}))]
            }
            Action::RenameSession { id, title } => {
                let title = title.trim().to_string();
                if title.is_empty() {
                    self.notice("A conversation title cannot be empty.", true);
                    return Vec::new();
                }
                vec![Request::new(
                    Tag::RenameSession,
                    json!({"session_id": id, "title": title}),
                )]
            }
            Action::DeleteSession(id) => {
                vec![Request::new(Tag::DeleteSession, json!({"session_id": id}))]
            }
            Action::SwitchAgent(id) => {
                vec![Request::new(Tag::AgentSwitch, json!({"agent_id": id}))]
            }
            Action::SetConfig { key, value } => self.set_config(key, value),
            Action::ToggleWindow => {
                self.set_visible(!self.visible);
                Vec::new()
            }
            Action::ToggleCard => {
                self.card_open = !self.card_open;
                self.changes.layout = true;
                Vec::new()
            }
            Action::DismissNotice(i) => {
                if i < self.notices.len() {
                    self.notices.remove(i);
                    self.changes.notices = true;
                }
                Vec::new()
            }
        }
    }

    fn set_agents(&mut self, value: &Value) {
        self.agents = value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                let id = a.get("id").and_then(Value::as_str)?;
                let name = a.get("name").and_then(Value::as_str).unwrap_or(id);
                Some(AgentRow {
                    id: id.to_string(),
                    name: crate::safe_text::visible(name).into_owned(),
                })
            })
            .collect();
        self.changes.agents = true;
    }

    fn set_sessions(&mut self, value: &Value) {
        self.sessions = value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| {
                let id = s.get("id").and_then(Value::as_str)?;
                let title = s.get("title").and_then(Value::as_str).unwrap_or("").trim();
                Some(SessionRow {
                    id: id.to_string(),
                    title: if title.is_empty() {
                        "(untitled)".into()
                    } else {
                        crate::safe_text::visible(title).into_owned()
                    },
                    messages: s.get("messages").and_then(Value::as_u64).unwrap_or(0),
                    updated_at: s.get("updated_at").and_then(Value::as_f64).unwrap_or(0.0),
                })
            })
            .collect();
        self.changes.sessions = true;
    }
}

#[cfg(test)]
mod tests;
