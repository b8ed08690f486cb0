//! Typed events: one struct per event, bound to its name in [`crate::names::event`] by
//! [`EventPayload`], one module per area, and [`AnyEvent`] for a reader that takes any event.
//!
//! The daemon broadcasts these values (its bus takes an [`EventPayload`]); [`frame`] is the one
//! place an event becomes the wire's `{"event": NAME, ...payload}`. Clients read a frame with
//! [`AnyEvent::read`] or [`parse`]. A member renamed here fails to compile in the daemon and in
//! every Rust client.
//!
//! The wire rules are those of [`crate::reply`]: the original Sayri's names, `null` versus
//! absent kept apart, no `deny_unknown_fields` (a newer daemon may add members).
//!
//! ```
//! use sayri_protocol::event::{self, AnyEvent, turns::AssistantDelta};
//! let frame = event::frame(&AssistantDelta { delta: "Hi".into() }).unwrap();
//! assert_eq!(serde_json::to_string(&frame).unwrap(), r#"{"event":"assistant_delta","delta":"Hi"}"#);
//! match AnyEvent::read(&frame).unwrap() {
//!     AnyEvent::AssistantDelta(d) => assert_eq!(d.delta, "Hi"),
//!     other => panic!("{other:?}"),
//! }
//! ```
//!
//! Adding an event: its name in `names.rs`, its struct in the module of its area with
//! `impl EventPayload`, a line in the `events!` list below, and its row in `PROTOCOL.md`.

pub mod permissions;
pub mod routines;
pub mod settings;
pub mod turns;
pub mod voice;
pub mod window;

use crate::message::Event;
use crate::names::event as name;
use crate::reply::Nonconforming;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The payload of one event, bound to its wire name.
pub trait EventPayload: Serialize + DeserializeOwned + Send + 'static {
    /// The event's wire name, one of [`crate::names::event::ALL`].
    const NAME: &'static str;
}

/// The wire frame of `event`: `{"event": NAME, ...payload}`.
///
/// # Errors
/// Only when a member cannot be represented in JSON, or the payload is not an object.
pub fn frame<E: EventPayload>(event: &E) -> Result<Event, serde_json::Error> {
    Ok(Event::new(E::NAME, payload(event)?))
}

/// The payload object of `event` (without `event`).
///
/// # Errors
/// As [`frame`].
pub fn payload<E: EventPayload>(event: &E) -> Result<Map<String, Value>, serde_json::Error> {
    match serde_json::to_value(event)? {
        Value::Object(m) => Ok(m),
        other => Err(serde::ser::Error::custom(format!(
            "the payload of {} must be an object, not {other}",
            E::NAME
        ))),
    }
}

/// Reads `frame` as event `E`; `None` when it is another event.
///
/// # Errors
/// The frame is `E` but its payload does not fit (the message names the member).
pub fn parse<E: EventPayload>(frame: &Event) -> Option<Result<E, EventError>> {
    (frame.event == E::NAME).then(|| {
        serde_path_to_error::deserialize(Value::Object(frame.payload.clone())).map_err(|e| {
            EventError {
                event: E::NAME,
                detail: e.to_string(),
            }
        })
    })
}

/// Whether `frame`, as it came off the wire, is exactly its event type: read into the type and
/// written again it gives the same JSON text. An event this crate does not name fails.
///
/// Tests hold the daemon to its declared event types with it (parsing the wire with
/// serde_json's `float_roundtrip` feature, as [`crate::reply::conforms`] says).
///
/// # Errors
/// [`Nonconforming`]: what does not fit, or both texts when they differ.
pub fn conforms(frame: &Event) -> Result<(), Nonconforming> {
    let typed = match AnyEvent::read(frame)? {
        AnyEvent::Unknown(_) => return Err(Nonconforming::UnknownEvent(frame.event.clone())),
        typed => typed,
    };
    let again = typed.frame()?;
    let text = |f: &Event| serde_json::to_value(f).map(|v| v.to_string());
    let (sent, typed) = (text(frame)?, text(&again)?);
    if sent == typed {
        Ok(())
    } else {
        Err(Nonconforming::EventDiffers {
            event: frame.event.clone(),
            sent,
            typed,
        })
    }
}

/// An event frame whose payload is not what this client knows for its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    /// The event.
    pub event: &'static str,
    /// Where and what.
    pub detail: String,
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the daemon's {} event is not what this client understands ({}); the daemon and this client are probably different versions of Sayri — update both",
            self.event, self.detail
        )
    }
}

impl std::error::Error for EventError {}

/// What is known of one event type without naming it (for checks and docs).
#[derive(Debug, Clone, Copy)]
pub struct EventInfo {
    /// The wire name.
    pub name: &'static str,
    /// Its payload members ([`crate::shape::field_names`]).
    pub fields: fn() -> &'static [&'static str],
}

macro_rules! events {
    ($($(#[$doc:meta])* $variant:ident($path:path) = $name:ident;)*) => {
        $(impl EventPayload for $path {
            const NAME: &'static str = name::$name;
        })*

        /// Any event of the protocol, read from its frame; [`AnyEvent::Unknown`] keeps one a
        /// newer daemon sends.
        // A value lives only while one frame is handled, so `ready` (the whole status) is not
        // boxed to make the others smaller.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum AnyEvent {
            $($(#[$doc])* $variant($path),)*
            /// An event this client does not know (its frame as received).
            Unknown(Event),
        }

        impl AnyEvent {
            /// Reads a frame.
            ///
            /// # Errors
            /// A known event whose payload does not fit.
            pub fn read(frame: &Event) -> Result<AnyEvent, EventError> {
                $(if let Some(e) = parse::<$path>(frame) {
                    return e.map(AnyEvent::$variant);
                })*
                Ok(AnyEvent::Unknown(frame.clone()))
            }

            /// The wire frame.
            ///
            /// # Errors
            /// As [`frame`].
            pub fn frame(&self) -> Result<Event, serde_json::Error> {
                match self {
                    $(AnyEvent::$variant(e) => frame(e),)*
                    AnyEvent::Unknown(f) => Ok(f.clone()),
                }
            }

            /// The wire name.
            pub fn name(&self) -> &str {
                match self {
                    $(AnyEvent::$variant(_) => name::$name,)*
                    AnyEvent::Unknown(f) => &f.event,
                }
            }
        }

        $(impl From<$path> for AnyEvent {
            fn from(e: $path) -> AnyEvent {
                AnyEvent::$variant(e)
            }
        })*

        /// Every event type, in the order of [`crate::names::event::ALL`].
        pub const ALL: &[EventInfo] = &[
            $(EventInfo { name: name::$name, fields: crate::shape::field_names::<$path> },)*
        ];
    };
}

events! {
    /// `ready`.
    Ready(window::Ready) = READY;
    /// `state`.
    State(turns::State) = STATE;
    /// `audio_level`.
    AudioLevel(voice::AudioLevel) = AUDIO_LEVEL;
    /// `mic`.
    Mic(voice::Mic) = MIC;
    /// `busy`.
    Busy(turns::Busy) = BUSY;
    /// `partial`.
    Partial(voice::Partial) = PARTIAL;
    /// `user`.
    User(turns::User) = USER;
    /// `assistant_delta`.
    AssistantDelta(turns::AssistantDelta) = ASSISTANT_DELTA;
    /// `reasoning_delta`.
    ReasoningDelta(turns::ReasoningDelta) = REASONING_DELTA;
    /// `assistant_done`.
    AssistantDone(turns::AssistantDone) = ASSISTANT_DONE;
    /// `tool_start`.
    ToolStart(turns::ToolStart) = TOOL_START;
    /// `tool_finish`.
    ToolFinish(turns::ToolFinish) = TOOL_FINISH;
    /// `hint`.
    Hint(turns::Hint) = HINT;
    /// `error`.
    Error(turns::Error) = ERROR;
    /// `speaking`.
    Speaking(voice::Speaking) = SPEAKING;
    /// `show`.
    Show(window::Show) = SHOW;
    /// `hide`.
    Hide(window::Hide) = HIDE;
    /// `toggle`.
    Toggle(window::Toggle) = TOGGLE;
    /// `settings_requested`.
    SettingsRequested(window::SettingsRequested) = SETTINGS_REQUESTED;
    /// `attach_image`.
    AttachImage(turns::AttachImage) = ATTACH_IMAGE;
    /// `conversation_started`.
    ConversationStarted(turns::ConversationStarted) = CONVERSATION_STARTED;
    /// `permission_request`.
    PermissionRequest(permissions::PermissionRequested) = PERMISSION_REQUEST;
    /// `permission_resolved`.
    PermissionResolved(permissions::PermissionResolved) = PERMISSION_RESOLVED;
    /// `settings_changed`.
    SettingsChanged(settings::SettingsChanged) = SETTINGS_CHANGED;
    /// `plugin_settings_changed`.
    PluginSettingsChanged(settings::PluginSettingsChanged) = PLUGIN_SETTINGS_CHANGED;
    /// `asset_progress`.
    AssetProgress(settings::AssetProgress) = ASSET_PROGRESS;
    /// `shutdown`.
    Shutdown(window::Shutdown) = SHUTDOWN;
    /// `routine_started`.
    RoutineStarted(routines::RoutineStarted) = ROUTINE_STARTED;
    /// `routine_finished`.
    RoutineFinished(routines::RoutineFinished) = ROUTINE_FINISHED;
    /// `wake`.
    Wake(voice::Wake) = WAKE;
    /// `transcript`.
    Transcript(voice::Transcript) = TRANSCRIPT;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_name_has_exactly_one_type_in_name_order() {
        let typed: Vec<&str> = ALL.iter().map(|i| i.name).collect();
        assert_eq!(typed, name::ALL);
    }

    #[test]
    fn an_event_conforms_only_when_its_type_writes_it_back_unchanged() {
        let busy = |payload: Value| {
            let Value::Object(m) = payload else {
                unreachable!()
            };
            Event::new(name::BUSY, m)
        };
        assert_eq!(conforms(&busy(serde_json::json!({"active": true}))), Ok(()));
        let extra = busy(serde_json::json!({"active": true, "since": 3}));
        assert!(conforms(&extra).unwrap_err().to_string().contains("since"));
        let missing = busy(serde_json::json!({}));
        assert!(
            conforms(&missing)
                .unwrap_err()
                .to_string()
                .contains("active")
        );
        assert!(conforms(&Event::new("from_the_future", Map::new())).is_err());
    }

    #[test]
    fn an_unknown_event_is_kept_and_a_bad_payload_names_the_event() {
        let f = Event::new("from_the_future", Map::new());
        assert_eq!(AnyEvent::read(&f).unwrap(), AnyEvent::Unknown(f.clone()));
        let mut bad = Map::new();
        bad.insert("active".into(), Value::String("yes".into()));
        let e = AnyEvent::read(&Event::new(name::BUSY, bad)).unwrap_err();
        assert_eq!(e.event, "busy");
        assert!(e.to_string().contains("active"), "{e}");
    }
}
