//! A gateway instance: one channel (a Telegram bot, …) bound to an agent at a level cap.
//!
//! Rules:
//! * The id names the instance everywhere (`sayri gateway start ID`, its log, its peers); it is
//!   1–32 of `a–z 0–9 _ -`, starting with a letter or digit.
//! * The plugin names the program the daemon runs: an installed gateway plugin of that id, else
//!   the built-in `sayri-gateway-<plugin>`; it is 1–48 of `A–Z a–z 0–9 . _ -`, starting with a
//!   letter or digit (a plugin id).
//! * A turn of the instance runs at the **lowest** of the instance's cap, the agent's own level
//!   and the level a message asks for ([`GatewayInstance::level_for`]): a message can only
//!   lower it.
//! * A message may name an agent, but only the instance's own or one of its `agents`
//!   ([`GatewayInstance::allows_agent`]); anything else is refused, never replaced by a default.
//! * The gateway process gets exactly the secrets listed in `secrets` (environment variable →
//!   vault key), and `options` as `--NAME VALUE` arguments — arguments are visible to every
//!   local user, so `options` never hold secrets.
//! * Group chats are off unless `allowed_groups` names them.
//! * Messages of the original gateway wire (no sender id, so no pairing) are refused unless
//!   `legacy` is on, and then answered only when their `author` is one of `legacy_authors` or
//!   their `chat_id` one of `legacy_chats` (both empty: none). They run like any message of the
//!   instance: at most at its cap, never approving anything.
//! * Instance [`DEFAULT_ID`] exists without being saved ([`GatewayInstance::implicit_default`]):
//!   the one original gateways name. It has no program ([`LEGACY_PLUGIN`]), takes original-wire
//!   messages only once the person turns `legacy` on and names who is accepted, and is capped
//!   at level 1 until the person raises the cap.

use sayri_protocol::SandboxLevel;
use sayri_protocol::params::GatewayInstanceParams;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest instance id.
pub const MAX_ID_CHARS: usize = 32;
/// The instance original gateways name (`instance_id` defaulted to it).
pub const DEFAULT_ID: &str = "default";
/// The plugin of an instance without a program: its gateway is run by the person, outside
/// Sayri's supervisor, and speaks the original wire on `sayri.sock`.
pub const LEGACY_PLUGIN: &str = "legacy";

/// One gateway instance, as stored and listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayInstance {
    /// Unique id (see the module rules).
    pub id: String,
    /// Display name (empty: the id).
    #[serde(default)]
    pub name: String,
    /// Program suffix: `telegram` runs `sayri-gateway-telegram`.
    pub plugin: String,
    /// The agent its messages go to.
    pub agent: String,
    /// Further agents a chat may switch to.
    #[serde(default)]
    pub agents: Vec<String>,
    /// The highest level its turns run at.
    pub level_cap: SandboxLevel,
    /// Environment variable name → vault key, given to the process.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Plain settings given to the program as `--NAME VALUE`.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Group chats whose paired members are answered.
    #[serde(default)]
    pub allowed_groups: Vec<String>,
    /// Started with the daemon.
    pub auto_start: bool,
    /// Takes messages of the original gateway wire (without a sender id) from the authors and
    /// chats named below.
    #[serde(default)]
    pub legacy: bool,
    /// Authors (as original gateways send `author`) whose original-wire messages are answered.
    #[serde(default)]
    pub legacy_authors: Vec<String>,
    /// Chat ids whose original-wire messages are answered.
    #[serde(default)]
    pub legacy_chats: Vec<String>,
    /// The vault key a plugin's `required_secrets` are read from when the instance does not
    /// list them in `secrets` (the original's `secret_key`; the secret is also given under
    /// this name).
    #[serde(default)]
    pub secret_key: Option<String>,
    /// Whether a plugin gateway may resume a chat's previous session (given to it as
    /// `SAYRI_ALLOW_RESUME_PREVIOUS`).
    #[serde(default = "yes")]
    pub allow_resume_previous: bool,
    /// Minutes of silence after which a plugin gateway starts a new session (given to it in
    /// seconds as `SAYRI_INACTIVITY_TIMEOUT`).
    #[serde(default = "thirty")]
    pub inactivity_timeout_minutes: u32,
}

fn yes() -> bool {
    true
}

fn thirty() -> u32 {
    30
}

/// Longest plugin id.
pub const MAX_PLUGIN_CHARS: usize = 48;

/// Whether `plugin` is a valid plugin id.
pub fn valid_plugin(plugin: &str) -> bool {
    !plugin.is_empty()
        && plugin.len() <= MAX_PLUGIN_CHARS
        && plugin.starts_with(|c: char| c.is_ascii_alphanumeric())
        && plugin
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Why an instance is invalid; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InstanceError(pub String);

fn err(msg: impl Into<String>) -> InstanceError {
    InstanceError(msg.into())
}

/// Whether `id` is a valid instance id.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && id
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn valid_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn valid_env_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl GatewayInstance {
    /// A new instance with the defaults: agent `default`, level 1, auto-start, nothing else.
    pub fn new(id: &str, plugin: &str) -> Self {
        GatewayInstance {
            id: id.to_string(),
            name: String::new(),
            plugin: plugin.to_string(),
            agent: "default".into(),
            agents: Vec::new(),
            level_cap: SandboxLevel::ReadOnly,
            secrets: BTreeMap::new(),
            options: BTreeMap::new(),
            allowed_groups: Vec::new(),
            auto_start: true,
            legacy: false,
            legacy_authors: Vec::new(),
            legacy_chats: Vec::new(),
            secret_key: None,
            allow_resume_previous: true,
            inactivity_timeout_minutes: 30,
        }
    }

    /// Instance [`DEFAULT_ID`] as it is before the person saves it: no program, agent
    /// `default`, level 1, not started, original-wire messages off.
    pub fn implicit_default() -> Self {
        GatewayInstance {
            auto_start: false,
            ..GatewayInstance::new(DEFAULT_ID, LEGACY_PLUGIN)
        }
    }

    /// Whether an original-wire message from `author` in chat `chat_id` is answered (see the
    /// module rules).
    pub fn accepts_original_wire(&self, author: &str, chat_id: Option<&str>) -> bool {
        let author = author.trim();
        self.legacy
            && ((!author.is_empty() && self.legacy_authors.iter().any(|a| a.trim() == author))
                || chat_id.is_some_and(|c| self.legacy_chats.iter().any(|x| x == c)))
    }

    /// The vault key prefix of secrets made for this instance (`GATEWAY_<ID>_`): they are
    /// deleted with it.
    pub fn own_secret_prefix(id: &str) -> String {
        let mut s = String::from("GATEWAY_");
        s.extend(id.chars().map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            '0'..='9' => c,
            _ => '_',
        }));
        s.push('_');
        s
    }

    /// Builds the instance `p` describes: a new one from the defaults (`existing` = `None`),
    /// or `existing` with the given fields changed.
    ///
    /// # Errors
    /// A new instance without a plugin, a level that names nothing, or anything
    /// [`GatewayInstance::validate`] refuses.
    pub fn from_params(
        p: &GatewayInstanceParams,
        existing: Option<&GatewayInstance>,
    ) -> Result<GatewayInstance, InstanceError> {
        let mut inst = match existing {
            Some(e) => e.clone(),
            None => {
                let plugin = p.plugin.as_deref().ok_or_else(|| {
                    err(format!(
                        "a new gateway instance needs `plugin` (e.g. telegram) — {} does not exist yet",
                        p.id
                    ))
                })?;
                GatewayInstance::new(&p.id, plugin)
            }
        };
        if let Some(v) = &p.plugin {
            inst.plugin = v.trim().to_string();
        }
        if let Some(v) = &p.agent {
            inst.agent = v.trim().to_string();
        }
        if let Some(v) = &p.agents {
            inst.agents = v.clone();
        }
        if let Some(v) = &p.level_cap {
            inst.level_cap = v.parse().map_err(|e| err(format!("level_cap: {e}")))?;
        }
        if let Some(v) = &p.secrets {
            inst.secrets = v.clone();
        }
        if let Some(v) = &p.options {
            inst.options = v.clone();
        }
        if let Some(v) = &p.allowed_groups {
            inst.allowed_groups = v.clone();
        }
        if let Some(v) = p.auto_start {
            inst.auto_start = v;
        }
        if let Some(v) = p.legacy {
            inst.legacy = v;
        }
        if let Some(v) = &p.legacy_authors {
            inst.legacy_authors = v.iter().map(|a| a.trim().to_string()).collect();
        }
        if let Some(v) = &p.legacy_chats {
            inst.legacy_chats = v.iter().map(|c| c.trim().to_string()).collect();
        }
        if let Some(v) = &p.name {
            inst.name = v.trim().to_string();
        }
        if let Some(v) = &p.secret_key {
            let v = v.trim();
            inst.secret_key = (!v.is_empty()).then(|| v.to_string());
        }
        if let Some(v) = p.allow_resume_previous {
            inst.allow_resume_previous = v;
        }
        if let Some(v) = p.inactivity_timeout_minutes {
            inst.inactivity_timeout_minutes = v;
        }
        inst.validate()?;
        Ok(inst)
    }

    /// Checks every field (see the module rules).
    ///
    /// # Errors
    /// The first invalid field, named, with what it should be.
    pub fn validate(&self) -> Result<(), InstanceError> {
        if !valid_id(&self.id) {
            return Err(err(format!(
                "invalid gateway id {:?}: use 1-{MAX_ID_CHARS} of a-z, 0-9, '_' and '-', starting with a letter or digit (e.g. telegram-home)",
                self.id
            )));
        }
        if !valid_plugin(&self.plugin) {
            return Err(err(format!(
                "invalid plugin {:?}: use 1-{MAX_PLUGIN_CHARS} letters, digits, '.', '_' and '-', starting with a letter or digit (e.g. telegram)",
                self.plugin
            )));
        }
        if self.name.chars().count() > 80 || self.name.contains(['\0', '\n', '\r']) {
            return Err(err(
                "invalid name: at most 80 characters, without line breaks",
            ));
        }
        if let Some(k) = &self.secret_key
            && !valid_env_name(k)
        {
            return Err(err(format!(
                "invalid secret_key {k:?}: a vault key uses letters, digits and '_', not starting with a digit"
            )));
        }
        for a in std::iter::once(&self.agent).chain(&self.agents) {
            if a.trim().is_empty() || a.contains(['/', '\0']) {
                return Err(err(format!("invalid agent id {a:?}")));
            }
        }
        for (name, key) in &self.secrets {
            if !valid_env_name(name) || !valid_env_name(key) {
                return Err(err(format!(
                    "invalid secret {name:?} = {key:?}: both the variable name and the vault key use letters, digits and '_', not starting with a digit"
                )));
            }
            if name.starts_with("SAYRI_") {
                return Err(err(format!(
                    "secret variable {name:?}: names starting SAYRI_ are set by Sayri itself"
                )));
            }
        }
        for (name, value) in &self.options {
            if !valid_word(name) {
                return Err(err(format!(
                    "invalid option name {name:?}: use a-z, 0-9, '_' and '-' (it becomes --{name})"
                )));
            }
            if value.contains('\0') || value.contains('\n') {
                return Err(err(format!(
                    "option {name}: the value cannot contain a NUL or a line break"
                )));
            }
        }
        for g in &self.allowed_groups {
            if g.trim().is_empty() || g.contains(char::is_whitespace) {
                return Err(err(format!(
                    "invalid group id {g:?}: give the chat id as the channel shows it (Telegram: a negative number)"
                )));
            }
        }
        for a in self.legacy_authors.iter().chain(&self.legacy_chats) {
            if a.trim().is_empty() || a.contains(['\0', '\n', '\r']) {
                return Err(err(format!(
                    "invalid legacy author or chat {a:?}: give it as the gateway sends it, without line breaks"
                )));
            }
        }
        Ok(())
    }

    /// Whether a message may use agent `id` on this instance.
    pub fn allows_agent(&self, id: &str) -> bool {
        self.agent == id || self.agents.iter().any(|a| a == id)
    }

    /// Every agent a chat of this instance may use, its own first.
    pub fn allowed_agents(&self) -> Vec<&str> {
        let mut v = vec![self.agent.as_str()];
        v.extend(
            self.agents
                .iter()
                .map(String::as_str)
                .filter(|a| *a != self.agent),
        );
        v
    }

    /// The level a turn asked at `requested` runs at, given the agent's own `agent_level`: the
    /// lowest of the three.
    pub fn level_for(
        &self,
        requested: Option<SandboxLevel>,
        agent_level: SandboxLevel,
    ) -> SandboxLevel {
        let capped = self.level_cap.min(agent_level);
        requested.map_or(capped, |r| r.min(capped))
    }

    /// Whether group chat `chat_id` is one this instance answers in.
    pub fn allows_group(&self, chat_id: &str) -> bool {
        self.allowed_groups.iter().any(|g| g == chat_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_can_only_lower_the_level() {
        let mut i = GatewayInstance::new("home", "telegram");
        i.level_cap = SandboxLevel::IsolatedDev;
        let root = SandboxLevel::HostRoot;
        assert_eq!(i.level_for(Some(root), root), SandboxLevel::IsolatedDev);
        assert_eq!(i.level_for(None, root), SandboxLevel::IsolatedDev);
        assert_eq!(
            i.level_for(Some(SandboxLevel::NoExec), root),
            SandboxLevel::NoExec
        );
        assert_eq!(
            i.level_for(Some(root), SandboxLevel::ReadOnly),
            SandboxLevel::ReadOnly
        );
    }

    #[test]
    fn ids_and_fields_are_checked() {
        for bad in ["", "Home", "-x", "a b", "a/b", &"x".repeat(33)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        assert!(valid_id("telegram-home_2"));
        let mut i = GatewayInstance::new("home", "telegram");
        i.secrets.insert("SAYRI_X".into(), "K".into());
        assert!(i.validate().is_err());
        let mut i = GatewayInstance::new("home", "telegram");
        i.options.insert("API BASE".into(), "x".into());
        assert!(i.validate().is_err());
    }

    #[test]
    fn params_change_only_what_they_name() {
        let p = GatewayInstanceParams {
            id: "home".into(),
            plugin: Some("telegram".into()),
            level_cap: Some("2".into()),
            ..Default::default()
        };
        let i = GatewayInstance::from_params(&p, None).unwrap();
        assert_eq!(i.level_cap, SandboxLevel::IsolatedDev);
        assert_eq!(i.agent, "default");
        let p = GatewayInstanceParams {
            id: "home".into(),
            agent: Some("ops".into()),
            ..Default::default()
        };
        let j = GatewayInstance::from_params(&p, Some(&i)).unwrap();
        assert_eq!(
            (j.agent.as_str(), j.level_cap),
            ("ops", SandboxLevel::IsolatedDev)
        );
        let p = GatewayInstanceParams {
            id: "new".into(),
            ..Default::default()
        };
        assert!(GatewayInstance::from_params(&p, None).is_err());
        let p = GatewayInstanceParams {
            id: "home".into(),
            level_cap: Some("LEVEL_9".into()),
            ..Default::default()
        };
        assert!(GatewayInstance::from_params(&p, Some(&i)).is_err());
    }

    #[test]
    fn original_wire_messages_are_off_until_turned_on_and_then_only_from_named_authors_or_chats() {
        let mut d = GatewayInstance::implicit_default();
        assert_eq!(d.level_cap, SandboxLevel::ReadOnly);
        assert!(!d.auto_start);
        assert!(!d.accepts_original_wire("Ada", Some("7")));
        d.legacy = true;
        assert!(!d.accepts_original_wire("Ada", Some("7")), "nobody named");
        d.legacy_authors = vec!["Ada".into()];
        d.legacy_chats = vec!["42".into()];
        assert!(d.accepts_original_wire(" Ada ", None));
        assert!(d.accepts_original_wire("Bob", Some("42")));
        assert!(!d.accepts_original_wire("Bob", Some("7")));
        assert!(!d.accepts_original_wire("", None));
        d.legacy_authors = vec!["a\nb".into()];
        assert!(d.validate().is_err());
    }

    #[test]
    fn own_secrets_are_named_after_the_id() {
        assert_eq!(
            GatewayInstance::own_secret_prefix("tg-home"),
            "GATEWAY_TG_HOME_"
        );
    }
}
