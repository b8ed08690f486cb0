//! Typed replies: one type per command, bound to the command by its params type
//! ([`crate::Params::Reply`]), one module per area.
//!
//! The daemon's handlers build these values and the dispatcher encodes them with [`encode`],
//! the one place a reply becomes JSON; clients read a `result` with [`decode`]. A field renamed
//! here therefore fails to compile in the daemon and in every Rust client.
//!
//! Rules (pinned by the golden and round-trip tests of this crate):
//! * The wire is the original Sayri's: names, `null` versus absent, numbers versus strings.
//!   A member that is sometimes absent is `#[serde(skip_serializing_if = "Option::is_none")]`;
//!   one that is present but may be `null` is a plain `Option`; one that is absent, `null` or a
//!   value is `Option<Option<T>>` with [`double_option`].
//! * Replies never refuse unknown members (a newer daemon may add some): no
//!   `deny_unknown_fields` here.
//! * [`encode`] goes through [`serde_json::Value`], whose objects are sorted by key (as every
//!   reply was before these types existed), so the bytes do not depend on the order the
//!   fields are declared in.
//!
//! ```
//! use sayri_protocol::params::VersionParams;
//! use sayri_protocol::reply::{self, runtime::VersionReply};
//! let v = reply::encode(&VersionReply { version: "0.1.0".into(), protocol_version: 1 }).unwrap();
//! assert_eq!(v.to_string(), r#"{"protocol_version":1,"version":"0.1.0"}"#);
//! let back: VersionReply = reply::decode::<VersionParams>(v).unwrap();
//! assert_eq!(back.protocol_version, 1);
//! ```

pub mod agents;
pub mod config;
pub mod database;
pub mod desktop;
pub mod gateways;
pub mod mcp;
pub mod memory;
pub mod permissions;
pub mod routines;
pub mod runtime;
pub mod sessions;
pub mod skills;
pub mod vault;
pub mod voice;

use crate::Params;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;

/// The reply of a command that never succeeds (`plugin_set_enabled`): no value exists, so a
/// handler can only answer an error, and reading one always fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Never {}

impl Serialize for Never {
    fn serialize<S: Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
        match *self {}
    }
}

impl<'de> Deserialize<'de> for Never {
    fn deserialize<D: Deserializer<'de>>(_d: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "this command never answers a result",
        ))
    }
}

/// A `result` that is not the reply this client knows for its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError {
    /// The command.
    pub cmd: &'static str,
    /// Where and what: `` `messages[0].role`: invalid type … ``.
    pub detail: String,
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the daemon's reply to {} is not what this client understands ({}); the daemon and this client are probably different versions of Sayri — update both",
            self.cmd, self.detail
        )
    }
}

impl std::error::Error for ReplyError {}

/// A reply as the JSON `result` the daemon sends.
///
/// # Errors
/// Only when a member cannot be represented in JSON (a map with non-string keys, a path that
/// is not UTF-8).
pub fn encode<R: Serialize>(reply: &R) -> Result<Value, serde_json::Error> {
    serde_json::to_value(reply)
}

/// Reads the `result` of command `P`.
///
/// # Errors
/// [`ReplyError`] naming the member that does not fit.
pub fn decode<P: Params>(result: Value) -> Result<P::Reply, ReplyError> {
    serde_path_to_error::deserialize(result).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        ReplyError {
            cmd: P::CMD,
            detail: if path == "." {
                inner.to_string()
            } else {
                format!("`{path}`: {inner}")
            },
        }
    })
}

/// Why a frame off the wire is not exactly its declared type: what [`conforms`] and
/// [`crate::event::conforms`] report to the tests that hold the daemon to its types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Nonconforming {
    /// An event name the protocol does not have.
    #[error("{0} is not an event of the protocol")]
    UnknownEvent(String),
    /// The event's payload does not read into its type.
    #[error(transparent)]
    Event(#[from] crate::event::EventError),
    /// The reply does not read into its type.
    #[error(transparent)]
    Reply(#[from] ReplyError),
    /// The typed value cannot be written as JSON again (serde_json's message).
    #[error("{0}")]
    Encode(String),
    /// The reply reads into its type but is written back differently.
    #[error("the reply to {cmd} is not its reply type:\n  sent  {sent}\n  typed {typed}")]
    ReplyDiffers {
        /// The command.
        cmd: String,
        /// The reply as sent.
        sent: String,
        /// The reply as its type writes it.
        typed: String,
    },
    /// The event reads into its type but is written back differently.
    #[error("the {event} event is not its event type:\n  sent  {sent}\n  typed {typed}")]
    EventDiffers {
        /// The event name.
        event: String,
        /// The frame as sent.
        sent: String,
        /// The frame as its type writes it.
        typed: String,
    },
}

impl From<serde_json::Error> for Nonconforming {
    fn from(e: serde_json::Error) -> Self {
        Nonconforming::Encode(e.to_string())
    }
}

/// Whether `result`, a successful reply to `cmd` as it came off the wire, is exactly `cmd`'s
/// reply type: read into the type and written again it gives the same JSON text (no member
/// the type lacks, none it would add, the same `null`s and numbers). A command without a
/// params type is not checked.
///
/// Tests hold the daemon to its declared reply types with it; they must parse the wire with
/// serde_json's `float_roundtrip` feature, or a float may read one unit off and not compare.
///
/// # Errors
/// [`Nonconforming`]: what does not fit, or both texts when they differ.
pub fn conforms(cmd: &str, result: &Value) -> Result<(), Nonconforming> {
    let Some(info) = crate::params::info(cmd) else {
        return Ok(());
    };
    let again = (info.reply_round_trip)(result.clone())?;
    let (sent, typed) = (result.to_string(), again.to_string());
    if sent == typed {
        Ok(())
    } else {
        Err(Nonconforming::ReplyDiffers {
            cmd: cmd.to_string(),
            sent,
            typed,
        })
    }
}

/// `#[serde(with = "double_option")]` for an `Option<Option<T>>` member: absent = `None`,
/// `null` = `Some(None)`, a value = `Some(Some(v))`. Use it with `default` and
/// `skip_serializing_if = "Option::is_none"`.
pub mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes the inner option (`null` or the value); `None` is skipped by the field's
    /// `skip_serializing_if`.
    pub fn serialize<T: Serialize, S: Serializer>(
        v: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    /// A present member: `null` → `Some(None)`.
    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{PingParams, PluginSetEnabledParams};
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Three {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            with = "double_option"
        )]
        x: Option<Option<u8>>,
    }

    #[test]
    fn a_double_option_keeps_absent_null_and_value_apart() {
        for (wire, value) in [
            (json!({}), None),
            (json!({"x": null}), Some(None)),
            (json!({"x": 3}), Some(Some(3))),
        ] {
            let t: Three = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(t.x, value);
            assert_eq!(encode(&t).unwrap(), wire);
        }
    }

    #[test]
    fn a_reply_conforms_only_when_its_type_writes_it_back_unchanged() {
        let v = json!({"protocol_version": 1, "version": "0.1.0"});
        assert_eq!(conforms("version", &v), Ok(()));
        let extra = json!({"protocol_version": 1, "version": "0.1.0", "build": "x"});
        assert!(
            conforms("version", &extra)
                .unwrap_err()
                .to_string()
                .contains("build")
        );
        let float = json!({"protocol_version": 1.0, "version": "0.1.0"});
        assert!(conforms("version", &float).is_err());
        let renamed = json!({"protocol": 1, "version": "0.1.0"});
        assert!(
            conforms("version", &renamed)
                .unwrap_err()
                .to_string()
                .contains("protocol_version")
        );
        assert_eq!(conforms("no_such_command", &json!(1)), Ok(()));
    }

    #[test]
    fn a_reply_that_does_not_fit_names_the_command_and_the_member() {
        assert_eq!(decode::<PingParams>(json!("pong")).unwrap(), "pong");
        let e = decode::<PingParams>(json!(3)).unwrap_err();
        assert_eq!(e.cmd, "ping");
        assert!(e.to_string().contains("ping") && e.to_string().contains("update"));
        let e = decode::<crate::params::VersionParams>(json!({"version": 1})).unwrap_err();
        assert!(e.detail.contains("version"), "{e}");
        assert!(decode::<PluginSetEnabledParams>(json!({})).is_err());
    }
}
