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

use sayri_protocol::event::AnyEvent;
use sayri_protocol::params::{
    AgentSwitchParams, AgentsListParams, ConfigListParams, ConfigSetParams, InterruptParams,
    MemoryAddParams, NewConversationParams, PermissionListParams, SessionDeleteParams,
    SessionGetParams, SessionRenameParams, SessionsListParams, StatusParams, SwitchSessionParams,
    TalkParams, ToggleListeningParams,
};
use sayri_protocol::reply::sessions::SessionSummary;
use sayri_protocol::reply::{self, ReplyError, agents::ListedAgent, runtime::StatusReply};
use sayri_protocol::{ErrorCode, ProtocolError};
use serde_json::Value;

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
    /// "Remember this" on a line the person said: keep it as a fact for every agent.
    Remember(String),
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The connection changed.
    Link(LinkState),
    /// A (re)connection was greeted: `ready.info` (the status object).
    Ready(StatusReply),
    /// A daemon event.
    Event(AnyEvent),
    /// The answer to a request sent with `tag`: its `result` as sent (read into the reply type
    /// of the tag's command by [`ViewModel::apply`]) or its error.
    Response {
        /// What the request was for.
        tag: Tag,
        /// Its result or error.
        result: Result<Value, ProtocolError>,
    },
    /// A daemon event this orb cannot read (another version of the daemon): shown as an error.
    Unreadable(String),
    /// The person acted.
    Action(Action),
    /// Time passed (drives countdowns).
    Tick,
}

impl Input {
    /// A daemon event frame as the view model takes it: its type of `sayri_protocol::event`,
    /// or [`Input::Unreadable`] when it does not fit (the daemon is another version).
    pub fn from_frame(frame: &sayri_protocol::Event) -> Input {
        match AnyEvent::read(frame) {
            Ok(ev) => Input::Event(ev),
            Err(e) => Input::Unreadable(e.to_string()),
        }
    }
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
            Input::Unreadable(why) => {
                self.notice(&why, true);
                Vec::new()
            }
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

    fn on_ready(&mut self, info: &StatusReply, now_ms: u64) -> Vec<Request> {
        let _ = now_ms;
        self.link = LinkState::Connected;
        self.changes.orb = true;
        self.changes.notices = true;
        self.apply_status(info);
        let mut out = vec![
            Request::typed(Tag::PermissionList, &PermissionListParams {}),
            Request::typed(Tag::AgentsList, &AgentsListParams {}),
            sessions_list(),
            Request::typed(Tag::ConfigList, &ConfigListParams {}),
        ];
        if let Some(id) = &self.session_id {
            out.push(Request::typed(
                Tag::SessionGet,
                &SessionGetParams {
                    session_id: id.clone(),
                },
            ));
        }
        out
    }

    /// Takes `state`, `busy`, `session_id` and `agent` from a status object.
    fn apply_status(&mut self, info: &StatusReply) {
        if let Some(s) = OrbState::from_wire(&info.state) {
            self.orb = s;
        }
        self.busy = info.busy;
        if info.session_id != self.session_id {
            self.session_id = info.session_id.clone();
            self.changes.sessions = true;
        }
        if !info.agent.is_empty() && self.agent_id.as_deref() != Some(info.agent.as_str()) {
            self.agent_id = Some(info.agent.clone());
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

    fn on_event(&mut self, ev: &AnyEvent, now_ms: u64) -> Vec<Request> {
        match ev {
            AnyEvent::Ready(r) => return self.on_ready(&r.info, now_ms),
            AnyEvent::State(st) => {
                if let Some(st) = OrbState::from_wire(&st.state) {
                    self.orb = st;
                    self.changes.orb = true;
                }
            }
            AnyEvent::AudioLevel(a) => {
                self.audio_level = if a.level.is_finite() {
                    a.level.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                self.changes.orb = true;
            }
            AnyEvent::Mic(m) => {
                self.mic = m.active;
                self.changes.orb = true;
            }
            AnyEvent::Busy(b) => return self.on_busy(b.active),
            AnyEvent::Partial(p) => {
                self.partial = crate::safe_text::visible(&p.text).into_owned();
                self.changes.conversation = true;
            }
            AnyEvent::User(u) => self.user_turn(&u.text),
            AnyEvent::AssistantDelta(d) => self.delta(&d.delta),
            AnyEvent::ReasoningDelta(d) => self.reasoning(&d.delta),
            AnyEvent::AssistantDone(d) => self.done(&d.text),
            AnyEvent::ToolStart(t) => self.tool_start(&t.command),
            AnyEvent::ToolFinish(t) => {
                self.tool_finish(&t.command, &t.output, t.exit_code.map(i64::from));
            }
            AnyEvent::Hint(h) => {
                self.hint =
                    Some(crate::safe_text::visible(&h.text).into_owned()).filter(|h| !h.is_empty());
                self.changes.notices = true;
            }
            AnyEvent::Error(e) => {
                self.error_in_turn(&e.error);
                self.notice(&e.error, true);
            }
            AnyEvent::Speaking(_) => self.changes.orb = true,
            AnyEvent::Show(_) => self.set_visible(true),
            AnyEvent::Hide(_) => self.set_visible(false),
            AnyEvent::Toggle(_) => self.set_visible(!self.visible),
            AnyEvent::ConversationStarted(c) => {
                self.session_id = Some(c.session_id.clone()).filter(|s| !s.is_empty());
                self.turns.clear();
                self.changes.conversation = true;
                self.changes.sessions = true;
                return vec![sessions_list()];
            }
            AnyEvent::PermissionRequest(p) => self.open_card(&p.request, now_ms),
            AnyEvent::PermissionResolved(r) => self.close_card(&r.request_id),
            AnyEvent::SettingsChanged(c) => self.settings_changed(&c.values),
            AnyEvent::Shutdown(_) => {
                self.hint = Some("The Sayri daemon is stopping.".into());
                self.changes.notices = true;
            }
            _ => {}
        }
        Vec::new()
    }

    /// `busy`: a request started or ended; at the end the status and the session list are
    /// fetched again.
    fn on_busy(&mut self, active: bool) -> Vec<Request> {
        self.busy = active;
        self.changes.orb = true;
        if active {
            return Vec::new();
        }
        self.conversation_finished();
        vec![
            Request::typed(Tag::Status, &StatusParams {}),
            sessions_list(),
        ]
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
        match self.apply_reply(tag, value, now_ms) {
            Ok(requests) => requests,
            Err(e) => {
                self.notice(&e.to_string(), true);
                Vec::new()
            }
        }
    }

    /// Reads `value` as the reply of `tag`'s command and applies it.
    ///
    /// # Errors
    /// The reply is not its command's reply type (the daemon is another version).
    fn apply_reply(
        &mut self,
        tag: Tag,
        value: Value,
        now_ms: u64,
    ) -> Result<Vec<Request>, ReplyError> {
        match tag {
            Tag::Status => self.apply_status(&reply::decode::<StatusParams>(value)?),
            Tag::PermissionList => {
                for r in &reply::decode::<PermissionListParams>(value)?.pending {
                    self.open_card(r, now_ms);
                }
            }
            Tag::AgentsList => self.set_agents(&reply::decode::<AgentsListParams>(value)?),
            Tag::SessionsList => self.set_sessions(&reply::decode::<SessionsListParams>(value)?),
            Tag::SessionGet => self.load_session(&reply::decode::<SessionGetParams>(value)?),
            Tag::ConfigList => self.set_settings(reply::decode::<ConfigListParams>(value)?),
            Tag::SetConfig { key } => {
                self.setting_stored(&key, reply::decode::<ConfigSetParams>(value)?.value);
            }
            Tag::AgentSwitch => {
                self.agent_id = Some(reply::decode::<AgentSwitchParams>(value)?.agent_id);
                self.changes.agents = true;
            }
            Tag::SwitchSession => {
                let id = reply::decode::<SwitchSessionParams>(value)?.session_id;
                return Ok(self.session_switched(id));
            }
            Tag::NewConversation => {
                let id = reply::decode::<NewConversationParams>(value)?.session_id;
                return Ok(self.session_switched(id));
            }
            Tag::RenameSession | Tag::DeleteSession => return Ok(vec![sessions_list()]),
            Tag::Remember => {
                let fact = reply::decode::<MemoryAddParams>(value)?;
                self.notice(
                    &format!(
                        "Remembered as fact {} (`sayri memory list` shows it).",
                        fact.id
                    ),
                    false,
                );
            }
            Tag::Answer { .. } | Tag::Talk | Tag::ToggleListening | Tag::Interrupt => {}
        }
        Ok(Vec::new())
    }

    /// Another session became the active one: its transcript is fetched.
    fn session_switched(&mut self, id: String) -> Vec<Request> {
        if self.session_id.as_deref() == Some(id.as_str()) {
            return Vec::new();
        }
        self.session_id = Some(id.clone());
        self.turns.clear();
        self.changes.conversation = true;
        self.changes.sessions = true;
        vec![Request::typed(
            Tag::SessionGet,
            &SessionGetParams { session_id: id },
        )]
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
                vec![Request::typed(
                    Tag::Talk,
                    &TalkParams {
                        text,
                        ..TalkParams::default()
                    },
                )]
            }
            Action::Answer {
                request_id,
                allow,
                remember,
            } => self.answer_card(request_id, allow, remember),
            Action::ToggleListening => {
                vec![Request::typed(
                    Tag::ToggleListening,
                    &ToggleListeningParams {},
                )]
            }
            Action::Interrupt => vec![Request::typed(Tag::Interrupt, &InterruptParams {})],
            Action::NewConversation => {
                vec![Request::typed(
                    Tag::NewConversation,
                    &NewConversationParams {},
                )]
            }
            Action::SwitchSession(id) => {
                vec![Request::typed(
                    Tag::SwitchSession,
                    &SwitchSessionParams { session_id: id },
                )]
            }
            Action::RenameSession { id, title } => {
                let title = title.trim().to_string();
                if title.is_empty() {
                    self.notice("A conversation title cannot be empty.", true);
                    return Vec::new();
                }
                vec![Request::typed(
                    Tag::RenameSession,
                    &SessionRenameParams {
                        session_id: id,
                        title,
                    },
                )]
            }
            Action::DeleteSession(id) => {
                vec![Request::typed(
                    Tag::DeleteSession,
                    &SessionDeleteParams { session_id: id },
                )]
            }
            Action::SwitchAgent(id) => {
                vec![Request::typed(
                    Tag::AgentSwitch,
                    &AgentSwitchParams { agent_id: id },
                )]
            }
            Action::SetConfig { key, value } => self.set_config(key, value),
            Action::Remember(text) => {
                let text = text.trim().to_string();
                if text.is_empty() {
                    return Vec::new();
                }
                vec![Request::typed(
                    Tag::Remember,
                    &MemoryAddParams { text, agent: None },
                )]
            }
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

    fn set_agents(&mut self, agents: &[ListedAgent]) {
        self.agents = agents
            .iter()
            .filter(|a| !a.id().is_empty())
            .map(|a| AgentRow {
                id: a.id().to_string(),
                name: crate::safe_text::visible(a.name()).into_owned(),
            })
            .collect();
        self.changes.agents = true;
    }

    fn set_sessions(&mut self, sessions: &[SessionSummary]) {
        self.sessions = sessions
            .iter()
            .filter(|s| !s.id.is_empty())
            .map(|s| {
                let title = s.title.trim();
                SessionRow {
                    id: s.id.clone(),
                    title: if title.is_empty() {
                        "(untitled)".into()
                    } else {
                        crate::safe_text::visible(title).into_owned()
                    },
                    messages: u64::from(s.messages),
                    updated_at: s.updated_at,
                }
            })
            .collect();
        self.changes.sessions = true;
    }
}

/// `sessions_list` of the 20 newest.
fn sessions_list() -> Request {
    Request::typed(Tag::SessionsList, &SessionsListParams { limit: Some(20) })
}

#[cfg(test)]
mod tests;
