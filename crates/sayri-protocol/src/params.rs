//! Typed parameters: one struct per implemented command, bound to its wire name by [`Params`].
//!
//! The daemon turns a request's `params` object into the command's struct once, with [`parse`],
//! before the handler runs; a handler never picks fields out of JSON by hand. Clients build their
//! requests from the same structs ([`to_map`]), so both sides agree on names and types.
//!
//! Rules (pinned by the tests at the end of this file and by `protocol_doc.rs`):
//! * A command that takes parameters refuses unknown ones (`deny_unknown_fields`). A mistyped
//!   optional parameter would otherwise be ignored and change what the command does:
//!   `permission_forget {"acton": "shell"}` would forget every approval, and
//!   `permission_answer {"alow": true}` would deny.
//! * A command without parameters ignores whatever it is sent (`ping {"note": …}` answers
//!   `"pong"`): original clients send such extras, and there is nothing to mistype.
//! * Names that original clients send are fields of their own: `target_agent_id` on `ask` and
//!   `talk`, `group` on `config_get` and `config_set`.
//! * A missing parameter, a wrong type or an unknown name is `invalid_params`, and the message
//!   names the parameter: ``invalid params for ask: `timeout`: invalid type: string "x", expected
//!   f64``.
//! * `null` for an optional parameter means "not given".
//!
//! ```
//! use sayri_protocol::params::{self, AskParams};
//! let map = serde_json::json!({"text": " hi ", "timeout": 5}).as_object().unwrap().clone();
//! let p: AskParams = params::parse(map).unwrap();
//! assert_eq!((p.text.as_str(), p.timeout), ("hi", Some(5.0)));
//! let bad = serde_json::json!({"text": "hi", "timout": 5}).as_object().unwrap().clone();
//! let e = params::parse::<AskParams>(bad).unwrap_err();
//! assert!(e.message.contains("timout"));
//! ```
//!
//! Adding a command's params: write the struct here (copy one of the same shape), implement
//! [`Params`] for it (or list it in `no_params!` when it takes none), and add it to [`ALL`].

use crate::message::ProtocolError;
use crate::names::cmd;
use crate::reply::{self, Nonconforming};
use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The parameters of one command: the type its handler receives, bound to its wire name and
/// to the type of its reply.
pub trait Params: Serialize + DeserializeOwned + Send + 'static {
    /// The command's wire name, one of [`crate::names::cmd::ALL`].
    const CMD: &'static str;
    /// What the command answers (its `result`), from [`crate::reply`]: the daemon's handler
    /// returns it, a client reads it with [`crate::reply::decode`].
    type Reply: Serialize + DeserializeOwned + Send + 'static;
}

/// Parses a request's `params` object into `P`.
///
/// # Errors
/// `invalid_params` naming the command and the parameter: a missing required one, a wrong
/// type, an invalid value (such as a blank `text`), or an unknown name for a command that takes
/// parameters.
pub fn parse<P: Params>(params: Map<String, Value>) -> Result<P, ProtocolError> {
    serde_path_to_error::deserialize(Value::Object(params)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let what = if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        };
        ProtocolError::invalid_params(format!(
            "invalid params for {}: {what} (PROTOCOL.md lists each command's params)",
            P::CMD
        ))
    })
}

/// The params of `p` as a request's `params` object (what a client sends).
///
/// # Errors
/// Only if `P`'s `Serialize` fails or does not produce an object (never for this module's types).
pub fn to_map<P: Params>(p: &P) -> Result<Map<String, Value>, serde_json::Error> {
    match serde_json::to_value(p)? {
        Value::Object(m) => Ok(m),
        other => Err(serde::ser::Error::custom(format!(
            "params of {} must serialise to an object, not {other}",
            P::CMD
        ))),
    }
}

/// The parameter names of `P`, as its `Deserialize` implementation knows them (in declaration
/// order). Empty for a command without parameters.
pub fn field_names<P: Params>() -> &'static [&'static str] {
    crate::shape::field_names::<P>()
}

/// The member names of `P`'s reply (of its items for a list; see [`crate::shape`]).
pub fn reply_field_names<P: Params>() -> &'static [&'static str] {
    crate::shape::field_names::<P::Reply>()
}

/// Reads `result` as `P`'s reply and writes it again (what the golden tests compare).
///
/// # Errors
/// [`Nonconforming`]: the reply does not fit `P::Reply`.
pub fn reply_round_trip<P: Params>(result: Value) -> Result<Value, Nonconforming> {
    let reply = crate::reply::decode::<P>(result)?;
    Ok(crate::reply::encode(&reply)?)
}

/// Whether `P` refuses a parameter it does not know (see the module rules).
pub fn refuses_unknown<P: Params>() -> bool {
    let mut probe = Map::new();
    probe.insert("__not_a_parameter__".into(), Value::Null);
    match parse::<P>(probe) {
        Ok(_) => false,
        Err(e) => e.message.contains("__not_a_parameter__"),
    }
}

/// What is known of one command's params without naming its type (for checks and docs).
#[derive(Debug, Clone, Copy)]
pub struct ParamsInfo {
    /// The command's wire name.
    pub cmd: &'static str,
    /// Its parameter names ([`field_names`]).
    pub fields: fn() -> &'static [&'static str],
    /// Whether it refuses unknown parameters ([`refuses_unknown`]).
    pub refuses_unknown: fn() -> bool,
    /// Its reply's member names ([`reply_field_names`]).
    pub reply_fields: fn() -> &'static [&'static str],
    /// Reads and writes a reply again ([`reply_round_trip`]).
    pub reply_round_trip: fn(Value) -> Result<Value, Nonconforming>,
}

impl ParamsInfo {
    /// The entry for `P`.
    pub const fn of<P: Params>() -> ParamsInfo {
        ParamsInfo {
            cmd: P::CMD,
            fields: field_names::<P>,
            refuses_unknown: refuses_unknown::<P>,
            reply_fields: reply_field_names::<P>,
            reply_round_trip: reply_round_trip::<P>,
        }
    }
}

/// The params entry of `cmd`, if it has typed params.
pub fn info(cmd: &str) -> Option<&'static ParamsInfo> {
    ALL.iter().find(|i| i.cmd == cmd)
}

/// Every params type of this module, one per implemented command.
pub const ALL: &[ParamsInfo] = &[
    ParamsInfo::of::<PingParams>(),
    ParamsInfo::of::<VersionParams>(),
    ParamsInfo::of::<StatusParams>(),
    ParamsInfo::of::<QuitParams>(),
    ParamsInfo::of::<TalkParams>(),
    ParamsInfo::of::<AskParams>(),
    ParamsInfo::of::<InterruptParams>(),
    ParamsInfo::of::<NewConversationParams>(),
    ParamsInfo::of::<SwitchSessionParams>(),
    ParamsInfo::of::<PermissionListParams>(),
    ParamsInfo::of::<PermissionAnswerParams>(),
    ParamsInfo::of::<PermissionForgetParams>(),
    ParamsInfo::of::<ConfigGetParams>(),
    ParamsInfo::of::<ConfigSetParams>(),
    ParamsInfo::of::<ConfigListParams>(),
    ParamsInfo::of::<AgentsListParams>(),
    ParamsInfo::of::<AgentSwitchParams>(),
    ParamsInfo::of::<AgentSaveParams>(),
    ParamsInfo::of::<AgentDeleteParams>(),
    ParamsInfo::of::<AgentDetachParams>(),
    ParamsInfo::of::<SessionsListParams>(),
    ParamsInfo::of::<SessionGetParams>(),
    ParamsInfo::of::<SessionRenameParams>(),
    ParamsInfo::of::<SessionDeleteParams>(),
    ParamsInfo::of::<VaultListParams>(),
    ParamsInfo::of::<VaultSetParams>(),
    ParamsInfo::of::<VaultDeleteParams>(),
    ParamsInfo::of::<DbRecoverParams>(),
    // Gateways
    ParamsInfo::of::<GatewayListParams>(),
    ParamsInfo::of::<GatewaySaveParams>(),
    ParamsInfo::of::<GatewayStartParams>(),
    ParamsInfo::of::<GatewayStopParams>(),
    ParamsInfo::of::<GatewayDeleteParams>(),
    ParamsInfo::of::<GatewayPinParams>(),
    ParamsInfo::of::<GatewayPeersParams>(),
    ParamsInfo::of::<GatewayPeerAddParams>(),
    ParamsInfo::of::<GatewayPeerRemoveParams>(),
    // MCP servers
    ParamsInfo::of::<McpListParams>(),
    ParamsInfo::of::<McpShowParams>(),
    ParamsInfo::of::<McpAddParams>(),
    ParamsInfo::of::<McpRemoveParams>(),
    ParamsInfo::of::<McpEnableParams>(),
    ParamsInfo::of::<McpDisableParams>(),
    ParamsInfo::of::<McpTestParams>(),
    ParamsInfo::of::<McpApproveParams>(),
    ParamsInfo::of::<RunCommandParams>(),
    // Long-term memory
    ParamsInfo::of::<MemoryAddParams>(),
    ParamsInfo::of::<MemoryListParams>(),
    ParamsInfo::of::<MemoryGetParams>(),
    ParamsInfo::of::<MemoryEditParams>(),
    ParamsInfo::of::<MemoryForgetParams>(),
    ParamsInfo::of::<MemorySearchParams>(),
    ParamsInfo::of::<MemoryExportParams>(),
    ParamsInfo::of::<MemoryImportParams>(),
    ParamsInfo::of::<MemoryReviewParams>(),
    ParamsInfo::of::<MemoryAcceptParams>(),
    ParamsInfo::of::<MemoryRejectParams>(),
    // Connection
    ParamsInfo::of::<ClientHelloParams>(),
    // Routines and triggers
    ParamsInfo::of::<RoutinesListParams>(),
    ParamsInfo::of::<RoutinesRunParams>(),
    ParamsInfo::of::<RoutineSaveParams>(),
    ParamsInfo::of::<RoutineDeleteParams>(),
    ParamsInfo::of::<RoutineSetEnabledParams>(),
    ParamsInfo::of::<RoutineNextParams>(),
    ParamsInfo::of::<TriggersListParams>(),
    ParamsInfo::of::<TriggerSaveParams>(),
    ParamsInfo::of::<TriggerDeleteParams>(),
    // Settings forms and front-end helpers
    ParamsInfo::of::<SettingsSchemaParams>(),
    ParamsInfo::of::<SettingsSaveParams>(),
    ParamsInfo::of::<ClipboardCopyParams>(),
    ParamsInfo::of::<KillallParams>(),
    ParamsInfo::of::<WindowParams>(),
    ParamsInfo::of::<AttachImageParams>(),
    ParamsInfo::of::<PluginSettingsSetParams>(),
    ParamsInfo::of::<AssetDownloadParams>(),
    // Skills
    ParamsInfo::of::<SkillsListParams>(),
    ParamsInfo::of::<SkillsInstallParams>(),
    ParamsInfo::of::<SkillsUninstallParams>(),
    ParamsInfo::of::<SkillsScanParams>(),
    ParamsInfo::of::<SkillsSearchParams>(),
    ParamsInfo::of::<PluginsListParams>(),
    ParamsInfo::of::<PluginSetEnabledParams>(),
    ParamsInfo::of::<UiListParams>(),
    ParamsInfo::of::<UiStartParams>(),
    ParamsInfo::of::<UiStopParams>(),
    ParamsInfo::of::<UiStatusParams>(),
    // Voice
    ParamsInfo::of::<ListenParams>(),
    ParamsInfo::of::<StopListeningParams>(),
    ParamsInfo::of::<ToggleListeningParams>(),
];

// ---------------------------------------------------------------------------------------------
// Commands without parameters

macro_rules! no_params {
    ($($(#[$doc:meta])* $name:ident = $cmd:path => $reply:ty;)*) => {$(
        $(#[$doc])*
        ///
        /// Takes no parameters; any it is sent are ignored.
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct $name {}

        impl Params for $name {
            const CMD: &'static str = $cmd;
            type Reply = $reply;
        }
    )*};
}

no_params! {
    /// `skills_list` → `[{slug, name, description, state, verdict, score, source, path}]`.
    SkillsListParams = cmd::SKILLS_LIST => reply::skills::SkillsListReply;
    /// `plugins_list` → every plugin (gateway programs and UIs).
    PluginsListParams = cmd::PLUGINS_LIST => reply::desktop::PluginsListReply;
    /// `ui_list` → every UI with whether it runs.
    UiListParams = cmd::UI_LIST => reply::desktop::UiListReply;
    /// `ping` → `"pong"`.
    PingParams = cmd::PING => reply::runtime::PingReply;
    /// `version` → `{"version", "protocol_version"}`.
    VersionParams = cmd::VERSION => reply::runtime::VersionReply;
    /// `status` → the status object.
    StatusParams = cmd::STATUS => reply::runtime::StatusReply;
    /// `quit` → `{"ok": true}`, then the daemon stops.
    QuitParams = cmd::QUIT => reply::runtime::QuitReply;
    /// `interrupt` → `{"interrupted"}`.
    InterruptParams = cmd::INTERRUPT => reply::sessions::InterruptReply;
    /// `new_conversation` → `{"session_id"}`.
    NewConversationParams = cmd::NEW_CONVERSATION => reply::sessions::NewConversationReply;
    /// `permission_list` → `{"pending", "approvals"}`.
    PermissionListParams = cmd::PERMISSION_LIST => reply::permissions::PermissionListReply;
    /// `config_list` → every setting.
    ConfigListParams = cmd::CONFIG_LIST => reply::config::ConfigListReply;
    /// `agents_list` → every agent.
    AgentsListParams = cmd::AGENTS_LIST => reply::agents::AgentsListReply;
    /// `vault_list` → every secret, masked.
    VaultListParams = cmd::VAULT_LIST => reply::vault::VaultListReply;
    /// `routines_list` → every routine.
    RoutinesListParams = cmd::ROUTINES_LIST => reply::routines::RoutinesListReply;
    /// `triggers_list` → every trigger file, invalid ones with their error.
    TriggersListParams = cmd::TRIGGERS_LIST => reply::routines::TriggersListReply;
    /// `settings_schema` → `{"sections", "plugin_sections"}`.
    SettingsSchemaParams = cmd::SETTINGS_SCHEMA => reply::config::SettingsSchemaReply;
    /// `mcp_list` → every MCP server the user added.
    McpListParams = cmd::MCP_LIST => reply::mcp::McpListReply;
    /// `memory_export` → `{count, lines}`: every fact of long-term memory as JSON lines.
    MemoryExportParams = cmd::MEMORY_EXPORT => reply::memory::MemoryExportReply;
    /// `memory_review` → `{ttl_days, conflicts, stale, proposed}`: facts that contradict an
    /// older one, facts not recalled within `memory.ttl_days`, and facts proposed where nobody
    /// could be asked.
    MemoryReviewParams = cmd::MEMORY_REVIEW => reply::memory::MemoryReviewReply;
    /// `gateway_list` → every gateway instance with its process state.
    GatewayListParams = cmd::GATEWAY_LIST => reply::gateways::GatewayListReply;
    /// `stop_listening` → `{"stopped": true}`: the microphone closes, a spoken query in
    /// flight and its speech stop.
    StopListeningParams = cmd::STOP_LISTENING => reply::voice::StopListeningReply;
    /// `toggle_listening` → `{"state"}`: stops listening when the microphone is on or a
    /// spoken query runs, otherwise starts listening for one query.
    ToggleListeningParams = cmd::TOGGLE_LISTENING => reply::voice::ToggleListeningReply;
}

// ---------------------------------------------------------------------------------------------
// Runtime

/// Which agent and session a turn runs in (the common part of [`TalkParams`] and [`AskParams`]).
///
/// The two structs repeat these fields instead of sharing them with `#[serde(flatten)]`:
/// serde cannot refuse unknown fields through a flattened struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnTarget<'a> {
    /// Switch to this agent first (`agent_id`, else `target_agent_id`; empty = the active one).
    pub agent_id: Option<&'a str>,
    /// Continue this session (empty = the active one).
    pub session_id: Option<&'a str>,
    /// Start a new conversation first.
    pub new: bool,
}

fn turn_target<'a>(
    agent_id: &'a Option<String>,
    target_agent_id: &'a Option<String>,
    session_id: &'a Option<String>,
    new: bool,
) -> TurnTarget<'a> {
    let given = |s: &'a Option<String>| s.as_deref().filter(|s| !s.is_empty());
    TurnTarget {
        agent_id: given(agent_id).or(given(target_agent_id)),
        session_id: given(session_id),
        new,
    }
}

/// `talk {text, agent_id?, target_agent_id?, session_id?, new?}` → `{"sent", "text",
/// "session_id"}`; the turn runs in the background.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TalkParams {
    /// What the user says (trimmed; blank is refused).
    #[serde(deserialize_with = "non_blank")]
    pub text: String,
    /// Switch to this agent first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The original CLI's name for `agent_id` (used when `agent_id` is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_agent_id: Option<String>,
    /// Continue this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Start a new conversation first.
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "bool_or_null"
    )]
    pub new: bool,
}

impl TalkParams {
    /// The agent and session to run in.
    pub fn target(&self) -> TurnTarget<'_> {
        turn_target(
            &self.agent_id,
            &self.target_agent_id,
            &self.session_id,
            self.new,
        )
    }
}

impl Params for TalkParams {
    const CMD: &'static str = cmd::TALK;
    type Reply = reply::sessions::TalkReply;
}

/// `ask {text, timeout=120, agent_id?, target_agent_id?, session_id?, new?}` → `{"text",
/// "error", "session_id"}` when the turn ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskParams {
    /// The question (trimmed; blank is refused).
    #[serde(deserialize_with = "non_blank")]
    pub text: String,
    /// Seconds to wait for the answer (absent, zero, negative or not finite = 120); on timeout
    /// the turn is interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Switch to this agent first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The original CLI's name for `agent_id` (used when `agent_id` is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_agent_id: Option<String>,
    /// Continue this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Start a new conversation first.
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "bool_or_null"
    )]
    pub new: bool,
}

impl AskParams {
    /// Default seconds to wait for an answer.
    pub const DEFAULT_TIMEOUT: f64 = 120.0;

    /// The agent and session to run in.
    pub fn target(&self) -> TurnTarget<'_> {
        turn_target(
            &self.agent_id,
            &self.target_agent_id,
            &self.session_id,
            self.new,
        )
    }

    /// The timeout in seconds: `timeout` when positive and finite, else
    /// [`AskParams::DEFAULT_TIMEOUT`].
    pub fn timeout_secs(&self) -> f64 {
        self.timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(Self::DEFAULT_TIMEOUT)
    }
}

impl Params for AskParams {
    const CMD: &'static str = cmd::ASK;
    type Reply = reply::sessions::AskReply;
}

/// `listen {timeout=60}` → `{"text"}`: captures one utterance and returns its transcript
/// (`""` when nothing was said before the timeout); no query is sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenParams {
    /// Seconds to wait for the utterance (absent, zero, negative or not finite = 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

impl ListenParams {
    /// Default seconds to wait for an utterance.
    pub const DEFAULT_TIMEOUT: f64 = 60.0;

    /// The timeout in seconds: `timeout` when positive and finite, else
    /// [`ListenParams::DEFAULT_TIMEOUT`].
    pub fn timeout_secs(&self) -> f64 {
        self.timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(Self::DEFAULT_TIMEOUT)
    }
}

impl Params for ListenParams {
    const CMD: &'static str = cmd::LISTEN;
    type Reply = reply::voice::ListenReply;
}

/// `switch_session {session_id}` → `{"session_id"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSessionParams {
    /// The session to make active (must exist).
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
}

impl Params for SwitchSessionParams {
    const CMD: &'static str = cmd::SWITCH_SESSION;
    type Reply = reply::sessions::SwitchSessionReply;
}

// ---------------------------------------------------------------------------------------------
// Permissions

/// `permission_answer {request_id, allow=false, remember=false}` → `{"delivered", "request_id",
/// "allow"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionAnswerParams {
    /// The open question's id (12 hex characters).
    #[serde(deserialize_with = "non_empty")]
    pub request_id: String,
    /// Run the command (`false` = deny).
    #[serde(default, deserialize_with = "bool_or_null")]
    pub allow: bool,
    /// With `allow`: remember the approval for this agent ("Allow always").
    #[serde(default, deserialize_with = "bool_or_null")]
    pub remember: bool,
}

impl Params for PermissionAnswerParams {
    const CMD: &'static str = cmd::PERMISSION_ANSWER;
    type Reply = reply::permissions::PermissionAnswerReply;
}

/// `permission_forget {action?, agent_id=""}` → `{"removed"}`. Without an action (absent or
/// empty) every approval is forgotten; with one, that action's approvals of `agent_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionForgetParams {
    /// Only approvals of this action (`shell`, `read`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Whose approvals of `action` are removed.
    #[serde(default, deserialize_with = "string_or_null")]
    pub agent_id: String,
}

impl PermissionForgetParams {
    /// The action, `None` when absent or empty (= every approval).
    pub fn action(&self) -> Option<&str> {
        self.action.as_deref().filter(|a| !a.is_empty())
    }
}

impl Params for PermissionForgetParams {
    const CMD: &'static str = cmd::PERMISSION_FORGET;
    type Reply = reply::permissions::PermissionForgetReply;
}

// ---------------------------------------------------------------------------------------------
// Connection

/// An access class as written on the wire: `"read-only"`, `"assistant"`, `"management"`
/// (lowest to highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AccessClass {
    /// Looks at state, changes nothing.
    ReadOnly,
    /// Runs or steers the assistant's turns and conversations.
    Assistant,
    /// Changes what Sayri may do, deletes the user's data, or stops the daemon.
    Management,
}

/// `client_hello {access, allow=[]}` → `{"access", "allow"}`: from now on this connection may
/// only use commands of class `access` or lower, plus the commands named in `allow`. A later
/// `client_hello` narrows further (a command must pass every limit the connection set); nothing
/// widens a connection again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientHelloParams {
    /// The highest access class the connection keeps.
    pub access: AccessClass,
    /// Commands of a higher class that it keeps anyway (each must be a command name of the
    /// protocol), e.g. `["permission_answer"]`.
    #[serde(default, deserialize_with = "list_or_null")]
    pub allow: Vec<String>,
}

impl Params for ClientHelloParams {
    const CMD: &'static str = cmd::CLIENT_HELLO;
    type Reply = reply::runtime::ClientHelloReply;
}

fn list_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let names = Option::<Vec<String>>::deserialize(d)?.unwrap_or_default();
    if let Some(bad) = names.iter().find(|n| !cmd::ALL.contains(&n.as_str())) {
        return Err(de::Error::custom(format!(
            "unknown command {bad:?} (only command names of the protocol can be allowed)"
        )));
    }
    Ok(names)
}

// ---------------------------------------------------------------------------------------------
// Configuration

/// Joins `group` and `key` into `"group.key"` (a `key` that already has a dot wins).
fn setting_name(group: &Option<String>, key: &str) -> String {
    match group.as_deref() {
        Some(g) if !g.is_empty() && !key.contains('.') => format!("{g}.{key}"),
        _ => key.to_string(),
    }
}

/// `config_get {key, group?}` → `{"group", "key", "value"}` (masked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigGetParams {
    /// `"group.key"`, or the key within `group`.
    #[serde(deserialize_with = "non_empty")]
    pub key: String,
    /// The group when `key` has no dot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl ConfigGetParams {
    /// The setting as `"group.key"`.
    pub fn setting(&self) -> String {
        setting_name(&self.group, &self.key)
    }
}

impl Params for ConfigGetParams {
    const CMD: &'static str = cmd::CONFIG_GET;
    type Reply = reply::config::ConfigGetReply;
}

/// `config_set {key, group?, value}` → `{"group", "key", "value"}` (stored, unmasked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSetParams {
    /// `"group.key"`, or the key within `group`.
    #[serde(deserialize_with = "non_empty")]
    pub key: String,
    /// The group when `key` has no dot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The new value, of the setting's JSON type (a boolean, an integer, a number, a string or a
    /// list of strings; nothing is coerced), passing the setting's check.
    pub value: Value,
}

impl ConfigSetParams {
    /// The setting as `"group.key"`.
    pub fn setting(&self) -> String {
        setting_name(&self.group, &self.key)
    }
}

impl Params for ConfigSetParams {
    const CMD: &'static str = cmd::CONFIG_SET;
    type Reply = reply::config::ConfigSetReply;
}

// ---------------------------------------------------------------------------------------------
// Agents and sessions

/// `agent_switch {agent_id}` → `{"agent_id", "name"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSwitchParams {
    /// The agent to make active.
    #[serde(deserialize_with = "non_empty")]
    pub agent_id: String,
}

impl Params for AgentSwitchParams {
    const CMD: &'static str = cmd::AGENT_SWITCH;
    type Reply = reply::agents::AgentSwitchReply;
}

/// How `agent_save` treats an existing id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SaveMode {
    /// Only a new agent: an existing id is an error (nothing is replaced).
    Create,
    /// Only an existing agent: an unknown id is an error.
    Update,
}

/// One permission rule as `agent_save` takes it: `{"action", "resource", "effect"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleParam {
    /// `shell | read | write | web | skill | subagent | *`.
    pub action: String,
    /// Whole-value wildcard pattern (default `*`).
    #[serde(default = "star")]
    pub resource: String,
    /// `allow | ask | deny`.
    pub effect: String,
}

fn star() -> String {
    "*".into()
}

/// `agent_save {id?, name?, …}` → `{"id", "name", "created", "parent", "effective",
/// "narrowed"}`. Creates or updates an agent profile. **Omitted fields keep their stored
/// value** (or the default for a new agent); `null` counts as omitted. Lists take a JSON array
/// or a comma-separated string. Without `id` the id is made from `name`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSaveParams {
    /// Agent id (letters, digits, `-`, `_`); default: from `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One-line description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent's own system prompt text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Extra instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
    /// Skills it may use (`[]` = all, `["none"]` = none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub allowed_skills: Option<Vec<String>>,
    /// Plugins it may use (`[]` = all, `["none"]` = none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub allowed_plugins: Option<Vec<String>>,
    /// Tools it may use (`[]` = all, `["none"]` = none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub allowed_tools: Option<Vec<String>>,
    /// Vault secrets its commands receive as environment variables.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub allowed_secrets: Option<Vec<String>>,
    /// Up to 10 model calls per turn instead of 6.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub investigation_loop: Option<bool>,
    /// Record learned preferences.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub reinforcement_learning: Option<bool>,
    /// Isolation level (`LEVEL_3_HOST_USER`, `3`, `host`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_level: Option<String>,
    /// Whether its `ask` rules show a card (bool, or `"1"/"true"/"yes"/"on"`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub ask_before_run: Option<bool>,
    /// Network at levels 1–2.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub allow_network: Option<bool>,
    /// What a command no rule matches gets: `allow`, `read_only`, `ask` or `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_effect: Option<String>,
    /// Per-command timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// Programs denied outright.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub blocked_binaries: Option<Vec<String>>,
    /// Its own permission rules, in order (last match wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_rules: Option<Vec<RuleParam>>,
    /// Model name (`"default"` = the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Sampling temperature (0–2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Completion cap (0 = the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Its own model endpoint (`""` = the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Vault secret holding that endpoint's API key (`""` = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_secret: Option<String>,
    /// Its creator, for a new agent or one without a creator (the creator of an agent that has
    /// one cannot be changed here: detach it first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `create` (never replace) or `update` (must exist); absent = either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SaveMode>,
}

impl Params for AgentSaveParams {
    const CMD: &'static str = cmd::AGENT_SAVE;
    type Reply = reply::agents::AgentSaveReply;
}

/// `agent_delete {agent_id}` → `{"agent_id", "deleted"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDeleteParams {
    /// The agent to delete (not `default`, not one with sub-agents).
    #[serde(deserialize_with = "non_empty")]
    pub agent_id: String,
}

impl Params for AgentDeleteParams {
    const CMD: &'static str = cmd::AGENT_DELETE;
    type Reply = reply::agents::AgentDeleteReply;
}

/// Where `skills_install` takes a skill from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    /// A skill folder or a `.zip`/`.tar.gz`/`.tgz` archive on this machine (absolute path).
    Path(String),
    /// A skill of the registry set in `skills.registry_url`, by its slug (`weather-brief`,
    /// `@owner/weather-brief`).
    Slug(String),
}

/// `skills_install {path | slug, install_as?, confirm?}` → `{slug, installed, replaced, verdict,
/// score, explanation, findings, message, sha256?, download_url?}`. Exactly one of `path` and
/// `slug` is given; both or neither is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SkillsInstallWire", into = "SkillsInstallWire")]
pub struct SkillsInstallParams {
    /// The folder, archive or registry slug.
    pub source: SkillSource,
    /// Folder name to install as (letters, digits, `-`, `_`); default: from the frontmatter for
    /// a path, the sanitised slug for a slug.
    pub install_as: Option<String>,
    /// Accept a `WARN` verdict (a `BLOCK` is never accepted).
    pub confirm: bool,
}

/// [`SkillsInstallParams`] as the wire has them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsInstallWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slug: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    install_as: Option<String>,
    #[serde(default)]
    confirm: bool,
}

impl TryFrom<SkillsInstallWire> for SkillsInstallParams {
    type Error = String;

    fn try_from(w: SkillsInstallWire) -> Result<Self, String> {
        let source = match (w.path, w.slug) {
            (Some(p), None) if !p.trim().is_empty() => SkillSource::Path(p),
            (None, Some(s)) if !s.trim().is_empty() => SkillSource::Slug(s),
            (Some(_), None) => return Err("`path` is empty: give a skill folder or archive".into()),
            (None, Some(_)) => return Err("`slug` is empty: give a registry skill's slug".into()),
            (path, _) => {
                let what = if path.is_some() { "both" } else { "neither" };
                return Err(format!(
                    "{what} of `path` and `slug` given: give exactly one — `path`, a skill folder or archive on this machine, or `slug`, a skill of the registry set in skills.registry_url (to choose the folder name, use `install_as`)"
                ));
            }
        };
        Ok(SkillsInstallParams {
            source,
            install_as: w.install_as,
            confirm: w.confirm,
        })
    }
}

impl From<SkillsInstallParams> for SkillsInstallWire {
    fn from(p: SkillsInstallParams) -> Self {
        let (path, slug) = match p.source {
            SkillSource::Path(x) => (Some(x), None),
            SkillSource::Slug(x) => (None, Some(x)),
        };
        SkillsInstallWire {
            path,
            slug,
            install_as: p.install_as,
            confirm: p.confirm,
        }
    }
}

impl Params for SkillsInstallParams {
    const CMD: &'static str = cmd::SKILLS_INSTALL;
    type Reply = reply::skills::SkillsInstallReply;
}

/// `skills_uninstall {slug}` → `{slug, removed}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsUninstallParams {
    /// An installed skill's folder name (never a path).
    #[serde(deserialize_with = "non_empty")]
    pub slug: String,
}

impl Params for SkillsUninstallParams {
    const CMD: &'static str = cmd::SKILLS_UNINSTALL;
    type Reply = reply::skills::SkillsUninstallReply;
}

/// `skills_search {query, detailed?}` → `[{slug, name, description, state, installed, source,
/// …}]`: the installed skills, then the configured registry's, whose text contains every word
/// of `query`; with `detailed`, `{results, warnings}` (why the registry was not searched).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsSearchParams {
    /// Words to look for (case-insensitive; blank is refused).
    #[serde(deserialize_with = "non_blank")]
    pub query: String,
    /// Answer `{results, warnings}` instead of the bare list, so a registry that could not be
    /// asked is said (the list alone is the original's shape).
    #[serde(default, skip_serializing_if = "is_false")]
    pub detailed: bool,
}

impl Params for SkillsSearchParams {
    const CMD: &'static str = cmd::SKILLS_SEARCH;
    type Reply = reply::skills::SkillsSearchReply;
}

/// `plugin_set_enabled {plugin_id, enabled=true}` → `{plugin_id, enabled, ok, message}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSetEnabledParams {
    /// The plugin (an id of `plugins_list`).
    #[serde(deserialize_with = "non_empty")]
    pub plugin_id: String,
    /// Whether its background service should run.
    #[serde(default = "yes", deserialize_with = "bool_or_yes")]
    pub enabled: bool,
}

impl Params for PluginSetEnabledParams {
    const CMD: &'static str = cmd::PLUGIN_SET_ENABLED;
    type Reply = reply::desktop::PluginSetEnabledReply;
}

/// Declares params structs that name one thing by its id: `{<field>}`, a non-empty string
/// (unknown fields refused). `field` is the id's name and `what` its documentation.
macro_rules! id_params {
    ($field:ident, $what:literal: $($(#[$doc:meta])* $name:ident = $cmd:path => $reply:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            #[doc = $what]
            #[serde(deserialize_with = "non_empty")]
            pub $field: String,
        }

        impl Params for $name {
            const CMD: &'static str = $cmd;
            type Reply = $reply;
        }
    )*};
}

id_params! {
    ui_id, "The UI (`orb` or `web`; `sayri-ui-orb`, `desktop` and the display name work too).":
    /// `ui_start {ui_id}` → `{ui_id, running, already_running, pid, log_file}`.
    UiStartParams = cmd::UI_START => reply::desktop::UiStartReply;
    /// `ui_stop {ui_id}` → `{ui_id, stopped}`: stops exactly that UI.
    UiStopParams = cmd::UI_STOP => reply::desktop::UiStopReply;
    /// `ui_status {ui_id}` → `{ui_id, running, pid, state, last_error, log_file}`.
    UiStatusParams = cmd::UI_STATUS => reply::desktop::UiStatusReply;
}

id_params! {
    name, "The MCP server's name.":
    /// `mcp_show {name}` → the server (variables with where each value comes from; no
    /// secret values).
    McpShowParams = cmd::MCP_SHOW => reply::mcp::McpShowReply;
    /// `mcp_remove {name}` → `{name, removed}`.
    McpRemoveParams = cmd::MCP_REMOVE => reply::mcp::McpRemoveReply;
    /// `mcp_enable {name}` → the server, enabled.
    McpEnableParams = cmd::MCP_ENABLE => reply::mcp::McpEnableReply;
    /// `mcp_disable {name}` → the server, disabled (kept in the file).
    McpDisableParams = cmd::MCP_DISABLE => reply::mcp::McpEnableReply;
    /// `mcp_test {name}` → `{name, protocol_version, server_name, server_version, tools}`:
    /// connects (a stdio server inside the sandbox at its level), lists the tools, disconnects.
    McpTestParams = cmd::MCP_TEST => reply::mcp::McpTestReply;
}

/// `mcp_add {name, command | url, …}` → the server as saved. Refused: an existing name unless
/// `replace`, loader variables in `env`/`secrets`, secret references in `args`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpAddParams {
    /// The server's name (1–64 of `a–z A–Z 0–9 _ -`).
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    /// A stdio server's program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A Streamable HTTP server's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Sandbox level (1–3; default `LEVEL_2_ISOLATED_DEV`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<crate::level::SandboxLevel>,
    /// Levels 1–2: keep the network.
    #[serde(default, deserialize_with = "bool_or_null")]
    pub network: bool,
    /// Extra paths it is meant to read (absolute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// Literal variables, `{NAME: value}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Variables from the vault, `{NAME: vault key}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, String>,
    /// Replace a server of the same name.
    #[serde(default, deserialize_with = "bool_or_null")]
    pub replace: bool,
}

impl Params for McpAddParams {
    const CMD: &'static str = cmd::MCP_ADD;
    type Reply = reply::mcp::McpAddReply;
}

/// `mcp_approve {name, tools}` → `{name, approved, changed_since_shown, not_offered}`: pins
/// each named tool at the hash the user was shown (`mcp_test`'s `sha256`), only when the
/// server offers exactly that definition now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpApproveParams {
    /// The server's name.
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    /// Tool name → the `sha256` of the definition the user approved.
    pub tools: BTreeMap<String, String>,
    /// The `definition` `mcp_test` showed with them: refused when the server was redefined
    /// since (another program under the same name offering the same texts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

impl Params for McpApproveParams {
    const CMD: &'static str = cmd::MCP_APPROVE;
    type Reply = reply::mcp::McpApproveReply;
}

/// `run_command {command, agent_id, level?}` → `{agent_id, level, status, exit_code, output,
/// output_tail, omitted_bytes, duration_ms}`: one shell command a client proposes, judged by the
/// permission engine of agent `agent_id` exactly as a command its model proposed (a card to
/// every desktop client where its rules ask; refused when nobody answers in time) and run in
/// its sandbox; the output comes back redacted. Sayri as an MCP server (`sayri mcp serve`) uses
/// it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCommandParams {
    /// The shell command (trimmed; blank is refused).
    #[serde(deserialize_with = "non_blank")]
    pub command: String,
    /// The agent whose rules, level and sandbox apply.
    #[serde(deserialize_with = "non_empty")]
    pub agent_id: String,
    /// A level below the agent's own (a level above it is lowered to the agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<crate::level::SandboxLevel>,
}

impl Params for RunCommandParams {
    const CMD: &'static str = cmd::RUN_COMMAND;
    type Reply = reply::sessions::RunCommandReply;
}

/// `skills_scan {slug | path, confirm?}` → the scan report plus `admitted`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsScanParams {
    /// An installed skill: scanned as it is now, its record renewed when admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// A folder or archive to scan without installing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Accept a `WARN` verdict for an installed skill.
    #[serde(default)]
    pub confirm: bool,
}

impl Params for SkillsScanParams {
    const CMD: &'static str = cmd::SKILLS_SCAN;
    type Reply = reply::skills::SkillsScanReply;
}

/// `agent_detach {agent_id}` → `{"agent_id", "parent", "widened"}`: removes an agent's creator
/// link, so its own profile applies unbound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDetachParams {
    /// The agent to detach from its creator.
    #[serde(deserialize_with = "non_empty")]
    pub agent_id: String,
}

impl Params for AgentDetachParams {
    const CMD: &'static str = cmd::AGENT_DETACH;
    type Reply = reply::agents::AgentDetachReply;
}

/// `sessions_list {limit=20}` → `[{id, title, agent_id, messages, updated_at}]`, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsListParams {
    /// How many sessions (clamped to 1–10000; absent = 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

impl SessionsListParams {
    /// The limit, clamped to 1–10000 (absent = 20).
    pub fn limit(&self) -> usize {
        self.limit.map_or(20, |n| n.clamp(1, 10_000) as usize)
    }
}

impl Params for SessionsListParams {
    const CMD: &'static str = cmd::SESSIONS_LIST;
    type Reply = reply::sessions::SessionsListReply;
}

/// `session_get {session_id}` → the session with its messages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionGetParams {
    /// The session.
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
}

impl Params for SessionGetParams {
    const CMD: &'static str = cmd::SESSION_GET;
    type Reply = reply::sessions::SessionGetReply;
}

/// `session_rename {session_id, title}` → `{"session_id", "title"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRenameParams {
    /// The session.
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
    /// Its new title.
    #[serde(deserialize_with = "non_empty")]
    pub title: String,
}

impl Params for SessionRenameParams {
    const CMD: &'static str = cmd::SESSION_RENAME;
    type Reply = reply::sessions::SessionRenameReply;
}

/// `session_delete {session_id}` → `{"session_id", "deleted"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionDeleteParams {
    /// The session.
    #[serde(deserialize_with = "non_empty")]
    pub session_id: String,
}

impl Params for SessionDeleteParams {
    const CMD: &'static str = cmd::SESSION_DELETE;
    type Reply = reply::sessions::SessionDeleteReply;
}

// ---------------------------------------------------------------------------------------------
// Vault

/// `vault_set {key, value, description=""}` → `{"key", "saved": true}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultSetParams {
    /// The secret's name (normalised by the vault, e.g. `canary token` → `CANARY_TOKEN`).
    #[serde(deserialize_with = "non_empty")]
    pub key: String,
    /// The secret.
    pub value: String,
    /// What it is for.
    #[serde(default, deserialize_with = "string_or_null")]
    pub description: String,
}

impl Params for VaultSetParams {
    const CMD: &'static str = cmd::VAULT_SET;
    type Reply = reply::vault::VaultSetReply;
}

/// `vault_delete {key}` → `{"key", "deleted"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultDeleteParams {
    /// The secret's name.
    #[serde(deserialize_with = "non_empty")]
    pub key: String,
}

impl Params for VaultDeleteParams {
    const CMD: &'static str = cmd::VAULT_DELETE;
    type Reply = reply::vault::VaultDeleteReply;
}

/// `db_recover {force}` → `{database, damaged_copy, tables, summary}`: sets a corrupt session
/// database aside (kept as `sessions.db.corrupt-<time>`) and rebuilds what can be read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbRecoverParams {
    /// Rebuild even when the file passes its check.
    #[serde(default)]
    pub force: bool,
}

impl Params for DbRecoverParams {
    const CMD: &'static str = cmd::DB_RECOVER;
    type Reply = reply::database::DbRecoverReply;
}

// ---------------------------------------------------------------------------------------------
// Routines and triggers

/// `routines_run {routine_id}` → `{"scheduled": true, "routine_id", "name"}`: runs it now in the
/// background, enabled or not; refused while a run of it is in progress.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutinesRunParams {
    /// The routine.
    #[serde(deserialize_with = "non_empty")]
    pub routine_id: String,
}

impl Params for RoutinesRunParams {
    const CMD: &'static str = cmd::ROUTINES_RUN;
    type Reply = reply::routines::RoutinesRunReply;
}

/// `routine_save {id?, name?, trigger?, time_spec?, …}` → the routine. Creates a routine, or
/// updates the one with `id`: **omitted fields keep their stored value** (or the default for a
/// new routine); `null` counts as omitted. An update keeps `last_run` and `created_at`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutineSaveParams {
    /// Id (letters, digits, `-`, `_`); a new routine without one gets `r<epoch-ms>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Display name (`"Untitled routine"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `on_login`, `daily_at` (default), `hourly` or `cron`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// `HH:MM` (daily_at, default `09:00`), hours (hourly, a number or its text, default 1), or a
    /// 5/6-field cron pattern.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "text_or_number"
    )]
    pub time_spec: Option<String>,
    /// IANA zone (`"Europe/Berlin"`); `""` = follow the system zone (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// The text the agent runs (required for a new routine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The agent (`default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Speak the result when voice is available (true).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub speak_tts: Option<bool>,
    /// Show the result as a desktop notification (true).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub notify_desktop: Option<bool>,
    /// Whether its schedule runs it (true).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub enabled: Option<bool>,
    /// A missed slot: `run_once` (default) or `skip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<String>,
    /// How late (minutes) a missed slot may be and still run once (720).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_minutes: Option<u32>,
}

impl Params for RoutineSaveParams {
    const CMD: &'static str = cmd::ROUTINE_SAVE;
    type Reply = reply::routines::RoutineSaveReply;
}

/// `routine_delete {routine_id}` → `{"routine_id", "deleted": true}` (a run in progress stops).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutineDeleteParams {
    /// The routine.
    #[serde(deserialize_with = "non_empty")]
    pub routine_id: String,
}

impl Params for RoutineDeleteParams {
    const CMD: &'static str = cmd::ROUTINE_DELETE;
    type Reply = reply::routines::RoutineDeleteReply;
}

/// `routine_set_enabled {routine_id, enabled=true}` → `{"routine_id", "enabled", "next_run"}`.
/// Enabling never catches up a slot missed while disabled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutineSetEnabledParams {
    /// The routine.
    #[serde(deserialize_with = "non_empty")]
    pub routine_id: String,
    /// On or off (absent or `null` = on).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub enabled: Option<bool>,
}

impl Params for RoutineSetEnabledParams {
    const CMD: &'static str = cmd::ROUTINE_SET_ENABLED;
    type Reply = reply::routines::RoutineSetEnabledReply;
}

/// `routine_next {routine_id, count=5, now?}` → `{"routine_id", "zone", "next": [RFC 3339…]}`:
/// the next fire instants exactly as the scheduler computes them from the stored state, in the
/// routine's zone; `now` (RFC 3339) replaces the clock for this preview only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutineNextParams {
    /// The routine.
    #[serde(deserialize_with = "non_empty")]
    pub routine_id: String,
    /// How many (1–1000; absent = 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Preview from this instant (RFC 3339 with offset) instead of now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
}

impl Params for RoutineNextParams {
    const CMD: &'static str = cmd::ROUTINE_NEXT;
    type Reply = reply::routines::RoutineNextReply;
}

/// `trigger_save {trigger}` → the trigger as listed: writes `$CONFIG/triggers/<id>.json`.
/// `trigger` holds the file's fields (`id` required; `event_type`, `prompt`, …); it is
/// checked exactly as the file is when loaded, and nothing is written when it is invalid.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSaveParams {
    /// The trigger's fields.
    pub trigger: Map<String, Value>,
}

impl Params for TriggerSaveParams {
    const CMD: &'static str = cmd::TRIGGER_SAVE;
    type Reply = reply::routines::TriggerSaveReply;
}

/// `trigger_delete {trigger_id}` → `{"trigger_id", "deleted"}`: removes its file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerDeleteParams {
    /// The trigger.
    #[serde(deserialize_with = "non_empty")]
    pub trigger_id: String,
}

impl Params for TriggerDeleteParams {
    const CMD: &'static str = cmd::TRIGGER_DELETE;
    type Reply = reply::routines::TriggerDeleteReply;
}

// Settings forms and front-end helpers

/// `settings_save {values}` → `{"ok", "saved", "values", "errors", "restart_required"}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsSaveParams {
    /// `{"group.key": value}`, at least one field: each value of the key's JSON type, or the
    /// text a form input holds (parsed by the key's type, never clamped).
    #[serde(deserialize_with = "non_empty_object")]
    pub values: Map<String, Value>,
}

impl Params for SettingsSaveParams {
    const CMD: &'static str = cmd::SETTINGS_SAVE;
    type Reply = reply::config::SettingsSaveReply;
}

/// `clipboard_copy {text}` → `{"copied": true, "via"}` or `{"copied": false, "reason"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipboardCopyParams {
    /// What to put on the clipboard (may be empty).
    pub text: String,
}

impl Params for ClipboardCopyParams {
    const CMD: &'static str = cmd::CLIPBOARD_COPY;
    type Reply = reply::desktop::ClipboardCopyReply;
}

/// `killall {include_daemon=false, ui_id=""}` → `{"stopped", "stopped_ui", "signalled",
/// "daemon_stopped"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillallParams {
    /// Stop the daemon too, after answering.
    #[serde(
        default,
        deserialize_with = "bool_or_null",
        skip_serializing_if = "is_false"
    )]
    pub include_daemon: bool,
    /// Keep this one running (the name of a supervised program, e.g. the UI that asks).
    #[serde(default, deserialize_with = "string_or_null")]
    pub ui_id: String,
}

impl Params for KillallParams {
    const CMD: &'static str = cmd::KILLALL;
    type Reply = reply::desktop::KillallReply;
}

/// What a front-end should do with its window (`window`'s `action`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowAction {
    /// Show the window (event `show`).
    #[default]
    Show,
    /// Hide it (event `hide`).
    Hide,
    /// Toggle its visibility (event `toggle`).
    Toggle,
    /// Open the settings (event `settings_requested`).
    Settings,
}

impl WindowAction {
    /// The event broadcast for this action.
    pub fn event(self) -> &'static str {
        use crate::names::event;
        match self {
            WindowAction::Show => event::SHOW,
            WindowAction::Hide => event::HIDE,
            WindowAction::Toggle => event::TOGGLE,
            WindowAction::Settings => event::SETTINGS_REQUESTED,
        }
    }
}

/// `window {action}` *(new)* → `{"event", "clients"}`: broadcasts `show`, `hide`, `toggle` or
/// `settings_requested` to every front-end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowParams {
    /// `show`, `hide`, `toggle` or `settings`.
    pub action: WindowAction,
}

impl Params for WindowParams {
    const CMD: &'static str = cmd::WINDOW;
    type Reply = reply::desktop::WindowReply;
}

/// `attach_image {path}` (or the legacy name `image_path`) → `{"path", "mime", "bytes"}`: the
/// image goes with the next request of the active conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachImageParams {
    /// Absolute path of a PNG, JPEG, GIF or WebP file.
    #[serde(alias = "image_path", deserialize_with = "non_empty")]
    pub path: String,
}

impl Params for AttachImageParams {
    const CMD: &'static str = cmd::ATTACH_IMAGE;
    type Reply = reply::desktop::AttachImageReply;
}

/// `plugin_settings_set {plugin_id, key, value}` → `{"ok", "plugin_id", "key", "value"}`: one
/// setting of an installed skill or a UI plugin that declares settings (`value` masked when
/// secret); broadcasts `plugin_settings_changed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSettingsSetParams {
    /// The skill's slug or the UI plugin's id (`plugin:<id>` is accepted too, as
    /// `plugin_sections` names it).
    #[serde(deserialize_with = "non_empty")]
    pub plugin_id: String,
    /// The setting's key, as the skill or the UI plugin's manifest declares it.
    #[serde(deserialize_with = "non_empty")]
    pub key: String,
    /// The new value: of the setting's kind (a boolean for a toggle, a number for a number, a
    /// string otherwise), or the text a form input holds (`"on"`, `"12"`); never clamped. An
    /// empty secret clears it.
    pub value: Value,
}

impl Params for PluginSettingsSetParams {
    const CMD: &'static str = cmd::PLUGIN_SETTINGS_SET;
    type Reply = reply::config::PluginSettingsSetReply;
}

/// What `asset_download` fetches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssetKind {
    /// A whisper.cpp ggml speech-to-text model.
    #[default]
    WhisperModel,
    /// A Piper voice (`.onnx` and its `.onnx.json`).
    PiperVoice,
    /// An openWakeWord model (`wakeword` is accepted too).
    #[serde(alias = "wakeword", alias = "wake_model")]
    WakeWord,
}

impl AssetKind {
    /// The wire name (`whisper_model`, `piper_voice`, `wake_word`).
    pub fn name(self) -> &'static str {
        match self {
            AssetKind::WhisperModel => "whisper_model",
            AssetKind::PiperVoice => "piper_voice",
            AssetKind::WakeWord => "wake_word",
        }
    }
}

/// The `params` of `asset_download`: which model, and optionally where from. Every member is
/// optional here; which ones a kind needs is checked by the daemon (`invalid_params` naming
/// the missing one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetParams {
    /// Whisper: the model size (`tiny`, `base`, `small`, `medium`, `large-v3`,
    /// `large-v3-turbo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_size: Option<String>,
    /// Whisper: the language (`en` picks the English-only model of a size that has one;
    /// default `en`). Piper: the voice's language key (`en_US`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Piper: the voice name (`joe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
    /// Piper: `x_low`, `low`, `medium` (default) or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// The model's name in the voice model store (a wake-word model needs it, e.g.
    /// `hey_jarvis_v0.1`; for the others it replaces the name made from the fields above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where to download it from (`http://` or `https://`); needs `sha256` unless the model is
    /// in Sayri's catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The file's sha256 (64 hex digits); the download is installed only when it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// `asset_download {kind, params}` → `{"started", "token"}` (`{"started": false,
/// "already_running": true, "token"}` while the same asset downloads); progress comes as
/// `asset_progress` events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetDownloadParams {
    /// `whisper_model`, `piper_voice` or `wake_word`.
    pub kind: AssetKind,
    /// Which model (see [`AssetParams`]).
    pub params: AssetParams,
}

impl Params for AssetDownloadParams {
    const CMD: &'static str = cmd::ASSET_DOWNLOAD;
    type Reply = reply::voice::AssetDownloadReply;
}

// ---------------------------------------------------------------------------------------------
// Long-term memory

/// `memory_add {text, agent?}` → the fact as stored (provenance `person`). Refused: a blank
/// text, more than 500 characters, a text holding a vault secret (in any encoding the vault
/// recognises), an unknown agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryAddParams {
    /// The fact (trimmed; blank is refused).
    #[serde(deserialize_with = "non_blank")]
    pub text: String,
    /// The agent it is for; absent = every agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Params for MemoryAddParams {
    const CMD: &'static str = cmd::MEMORY_ADD;
    type Reply = reply::memory::MemoryAddReply;
}

/// `memory_list {agent?}` → the facts, oldest first: all of them, or those `agent` sees (its
/// own and those for every agent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryListParams {
    /// Only the facts this agent sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Params for MemoryListParams {
    const CMD: &'static str = cmd::MEMORY_LIST;
    type Reply = reply::memory::MemoryListReply;
}

/// Declares params structs that name one fact by its id: `{id}` (unknown fields refused).
/// Declares params structs that name one row by its number: `{id}` (unknown fields refused);
/// `$id_doc` says whose id it is.
macro_rules! memory_id_params {
    ($id_doc:literal; $($(#[$doc:meta])* $name:ident = $cmd:path => $reply:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            #[doc = $id_doc]
            pub id: i64,
        }

        impl Params for $name {
            const CMD: &'static str = $cmd;
            type Reply = $reply;
        }
    )*};
}

memory_id_params! {
    "The fact's id (as `memory_list` shows it).";
    /// `memory_get {id}` → the fact; `not_found` when no fact has that id.
    MemoryGetParams = cmd::MEMORY_GET => reply::memory::MemoryGetReply;
    /// `memory_forget {id}` → `{id, forgotten}`: the fact and its search entry are deleted.
    MemoryForgetParams = cmd::MEMORY_FORGET => reply::memory::MemoryForgetReply;
}

memory_id_params! {
    "The proposal's id (as `memory_review` lists it under `proposed`).";
    /// `memory_accept {id}` → the fact now in memory (checked again like any new fact); the
    /// proposal is gone. `not_found` when no proposal has that id.
    MemoryAcceptParams = cmd::MEMORY_ACCEPT => reply::memory::MemoryAcceptReply;
    /// `memory_reject {id}` → `{id, rejected}`: the proposal is deleted, memory unchanged.
    MemoryRejectParams = cmd::MEMORY_REJECT => reply::memory::MemoryRejectReply;
}

/// `memory_edit {id, text}` → the fact with its new text (same checks as `memory_add`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryEditParams {
    /// The fact's id.
    pub id: i64,
    /// Its new text (trimmed; blank is refused).
    #[serde(deserialize_with = "non_blank")]
    pub text: String,
}

impl Params for MemoryEditParams {
    const CMD: &'static str = cmd::MEMORY_EDIT;
    type Reply = reply::memory::MemoryEditReply;
}

/// `memory_search {query, limit=10}` → the facts holding any word of `query`, best first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySearchParams {
    /// Words to look for (any case, with or without accents; every other character only
    /// separates words).
    #[serde(deserialize_with = "non_blank")]
    pub query: String,
    /// How many facts (clamped to 1–100; absent = 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

impl MemorySearchParams {
    /// The limit, clamped to 1–100 (absent = 10).
    pub fn limit(&self) -> usize {
        self.limit.map_or(10, |n| n.clamp(1, 100) as usize)
    }
}

impl Params for MemorySearchParams {
    const CMD: &'static str = cmd::MEMORY_SEARCH;
    type Reply = reply::memory::MemorySearchReply;
}

/// `memory_import {lines}` → `{imported, skipped}`: every line of `lines` (JSON lines as
/// `memory_export` writes them) is checked first; one bad line refuses the whole text, naming
/// its line number, and nothing is stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryImportParams {
    /// The file's text: one JSON object per line (`{"text", "agent"?, "created_at"?, …}`);
    /// blank lines are skipped.
    pub lines: String,
}

impl Params for MemoryImportParams {
    const CMD: &'static str = cmd::MEMORY_IMPORT;
    type Reply = reply::memory::MemoryImportReply;
}

// ---------------------------------------------------------------------------------------------
// Gateways

/// A gateway instance as `gateway_save` takes it (the `instance` object). Every field but `id`
/// is optional: on an update an omitted field keeps its stored value; on a create it takes its
/// default (`agent` = `default`, `level_cap` = `LEVEL_1_READONLY`, `auto_start` = true, the
/// rest empty). `null` counts as omitted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayInstanceParams {
    /// Instance id: 1–32 of `a–z 0–9 _ -`, starting with a letter or digit.
    #[serde(deserialize_with = "non_empty")]
    pub id: String,
    /// Display name *(original: `name`)*.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The gateway plugin: an installed plugin folder of that id, else the built-in program
    /// (`telegram` runs `sayri-gateway-telegram`). The original's `plugin_id` is read as it.
    #[serde(default, alias = "plugin_id", skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The agent its messages go to. The original's `agent_id` is read as it.
    #[serde(default, alias = "agent_id", skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Further agents a chat may switch to (`/agent ID`); array or comma string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub agents: Option<Vec<String>>,
    /// The highest sandbox level its turns run at (`0`–`4` or a level name); a message can
    /// only lower it. The original's `sandbox_level` is read as it.
    #[serde(
        default,
        alias = "sandbox_level",
        skip_serializing_if = "Option::is_none"
    )]
    pub level_cap: Option<String>,
    /// Secrets the gateway process receives: environment variable name → vault key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<std::collections::BTreeMap<String, String>>,
    /// Plain settings given to the program as `--NAME VALUE` (e.g. `api-base`); never secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<std::collections::BTreeMap<String, String>>,
    /// Group chats whose paired members it answers (empty = group chats off); array or comma
    /// string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub allowed_groups: Option<Vec<String>>,
    /// Started with the daemon. The original's `enabled` is read as it.
    #[serde(
        default,
        alias = "enabled",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub auto_start: Option<bool>,
    /// Take messages of the original gateway wire (without a sender id) from the authors and
    /// chats named below.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub legacy: Option<bool>,
    /// Authors whose original-wire messages are answered; array or comma string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub legacy_authors: Option<Vec<String>>,
    /// Chat ids whose original-wire messages are answered; array or comma string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "list_or_csv"
    )]
    pub legacy_chats: Option<Vec<String>>,
    /// The vault key a plugin's required secrets are read from when `secrets` does not name
    /// them *(original)*; `""` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<String>,
    /// Whether a plugin gateway may resume a chat's previous session *(original)*.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "flag"
    )]
    pub allow_resume_previous: Option<bool>,
    /// Minutes of silence before a plugin gateway starts a new session *(original)*.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_timeout_minutes: Option<u32>,
    /// The original's listing field, sent back by its clients: read and ignored (the
    /// plugin's manifest decides how senders are authorized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_mode: Option<serde_json::Value>,
    /// The original's listing field, sent back by its clients: read and ignored (the store
    /// keeps when the instance was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<serde_json::Value>,
}

/// `gateway_save {instance, mode?}` → `{"saved", "instance_id", "created", "instance",
/// "restarted"}`. A running instance is restarted so the new settings apply.
///
/// Read in two forms: the instance's fields in an `instance` object beside `mode` (what
/// [`to_map`] sends), or the instance's fields themselves at the top level, `mode` among them
/// (what original clients send). An object with an `instance` member is the first form; any
/// other object the second. Either way an unknown name is refused, naming it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GatewaySaveParams {
    /// The instance's fields.
    pub instance: GatewayInstanceParams,
    /// `create` never replaces an instance, `update` must find one; absent = either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SaveMode>,
}

/// The member names of [`GatewaySaveParams`]'s wrapped form, as documented.
const GATEWAY_SAVE_FIELDS: &[&str] = &["instance", "mode"];

/// [`GatewaySaveParams`]'s wrapped form, as the wire has it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewaySaveWrapped {
    instance: GatewayInstanceParams,
    #[serde(default)]
    mode: Option<SaveMode>,
}

/// `T` read from `value`; the error names the member at fault (`` `instance.id`: … ``), with
/// `prefix` before its path.
fn read_at<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match (prefix, path.as_str()) {
            ("", ".") => inner.to_string(),
            ("", p) => format!("`{p}`: {inner}"),
            (pre, ".") => format!("`{pre}`: {inner}"),
            (pre, p) => format!("`{pre}.{p}`: {inner}"),
        }
    })
}

impl GatewaySaveParams {
    /// Reads either form of the params object (see the type's documentation).
    fn from_object(all: Map<String, Value>) -> Result<Self, String> {
        if all.contains_key("instance") {
            let w: GatewaySaveWrapped = read_at(Value::Object(all), "")?;
            return Ok(GatewaySaveParams {
                instance: w.instance,
                mode: w.mode,
            });
        }
        Self::from_flat(all).map_err(|e| {
            format!("{e} (the instance's fields go in `instance`, or all at the top level)")
        })
    }

    /// The second form: `mode` and the instance's fields side by side.
    fn from_flat(mut all: Map<String, Value>) -> Result<Self, String> {
        let mode = match all.remove("mode") {
            None | Some(Value::Null) => None,
            Some(m) => Some(read_at(m, "mode")?),
        };
        Ok(GatewaySaveParams {
            instance: read_at(Value::Object(all), "")?,
            mode,
        })
    }
}

impl<'de> Deserialize<'de> for GatewaySaveParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> de::Visitor<'de> for Either {
            type Value = GatewaySaveParams;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object: {instance, mode} or the instance's fields with mode")
            }

            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut all = Map::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    all.insert(k, v);
                }
                GatewaySaveParams::from_object(all).map_err(de::Error::custom)
            }
        }
        d.deserialize_struct("GatewaySaveParams", GATEWAY_SAVE_FIELDS, Either)
    }
}

impl Params for GatewaySaveParams {
    const CMD: &'static str = cmd::GATEWAY_SAVE;
    type Reply = reply::gateways::GatewaySaveReply;
}

id_params! {
    instance_id, "The gateway instance.":
    /// `gateway_start {instance_id}` → `{"started", "already_running", "instance_id",
    /// "message", "gateway"}`; a running instance is left as it is.
    GatewayStartParams = cmd::GATEWAY_START => reply::gateways::GatewayStartReply;
    /// `gateway_stop {instance_id}` → `{"stopped", "instance_id"}`.
    GatewayStopParams = cmd::GATEWAY_STOP => reply::gateways::GatewayStopReply;
    /// `gateway_pin {instance_id}` → `{"instance_id", "pin", "expires_at", "expires_in"}`: a
    /// new one-time pairing PIN (replacing the previous one).
    GatewayPinParams = cmd::GATEWAY_PIN => reply::gateways::GatewayPinReply;
    /// `gateway_peers {instance_id}` → `[{"peer_id", "agent_id", "authorized_at", "via",
    /// "name"}]`.
    GatewayPeersParams = cmd::GATEWAY_PEERS => reply::gateways::GatewayPeersReply;
}

/// `gateway_delete {instance_id, keep_secrets=false}` → `{"deleted", "instance_id",
/// "secrets_deleted"}`: stops it, forgets its peers and chats, and deletes the vault secrets
/// that were made for it (keys starting `GATEWAY_<ID>_`) unless `keep_secrets`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayDeleteParams {
    /// The gateway instance.
    #[serde(deserialize_with = "non_empty")]
    pub instance_id: String,
    /// Keep its secrets in the vault.
    #[serde(default, deserialize_with = "bool_or_null")]
    pub keep_secrets: bool,
}

impl Params for GatewayDeleteParams {
    const CMD: &'static str = cmd::GATEWAY_DELETE;
    type Reply = reply::gateways::GatewayDeleteReply;
}

/// `gateway_peer_add {instance_id, peer_id}` → `{"instance_id", "peer_id", "added"}`: the
/// person at the desktop authorises a sender id without a PIN.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayPeerAddParams {
    /// The gateway instance.
    #[serde(deserialize_with = "non_empty")]
    pub instance_id: String,
    /// The sender id as the channel gives it (Telegram: the numeric user id).
    #[serde(deserialize_with = "id_text")]
    pub peer_id: String,
}

impl Params for GatewayPeerAddParams {
    const CMD: &'static str = cmd::GATEWAY_PEER_ADD;
    type Reply = reply::gateways::GatewayPeerAddReply;
}

/// `gateway_peer_remove {instance_id, peer_id}` → `{"instance_id", "peer_id", "removed"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayPeerRemoveParams {
    /// The gateway instance.
    #[serde(deserialize_with = "non_empty")]
    pub instance_id: String,
    /// The sender id.
    #[serde(deserialize_with = "id_text")]
    pub peer_id: String,
}

impl Params for GatewayPeerRemoveParams {
    const CMD: &'static str = cmd::GATEWAY_PEER_REMOVE;
    type Reply = reply::gateways::GatewayPeerRemoveReply;
}

// ---------------------------------------------------------------------------------------------
// Field helpers

/// A JSON object with at least one member.
fn non_empty_object<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    let m = Map::<String, Value>::deserialize(d)?;
    if m.is_empty() {
        return Err(de::Error::invalid_length(
            0,
            &"an object with at least one setting",
        ));
    }
    Ok(m)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A string that must not be empty.
fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Err(de::Error::invalid_value(
            de::Unexpected::Str(""),
            &"a non-empty string",
        ));
    }
    Ok(s)
}

/// A string that must not be blank; returned trimmed.
fn non_blank<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    let t = s.trim();
    if t.is_empty() {
        return Err(de::Error::invalid_value(
            de::Unexpected::Str(&s),
            &"a non-blank string",
        ));
    }
    Ok(t.to_string())
}

fn yes() -> bool {
    true
}

/// A boolean, `null` meaning `true`.
fn bool_or_yes<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

/// A boolean, `null` meaning `false`.
fn bool_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

/// A string, `null` meaning empty.
fn string_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// An optional list: a JSON array of strings, or one comma-separated string (`"a, b"`);
/// entries are trimmed and empty ones dropped. `null` = not given.
fn list_or_csv<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        Text(String),
    }
    let clean = |items: Vec<String>| -> Vec<String> {
        items
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    Ok(match Option::<Raw>::deserialize(d)? {
        None => None,
        Some(Raw::List(v)) => Some(clean(v)),
        Some(Raw::Text(t)) => Some(clean(t.split(',').map(String::from).collect())),
    })
}

/// A channel id given as a JSON string or integer (Telegram ids are integers), as trimmed
/// text; blank is refused.
fn id_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(i64),
        Text(String),
    }
    let s = match Raw::deserialize(d)? {
        Raw::Int(i) => i.to_string(),
        Raw::Text(t) => t.trim().to_string(),
    };
    if s.is_empty() {
        return Err(de::Error::invalid_value(
            de::Unexpected::Str(""),
            &"a non-empty id",
        ));
    }
    Ok(s)
}

/// An optional switch: a boolean, or `"1"/"true"/"yes"/"on"` and `"0"/"false"/"no"/"off"`
/// (any case). `null` = not given; any other text is an error.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Bool(b)) => Ok(Some(b)),
        Some(Raw::Text(t)) => match t.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" => Ok(Some(false)),
            _ => Err(de::Error::invalid_value(
                de::Unexpected::Str(&t),
                &"true/false, yes/no, on/off or 1/0",
            )),
        },
    }
}

/// An optional text that may also be sent as a number (`2` → `"2"`). `null` = not given.
fn text_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(serde_json::Number),
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        None => None,
        Some(Raw::Text(t)) => Some(t),
        Some(Raw::Number(n)) => Some(n.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ErrorCode;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_params_type_names_a_protocol_command_once() {
        let mut seen = std::collections::BTreeSet::new();
        for info in ALL {
            assert!(
                cmd::ALL.contains(&info.cmd),
                "{} is not a command",
                info.cmd
            );
            assert!(seen.insert(info.cmd), "{} has two params types", info.cmd);
        }
    }

    #[test]
    fn commands_with_params_refuse_unknown_ones_and_the_others_ignore_them() {
        for info in ALL {
            let has_params = !(info.fields)().is_empty();
            assert_eq!(
                (info.refuses_unknown)(),
                has_params,
                "{}: a command with params refuses unknown ones; one without ignores them",
                info.cmd
            );
        }
    }

    #[test]
    fn errors_name_the_parameter() {
        let e = parse::<AskParams>(map(json!({"text": "hi", "timeout": "x"}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert!(
            e.message.contains("ask") && e.message.contains("`timeout`"),
            "{e}"
        );
        let e = parse::<AskParams>(map(json!({}))).unwrap_err();
        assert!(e.message.contains("`text`"), "{e}");
        let e = parse::<AskParams>(map(json!({"text": "   "}))).unwrap_err();
        assert!(e.message.contains("`text`"), "{e}");
        let e = parse::<PermissionForgetParams>(map(json!({"acton": "shell"}))).unwrap_err();
        assert!(e.message.contains("acton"), "{e}");
        let e = parse::<SessionGetParams>(map(json!({"session_id": ""}))).unwrap_err();
        assert!(e.message.contains("`session_id`"), "{e}");
    }

    #[test]
    fn skills_install_takes_exactly_one_of_path_and_slug() {
        let p: SkillsInstallParams = parse(map(json!({"slug": "@alice/weather"}))).unwrap();
        assert_eq!(p.source, SkillSource::Slug("@alice/weather".into()));
        let p: SkillsInstallParams = parse(map(
            json!({"path": "/x.zip", "install_as": "w", "confirm": true}),
        ))
        .unwrap();
        assert_eq!(p.source, SkillSource::Path("/x.zip".into()));
        assert_eq!((p.install_as.as_deref(), p.confirm), (Some("w"), true));
        for (bad, says) in [
            (json!({"path": "/x", "slug": "w"}), "both"),
            (json!({}), "neither"),
            (json!({"slug": null, "path": null}), "neither"),
            (json!({"slug": "  "}), "`slug` is empty"),
            (json!({"path": ""}), "`path` is empty"),
        ] {
            let e = parse::<SkillsInstallParams>(map(bad.clone())).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParams);
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
        assert_eq!(
            field_names::<SkillsInstallParams>(),
            ["path", "slug", "install_as", "confirm"]
        );
        assert!(refuses_unknown::<SkillsInstallParams>());
        let sent = to_map(&SkillsInstallParams {
            source: SkillSource::Slug("w".into()),
            install_as: None,
            confirm: false,
        })
        .unwrap();
        assert_eq!(Value::Object(sent), json!({"slug": "w", "confirm": false}));
    }

    #[test]
    fn null_means_not_given_and_ping_ignores_extras() {
        let p: PermissionAnswerParams = parse(map(
            json!({"request_id": "abc", "allow": null, "remember": null}),
        ))
        .unwrap();
        assert!(!p.allow && !p.remember);
        let p: AskParams = parse(map(json!({"text": "q", "timeout": null}))).unwrap();
        assert_eq!(p.timeout_secs(), AskParams::DEFAULT_TIMEOUT);
        let _: PingParams = parse(map(json!({"note": "café ☕"}))).unwrap();
    }

    #[test]
    fn the_original_clients_names_are_understood() {
        let p: AskParams = parse(map(json!({"text": "q", "target_agent_id": "ops"}))).unwrap();
        assert_eq!(p.target().agent_id, Some("ops"));
        let p: AskParams = parse(map(
            json!({"text": "q", "agent_id": "a", "target_agent_id": "b"}),
        ))
        .unwrap();
        assert_eq!(p.target().agent_id, Some("a"));
        let p: ConfigGetParams = parse(map(json!({"group": "ui", "key": "autostart"}))).unwrap();
        assert_eq!(p.setting(), "ui.autostart");
        let p: ConfigGetParams = parse(map(json!({"group": "ui", "key": "x.y"}))).unwrap();
        assert_eq!(p.setting(), "x.y");
    }

    #[test]
    fn gateway_save_takes_the_instance_object_or_its_fields_at_the_top_level() {
        let wrapped: GatewaySaveParams = parse(map(json!({
            "instance": {"id": "home", "plugin_id": "telegram", "enabled": false},
            "mode": "create"
        })))
        .unwrap();
        let flat: GatewaySaveParams = parse(map(
            json!({"id": "home", "plugin_id": "telegram", "enabled": false, "mode": "create"}),
        ))
        .unwrap();
        assert_eq!(wrapped, flat);
        assert_eq!(flat.instance.id, "home");
        assert_eq!(flat.instance.plugin.as_deref(), Some("telegram"));
        assert_eq!(flat.instance.auto_start, Some(false));
        assert_eq!(flat.mode, Some(SaveMode::Create));
        for no_mode in [json!({"id": "home"}), json!({"id": "home", "mode": null})] {
            let p: GatewaySaveParams = parse(map(no_mode)).unwrap();
            assert_eq!((p.instance.id.as_str(), p.mode), ("home", None));
        }
        // A client sends the wrapped form, and it reads back the same.
        let sent = to_map(&flat).unwrap();
        assert_eq!(
            Value::Object(sent.clone()),
            json!({"instance": {"id": "home", "plugin": "telegram", "auto_start": false}, "mode": "create"})
        );
        assert_eq!(parse::<GatewaySaveParams>(sent).unwrap(), flat);
        assert_eq!(field_names::<GatewaySaveParams>(), ["instance", "mode"]);
        assert!(refuses_unknown::<GatewaySaveParams>());
    }

    #[test]
    fn gateway_save_refuses_unknown_names_and_a_missing_id_in_either_form() {
        for (bad, says) in [
            (json!({"id": "home", "bogus": 1}), "unknown field `bogus`"),
            (
                json!({"instance": {"id": "home"}, "bogus": 1}),
                "unknown field `bogus`",
            ),
            (
                json!({"instance": {"id": "home", "bogus": 1}}),
                "unknown field `bogus`",
            ),
            (
                json!({"instance": {"id": "home"}, "id": "home"}),
                "unknown field `id`",
            ),
            (json!({"instance": {}}), "`instance`: missing field `id`"),
            (json!({"plugin_id": "telegram"}), "missing field `id`"),
            (json!({}), "missing field `id`"),
            (json!({"id": ""}), "`id`"),
            (
                json!({"id": "home", "mode": "upsert"}),
                "`mode`: unknown variant",
            ),
            (
                json!({"instance": {"id": "home", "inactivity_timeout_minutes": "x"}}),
                "`instance.inactivity_timeout_minutes`",
            ),
            (
                json!({"id": "home", "inactivity_timeout_minutes": "x"}),
                "`inactivity_timeout_minutes`",
            ),
        ] {
            let e = parse::<GatewaySaveParams>(map(bad.clone())).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParams);
            assert!(
                e.message.contains("gateway_save") && e.message.contains(says),
                "{bad}: {}",
                e.message
            );
        }
    }

    #[test]
    fn what_a_client_sends_is_what_the_daemon_reads() {
        let ask = AskParams {
            text: "hello".into(),
            timeout: Some(30.0),
            session_id: Some("s1".into()),
            new: false,
            ..AskParams::default()
        };
        let sent = to_map(&ask).unwrap();
        assert_eq!(
            Value::Object(sent.clone()),
            json!({"text": "hello", "timeout": 30.0, "session_id": "s1"})
        );
        assert_eq!(parse::<AskParams>(sent).unwrap(), ask);
        assert!(to_map(&PingParams {}).unwrap().is_empty());
        assert_eq!(
            field_names::<SessionRenameParams>(),
            ["session_id", "title"]
        );
    }
}
