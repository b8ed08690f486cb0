//! Sayri's typed configuration (`sayri.toml`): every key, its type, default and meaning.
//!
//! Pure data and parsing; reading and writing the file is the binary's job. The key table below
//! is the single source of truth: adding a key is one line in the `config_keys!` invocation, and
//! the typed struct, the default, `get`/`set` by `"group.key"`, `config_list` and the TOML reader
//! all follow from it.
//!
//! Rules:
//! * Unknown groups or keys are errors that name the key; they are never ignored.
//! * Values are typed. Setting from text or JSON converts strictly: for a bool the string
//!   `"false"` is `false` (also `no`/`off`/`0`), and a bad value names the key and expected type.
//! * Secret-looking keys are masked when shown ([`mask_value`], [`is_secret`]).
//!
//! ```
//! use sayri_core::domain::config::Config;
//! let mut cfg = Config::from_toml_str("[provider]\nmodel = \"qwen\"\n", "sayri.toml").unwrap();
//! assert_eq!(cfg.provider.model, "qwen");
//! cfg.set_json("provider.native_tools", &serde_json::json!("false")).unwrap();
//! assert!(!cfg.provider.native_tools);
//! ```

use super::profile::valid_agent_id;
use super::text::mask;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;

/// The type of a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `true`/`false`.
    Bool,
    /// A signed 64-bit integer.
    Int,
    /// A 64-bit float.
    Float,
    /// A UTF-8 string.
    Str,
    /// A list of strings.
    StrList,
}

impl ValueType {
    /// Human name used in error messages, e.g. `"a boolean (true/false)"`.
    pub fn describe(self) -> &'static str {
        match self {
            ValueType::Bool => "a boolean (true/false)",
            ValueType::Int => "an integer",
            ValueType::Float => "a number",
            ValueType::Str => "a string",
            ValueType::StrList => "a list of strings",
        }
    }
    /// Short name (`bool`, `int`, `float`, `string`, `list`).
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Bool => "bool",
            ValueType::Int => "int",
            ValueType::Float => "float",
            ValueType::Str => "string",
            ValueType::StrList => "list",
        }
    }
}

/// A configuration value of any type.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    /// Boolean.
    Bool(bool),
    /// Integer.
    Int(i64),
    /// Float.
    Float(f64),
    /// String.
    Str(String),
    /// List of strings.
    StrList(Vec<String>),
}

impl ConfigValue {
    /// The value as JSON.
    pub fn to_json(&self) -> Json {
        match self {
            ConfigValue::Bool(b) => Json::Bool(*b),
            ConfigValue::Int(i) => Json::from(*i),
            ConfigValue::Float(f) => Json::from(*f),
            ConfigValue::Str(s) => Json::String(s.clone()),
            ConfigValue::StrList(l) => Json::from(l.clone()),
        }
    }
    /// The value as TOML.
    pub fn to_toml(&self) -> toml::Value {
        match self {
            ConfigValue::Bool(b) => toml::Value::Boolean(*b),
            ConfigValue::Int(i) => toml::Value::Integer(*i),
            ConfigValue::Float(f) => toml::Value::Float(*f),
            ConfigValue::Str(s) => toml::Value::String(s.clone()),
            ConfigValue::StrList(l) => {
                toml::Value::Array(l.iter().cloned().map(toml::Value::String).collect())
            }
        }
    }
}

impl fmt::Display for ConfigValue {
    /// Plain text: strings unquoted, lists as a JSON array.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigValue::Str(s) => f.write_str(s),
            other => write!(f, "{}", other.to_json()),
        }
    }
}

/// What went wrong reading or changing the configuration. Every message names the key (and the
/// file and line when parsing) and says what is expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// `"group.key"` is not a setting.
    #[error("unknown setting: {key} (run `sayri config list` to see every setting)")]
    UnknownKey {
        /// The key as given.
        key: String,
    },
    /// A value has the wrong type or cannot be converted.
    #[error("invalid value for {key}: expected {expected}, got {got}")]
    BadValue {
        /// `group.key`.
        key: String,
        /// Expected type, e.g. "a boolean (true/false)".
        expected: &'static str,
        /// The offending value, rendered.
        got: String,
    },
    /// The TOML file is malformed or contains a bad entry.
    #[error("{origin}:{line}: {message}; fix or remove that line (your file was not changed)")]
    Parse {
        /// File name (or other origin label) given to the parser.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A Rust type usable as a config value.
pub trait ConfigType: Sized + Clone {
    /// The type tag.
    const TYPE: ValueType;
    /// The literal form used in the key table (`&'static str` for strings, …).
    type Lit;
    /// Builds the default from the table literal.
    fn from_lit(lit: Self::Lit) -> Self;
    /// Wraps as a [`ConfigValue`].
    fn to_value(&self) -> ConfigValue;
    /// Converts from JSON (strict, but accepts text forms such as `"false"` or `"42"`).
    fn from_json(v: &Json) -> Option<Self>;
    /// Converts from a TOML value (strict: the TOML type must match; ints are accepted as floats).
    fn from_toml(v: &toml::Value) -> Option<Self>;
}

/// Parses the text forms of a boolean: `true/false`, `yes/no`, `on/off`, `1/0` (any case).
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

impl ConfigType for bool {
    const TYPE: ValueType = ValueType::Bool;
    type Lit = bool;
    fn from_lit(lit: bool) -> Self {
        lit
    }
    fn to_value(&self) -> ConfigValue {
        ConfigValue::Bool(*self)
    }
    fn from_json(v: &Json) -> Option<Self> {
        match v {
            Json::Bool(b) => Some(*b),
            Json::String(s) => parse_bool(s),
            Json::Number(n) => match n.as_i64() {
                Some(0) => Some(false),
                Some(1) => Some(true),
                _ => None,
            },
            _ => None,
        }
    }
    fn from_toml(v: &toml::Value) -> Option<Self> {
        v.as_bool()
    }
}

impl ConfigType for i64 {
    const TYPE: ValueType = ValueType::Int;
    type Lit = i64;
    fn from_lit(lit: i64) -> Self {
        lit
    }
    fn to_value(&self) -> ConfigValue {
        ConfigValue::Int(*self)
    }
    fn from_json(v: &Json) -> Option<Self> {
        match v {
            Json::Number(n) => n.as_i64(),
            Json::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    fn from_toml(v: &toml::Value) -> Option<Self> {
        v.as_integer()
    }
}

impl ConfigType for f64 {
    const TYPE: ValueType = ValueType::Float;
    type Lit = f64;
    fn from_lit(lit: f64) -> Self {
        lit
    }
    fn to_value(&self) -> ConfigValue {
        ConfigValue::Float(*self)
    }
    fn from_json(v: &Json) -> Option<Self> {
        let f = match v {
            Json::Number(n) => n.as_f64(),
            Json::String(s) => s.trim().parse().ok(),
            _ => None,
        }?;
        f.is_finite().then_some(f)
    }
    fn from_toml(v: &toml::Value) -> Option<Self> {
        match v {
            toml::Value::Float(f) if f.is_finite() => Some(*f),
            toml::Value::Integer(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl ConfigType for String {
    const TYPE: ValueType = ValueType::Str;
    type Lit = &'static str;
    fn from_lit(lit: &'static str) -> Self {
        lit.to_string()
    }
    fn to_value(&self) -> ConfigValue {
        ConfigValue::Str(self.clone())
    }
    fn from_json(v: &Json) -> Option<Self> {
        match v {
            Json::String(s) => Some(s.clone()),
            Json::Number(n) => Some(n.to_string()),
            Json::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
    fn from_toml(v: &toml::Value) -> Option<Self> {
        v.as_str().map(str::to_string)
    }
}

impl ConfigType for Vec<String> {
    const TYPE: ValueType = ValueType::StrList;
    type Lit = &'static [&'static str];
    fn from_lit(lit: &'static [&'static str]) -> Self {
        lit.iter().map(|s| s.to_string()).collect()
    }
    fn to_value(&self) -> ConfigValue {
        ConfigValue::StrList(self.clone())
    }
    /// A JSON array of strings; or a string: `""` → `[]`, a JSON array text → that array,
    /// anything else → a one-element list.
    fn from_json(v: &Json) -> Option<Self> {
        match v {
            Json::Array(items) => items.iter().map(|i| i.as_str().map(String::from)).collect(),
            Json::String(s) if s.trim().is_empty() => Some(Vec::new()),
            Json::String(s) if s.trim_start().starts_with('[') => {
                serde_json::from_str::<Vec<String>>(s).ok()
            }
            Json::String(s) => Some(vec![s.clone()]),
            _ => None,
        }
    }
    fn from_toml(v: &toml::Value) -> Option<Self> {
        v.as_array()?
            .iter()
            .map(|i| i.as_str().map(String::from))
            .collect()
    }
}

/// One row of the key table.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// TOML table, e.g. `provider`.
    pub group: &'static str,
    /// Key inside the table, e.g. `base_url`.
    pub key: &'static str,
    /// Value type.
    pub ty: ValueType,
    /// One-line meaning, with units.
    pub doc: &'static str,
}

impl KeySpec {
    /// `"group.key"`.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.group, self.key)
    }
    /// Whether the value is shown masked (see [`is_secret`]).
    pub fn is_secret(&self) -> bool {
        is_secret(self.group, self.key)
    }
}

/// Word fragments that make a key name secret-looking.
const SECRET_WORDS: &[&str] = &[
    "api_key",
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
];

/// Keys whose values may carry credentials although the name does not say so.
const SECRET_KEYS: &[&str] = &["provider.extra_headers"];

/// Whether `group.key` holds a secret. A key is secret when one of the words `api_key`,
/// `apikey`, `token`, `secret`, `password`, `passwd`, `credential` appears in its name as whole
/// `_`-separated words (so `auth_token` is secret but `history_tokens` is not), or when it is
/// listed as carrying credentials (`provider.extra_headers`, which holds `Authorization: …`).
pub fn is_secret(group: &str, key: &str) -> bool {
    let full = format!("{group}.{key}");
    if SECRET_KEYS.contains(&full.as_str()) {
        return true;
    }
    let padded = format!("_{}_", key.to_ascii_lowercase());
    SECRET_WORDS
        .iter()
        .any(|w| padded.contains(&format!("_{w}_")))
}

/// Masks a value for display: strings via [`mask`], header lists `Name: value` keep the name and
/// mask the value; other types are returned as is.
pub fn mask_value(v: &ConfigValue) -> ConfigValue {
    match v {
        ConfigValue::Str(s) => ConfigValue::Str(mask(s)),
        ConfigValue::StrList(l) => ConfigValue::StrList(
            l.iter()
                .map(|item| match item.split_once(':') {
                    Some((name, value)) => format!("{name}: {}", mask(value.trim())),
                    None => mask(item),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Declares the key table: one line per key `name: Type = default, "doc";` inside its group.
/// Generates one struct per group, [`Config`], [`KEYS`], and get/set by name.
macro_rules! config_keys {
    ($( $group:ident => $gty:ident, $gdoc:literal {
        $( $key:ident : $ty:ty = $def:expr, $doc:literal; )*
    } )*) => {
        $(
            #[doc = $gdoc]
            #[derive(Debug, Clone, PartialEq)]
            pub struct $gty {
                $( #[doc = $doc] pub $key: $ty, )*
            }
            impl Default for $gty {
                fn default() -> Self {
                    $gty { $( $key: <$ty as ConfigType>::from_lit($def), )* }
                }
            }
        )*

        /// The whole configuration, one field per TOML table.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct Config {
            $( #[doc = $gdoc] pub $group: $gty, )*
        }

        /// Every key in documentation order (the order `config_list` shows them in).
        pub const KEYS: &[KeySpec] = &[
            $( $( KeySpec {
                group: stringify!($group),
                key: stringify!($key),
                ty: <$ty as ConfigType>::TYPE,
                doc: $doc,
            }, )* )*
        ];

        impl Config {
            fn get_raw(&self, group: &str, key: &str) -> Option<ConfigValue> {
                match (group, key) {
                    $( $( (stringify!($group), stringify!($key)) =>
                        Some(ConfigType::to_value(&self.$group.$key)), )* )*
                    _ => None,
                }
            }

            fn set_with<F>(&mut self, group: &str, key: &str, conv: F) -> Result<(), ConfigError>
            where
                F: FnOnce(ValueType) -> Result<Conv, ConfigError>,
            {
                match (group, key) {
                    $( $( (stringify!($group), stringify!($key)) => {
                        let conv = conv(<$ty as ConfigType>::TYPE)?;
                        let full = concat!(stringify!($group), ".", stringify!($key));
                        let parsed = match conv {
                            Conv::Json(j) => <$ty as ConfigType>::from_json(&j).ok_or_else(|| {
                                ConfigError::BadValue { key: full.into(), expected: <$ty as ConfigType>::TYPE.describe(), got: j.to_string() }
                            })?,
                            Conv::Toml(t) => <$ty as ConfigType>::from_toml(&t).ok_or_else(|| {
                                ConfigError::BadValue { key: full.into(), expected: <$ty as ConfigType>::TYPE.describe(), got: t.to_string() }
                            })?,
                        };
                        self.$group.$key = parsed;
                        Ok(())
                    } )* )*
                    _ => Err(ConfigError::UnknownKey { key: format!("{group}.{key}") }),
                }
            }
        }
    };
}

enum Conv {
    Json(Json),
    Toml(toml::Value),
}

config_keys! {
    provider => ProviderConfig, "`[provider]`: the OpenAI-compatible chat endpoint." {
        base_url: String = "http://127.0.0.1:11434/v1", "Base URL of the OpenAI-compatible API (…/v1).";
        api_key: String = "", "Bearer token for the provider (secret; masked when shown).";
        model: String = "llama3.2", "Model used when the agent says `default`.";
        system_prompt: String = "You are Sayri, a concise and natural voice assistant. Answer in short, spoken-style sentences.", "Legacy system prompt (kept for compatibility).";
        agent_mode: bool = true, "Legacy switch; the engine always runs as an agent.";
        temperature: f64 = 0.7, "Legacy default sampling temperature (agents carry their own).";
        max_tokens: i64 = 512, "Completion cap when the agent sets none; 0 = omit.";
        stream: bool = true, "Legacy switch; replies are always streamed.";
        timeout: i64 = 120, "Whole-request HTTP timeout, seconds.";
        strip_patterns: String = "<think>.*?</think>, <thought>.*?</thought>", "Comma/newline separated regexes removed from the final reply.";
        connect_timeout: i64 = 10, "TCP/TLS connect timeout, seconds.";
        idle_timeout: i64 = 60, "Longest silence allowed inside a streamed reply, seconds.";
        retries: i64 = 2, "Retries on connect errors, 429 and 5xx before the first token.";
        extra_headers: Vec<String> = &[], "Extra HTTP headers, each \"Name: value\" (secret; masked when shown).";
        native_tools: bool = false, "Use the provider's native tool calls instead of fenced code blocks.";
        context_tokens: i64 = 0, "The model's context window in tokens (prompt + answer); 0 = as the server's model list says, else 4096.";
    }
    stt => SttConfig, "`[stt]`: speech input." {
        mode: String = "wakeword", "always | wakeword | manual | disabled.";
        wake_word: String = "hey sayri", "Comma-separated wake phrases.";
        model_size: String = "base", "Whisper model size.";
        language: String = "es", "Whisper language code, or auto.";
        mic_device: String = "", "Capture device; empty = default.";
        silence_ms: i64 = 500, "End-of-utterance silence, milliseconds (minimum 200).";
        live_transcript: bool = true, "Show partial transcripts while speaking.";
    }
    tts => TtsConfig, "`[tts]`: speech output." {
        enabled: bool = true, "Speak replies.";
        language: String = "es_ES", "Piper voice language key.";
        voice: String = "sharvard", "Piper voice name.";
        quality: String = "medium", "Piper voice quality.";
        speed: f64 = 1.0, "Speaking speed factor (length scale = 1/speed).";
    }
    ui => UiConfig, "`[ui]`: desktop front-ends." {
        orb_size: i64 = 140, "Orb diameter, pixels.";
        orb_position: String = "top-right", "top-right | top-left | bottom-right | bottom-left.";
        autostart: bool = true, "Start Sayri at login.";
        always_on_top: bool = true, "Keep the orb above other windows.";
        bubble_visible: bool = true, "Show the text bubble.";
        default_ui: String = "desktop", "UI launched by default: desktop, orb or a UI plugin id.";
        autostart_mode: String = "ui", "ui | daemon | off.";
        setup_complete: bool = false, "Set when the welcome wizard finished or was skipped.";
    }
    agent => AgentConfig, "`[agent]`: the agent engine." {
        default_agent: String = "default", "Agent used when none is chosen.";
        history_tokens: i64 = 2500, "Token budget for conversation history per request.";
        output_limit: i64 = 65536, "Largest tool output kept per command, bytes.";
    }
    permissions => PermissionsConfig, "`[permissions]`: the permission broker." {
        ask_timeout: i64 = 120, "How long a permission question waits for an answer, seconds (then deny).";
        policy_files: Vec<String> = &["/usr/share/sayri/policies.json", "/etc/sayri/policies.json"], "Extra policy files that can only tighten rules, in order (the system files /usr/share/sayri/policies.json and /etc/sayri/policies.json always apply).";
    }
    sandbox => SandboxSettings, "`[sandbox]`: isolation for levels 1–2." {
        deny_read: Vec<String> = &[], "Extra paths that sandboxed commands may not read.";
    }
}

impl Config {
    /// Splits `"group.key"`; errors name the key.
    fn split(name: &str) -> Result<(&str, &str), ConfigError> {
        name.split_once('.')
            .filter(|(g, k)| !g.is_empty() && !k.is_empty())
            .ok_or_else(|| ConfigError::UnknownKey { key: name.into() })
    }

    /// The key table's row ([`KeySpec`]) for `"group.key"`.
    pub fn spec(name: &str) -> Result<&'static KeySpec, ConfigError> {
        let (g, k) = Self::split(name)?;
        KEYS.iter()
            .find(|s| s.group == g && s.key == k)
            .ok_or_else(|| ConfigError::UnknownKey { key: name.into() })
    }

    /// The current value of `"group.key"`. Errors: [`ConfigError::UnknownKey`].
    pub fn get(&self, name: &str) -> Result<ConfigValue, ConfigError> {
        let (g, k) = Self::split(name)?;
        self.get_raw(g, k)
            .ok_or_else(|| ConfigError::UnknownKey { key: name.into() })
    }

    /// Sets `"group.key"` from JSON (as sent over IPC). Text forms are converted to the key's type:
    /// `"false"`/`"no"`/`"off"`/`"0"` are `false`; `"42"` is an int. Errors name the key and the
    /// expected type; the config is unchanged on error.
    pub fn set_json(&mut self, name: &str, value: &Json) -> Result<ConfigValue, ConfigError> {
        let (g, k) = Self::split(name)?;
        let before = self.clone();
        self.set_with(g, k, |_| Ok(Conv::Json(value.clone())))?;
        if let Err(expected) = self.check(name) {
            let got = self
                .get(name)
                .map(|v| v.to_json().to_string())
                .unwrap_or_default();
            *self = before;
            return Err(ConfigError::BadValue {
                key: name.into(),
                expected,
                got,
            });
        }
        self.get(name)
    }

    /// Range and choice checks beyond the type (e.g. `stt.mode` is one of four words, a
    /// timeout is at least one second). `Err` carries what is expected.
    fn check(&self, name: &str) -> Result<(), &'static str> {
        let one_of = |v: &str, choices: &[&str], expected: &'static str| {
            if choices.contains(&v) {
                Ok(())
            } else {
                Err(expected)
            }
        };
        let range_i = |v: i64, lo: i64, hi: i64, expected: &'static str| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(expected)
            }
        };
        let range_f = |v: f64, lo: f64, hi: f64, expected: &'static str| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(expected)
            }
        };
        match name {
            "provider.base_url" => {
                let u = self.provider.base_url.trim();
                match u.split_once("://") {
                    _ if u.is_empty() => Err("a URL such as http://127.0.0.1:11434/v1"),
                    Some((scheme, _))
                        if !scheme.eq_ignore_ascii_case("http")
                            && !scheme.eq_ignore_ascii_case("https") =>
                    {
                        Err("an http:// or https:// URL")
                    }
                    _ => Ok(()),
                }
            }
            "provider.model" if self.provider.model.trim().is_empty() => Err("a model name"),
            "provider.temperature" => {
                range_f(self.provider.temperature, 0.0, 2.0, "a number from 0 to 2")
            }
            "provider.max_tokens" => range_i(
                self.provider.max_tokens,
                0,
                1_000_000,
                "a token count from 0 (omit) to 1000000",
            ),
            "provider.timeout" => range_i(self.provider.timeout, 1, 86_400, "seconds, at least 1"),
            "provider.connect_timeout" => range_i(
                self.provider.connect_timeout,
                1,
                3_600,
                "seconds, from 1 to 3600",
            ),
            "provider.idle_timeout" => {
                range_i(self.provider.idle_timeout, 1, 86_400, "seconds, at least 1")
            }
            "provider.retries" => range_i(self.provider.retries, 0, 10, "a count from 0 to 10"),
            "provider.context_tokens" if self.provider.context_tokens != 0 => range_i(
                self.provider.context_tokens,
                512,
                100_000_000,
                "0 (ask the server) or a token count of at least 512",
            ),
            "stt.mode" => one_of(
                &self.stt.mode,
                &["always", "wakeword", "manual", "disabled"],
                "one of always, wakeword, manual, disabled",
            ),
            "stt.silence_ms" => range_i(
                self.stt.silence_ms,
                200,
                60_000,
                "milliseconds, from 200 to 60000",
            ),
            "tts.speed" => range_f(self.tts.speed, 0.1, 4.0, "a factor from 0.1 to 4"),
            "ui.orb_size" => range_i(self.ui.orb_size, 40, 1_000, "pixels, from 40 to 1000"),
            "ui.orb_position" => one_of(
                &self.ui.orb_position,
                &["top-right", "top-left", "bottom-right", "bottom-left"],
                "one of top-right, top-left, bottom-right, bottom-left",
            ),
            "ui.autostart_mode" => one_of(
                &self.ui.autostart_mode,
                &["ui", "daemon", "off"],
                "one of ui, daemon, off",
            ),
            "agent.default_agent" => {
                if valid_agent_id(&self.agent.default_agent) {
                    Ok(())
                } else {
                    Err("an agent id (letters, digits, '-' and '_')")
                }
            }
            "agent.history_tokens" => range_i(
                self.agent.history_tokens,
                200,
                1_000_000,
                "a token count of at least 200",
            ),
            "agent.output_limit" => range_i(
                self.agent.output_limit,
                1_024,
                16 * 1024 * 1024,
                "bytes, from 1024 to 16777216",
            ),
            "permissions.ask_timeout" => range_i(
                self.permissions.ask_timeout,
                1,
                86_400,
                "seconds, at least 1",
            ),
            _ => Ok(()),
        }
    }

    /// Sets `"group.key"` from command-line text (same rules as [`Config::set_json`] with a
    /// JSON string).
    pub fn set_text(&mut self, name: &str, text: &str) -> Result<ConfigValue, ConfigError> {
        self.set_json(name, &Json::String(text.to_string()))
    }

    /// Every key with its current value, in [`KEYS`] order.
    pub fn entries(&self) -> Vec<(&'static KeySpec, ConfigValue)> {
        KEYS.iter()
            .filter_map(|s| self.get_raw(s.group, s.key).map(|v| (s, v)))
            .collect()
    }

    /// Parses TOML text over the defaults. `origin` labels errors (usually the file path).
    ///
    /// Errors ([`ConfigError::Parse`] with a 1-based line): malformed TOML, a value outside a
    /// table, an unknown group or key, a value of the wrong type.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        type Spanned<T> = toml::Spanned<T>;
        type Doc =
            BTreeMap<Spanned<String>, Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>>;
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let perr = |offset: usize, message: String| ConfigError::Parse {
            origin: origin.to_string(),
            line: line_of(offset),
            message,
        };
        let doc: Doc = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            let msg = e.message().trim().replace('\n', " ");
            perr(
                offset,
                format!("{msg} (every setting belongs in a table such as [provider])"),
            )
        })?;
        let mut cfg = Config::default();
        for (group, table) in &doc {
            if !KEYS.iter().any(|s| s.group == group.get_ref()) {
                return Err(perr(
                    group.span().start,
                    format!(
                        "unknown table [{}] (known: {})",
                        group.get_ref(),
                        group_names().join(", ")
                    ),
                ));
            }
            for (key, value) in table.get_ref() {
                let name = format!("{}.{}", group.get_ref(), key.get_ref());
                cfg.set_with(group.get_ref(), key.get_ref(), |_| {
                    Ok(Conv::Toml(value.get_ref().clone()))
                })
                .map_err(|e| match e {
                    ConfigError::UnknownKey { .. } => {
                        perr(key.span().start, format!("unknown setting {name}"))
                    }
                    ConfigError::BadValue { expected, got, .. } => perr(
                        value.span().start,
                        format!("{name} must be {expected}, not {got}"),
                    ),
                    other => other,
                })?;
                cfg.check(&name).map_err(|expected| {
                    perr(
                        value.span().start,
                        format!("{name} must be {expected}, not {}", value.get_ref()),
                    )
                })?;
            }
        }
        Ok(cfg)
    }

    /// Renders the keys that differ from their defaults as TOML (a table per group).
    pub fn to_toml_string(&self) -> String {
        let defaults = Config::default();
        let mut root = toml::Table::new();
        for (spec, value) in self.entries() {
            if defaults.get_raw(spec.group, spec.key).as_ref() == Some(&value) {
                continue;
            }
            let table = root
                .entry(spec.group)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(t) = table {
                t.insert(spec.key.to_string(), value.to_toml());
            }
        }
        toml::to_string(&root).unwrap_or_default()
    }
}

/// Group (table) names in order.
pub fn group_names() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for s in KEYS {
        if !out.contains(&s.group) {
            out.push(s.group);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_match_the_table() {
        let c = Config::default();
        assert_eq!(c.provider.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(c.provider.connect_timeout, 10);
        assert_eq!(c.provider.idle_timeout, 60);
        assert_eq!(c.provider.retries, 2);
        assert!(c.provider.extra_headers.is_empty());
        assert!(!c.provider.native_tools);
        assert_eq!(c.agent.default_agent, "default");
        assert_eq!(c.agent.history_tokens, 2500);
        assert_eq!(c.agent.output_limit, 65536);
        assert_eq!(c.permissions.ask_timeout, 120);
        assert_eq!(
            c.permissions.policy_files,
            vec!["/usr/share/sayri/policies.json", "/etc/sayri/policies.json"]
        );
        assert!(c.sandbox.deny_read.is_empty());
        assert_eq!(c.stt.silence_ms, 500);
        assert_eq!(c.tts.speed, 1.0);
        assert!(!c.ui.setup_complete);
        assert_eq!(KEYS.len(), c.entries().len());
    }

    #[test]
    fn false_string_is_false_and_bad_values_name_the_key() {
        let mut c = Config::default();
        assert_eq!(
            c.set_json("ui.autostart", &json!("false")).unwrap(),
            ConfigValue::Bool(false)
        );
        assert!(!c.ui.autostart);
        c.set_text("ui.autostart", "YES").unwrap();
        assert!(c.ui.autostart);
        let err = c.set_json("ui.autostart", &json!("maybe")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("ui.autostart") && msg.contains("boolean"),
            "{msg}"
        );
        assert!(c.ui.autostart, "unchanged on error");
        let err = c.set_text("provider.retries", "2.5").unwrap_err();
        assert!(err.to_string().contains("provider.retries"));
        c.set_text("provider.retries", "5").unwrap();
        assert_eq!(c.provider.retries, 5);
        c.set_json("tts.speed", &json!(1)).unwrap();
        assert_eq!(c.tts.speed, 1.0);
        assert!(matches!(
            c.set_text("provider.nope", "x"),
            Err(ConfigError::UnknownKey { .. })
        ));
        assert!(matches!(c.get("nope"), Err(ConfigError::UnknownKey { .. })));
        c.set_text("provider.extra_headers", "X-A: 1").unwrap();
        assert_eq!(c.provider.extra_headers, vec!["X-A: 1"]);
        c.set_text("provider.extra_headers", r#"["A: 1","B: 2"]"#)
            .unwrap();
        assert_eq!(c.provider.extra_headers.len(), 2);
    }

    #[test]
    fn toml_errors_give_file_and_line() {
        let e = Config::from_toml_str("[provider]\nmodel = \"x\"\nbogus = 1\n", "/c/sayri.toml")
            .unwrap_err();
        assert_eq!(
            e,
            ConfigError::Parse {
                origin: "/c/sayri.toml".into(),
                line: 3,
                message: "unknown setting provider.bogus".into()
            }
        );
        let e = Config::from_toml_str("[ui]\n\nautostart = \"false\"\n", "f").unwrap_err();
        assert!(matches!(e, ConfigError::Parse { line: 3, .. }), "{e}");
        let e = Config::from_toml_str("[stt]\nmode = \n", "f").unwrap_err();
        assert!(matches!(e, ConfigError::Parse { line: 2, .. }), "{e}");
        let e = Config::from_toml_str("\n[nope]\nx=1\n", "f").unwrap_err();
        assert!(matches!(e, ConfigError::Parse { line: 2, .. }), "{e}");
        let e = Config::from_toml_str("model = \"x\"\n", "f").unwrap_err();
        assert!(e.to_string().starts_with("f:1:"), "{e}");
    }

    #[test]
    fn round_trip_writes_only_changes() {
        let mut c = Config::default();
        assert_eq!(c.to_toml_string(), "");
        c.set_text("provider.model", "qwen").unwrap();
        c.set_text("tts.speed", "1.5").unwrap();
        c.set_text("sandbox.deny_read", "/srv/private").unwrap();
        let text = c.to_toml_string();
        let back = Config::from_toml_str(&text, "x").unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn masking() {
        assert!(is_secret("provider", "api_key"));
        assert!(is_secret("x", "auth_token"));
        assert!(is_secret("provider", "extra_headers"));
        assert!(!is_secret("agent", "history_tokens"));
        assert!(!is_secret("provider", "model"));
        assert_eq!(mask(""), "");
        assert_eq!(mask("12345678"), "***");
        assert_eq!(mask("sk-abcdef123456"), "sk-...456");
        assert_eq!(
            mask_value(&ConfigValue::StrList(vec![
                "Authorization: Bearer abcdefghijk".into()
            ])),
            ConfigValue::StrList(vec!["Authorization: Bea...ijk".into()])
        );
    }

    #[test]
    fn values_outside_their_range_or_choices_are_refused_and_nothing_changes() {
        let mut c = Config::default();
        for (key, bad) in [
            ("stt.mode", json!("foo")),
            ("provider.base_url", json!("ftp://x")),
            ("provider.base_url", json!("")),
            ("provider.model", json!(" ")),
            ("provider.temperature", json!(99)),
            ("provider.timeout", json!(0)),
            ("ui.orb_position", json!("middle")),
            ("agent.default_agent", json!("../../etc")),
            ("permissions.ask_timeout", json!(-1)),
        ] {
            let before = c.clone();
            let e = c.set_json(key, &bad).unwrap_err();
            assert!(
                matches!(&e, ConfigError::BadValue { key: k, .. } if k == key),
                "{key}: {e}"
            );
            assert_eq!(c, before, "{key} left unchanged");
        }
        c.set_json(
            "provider.base_url",
            &json!("https://api.example.invalid/v1"),
        )
        .unwrap();
        c.set_json("stt.mode", &json!("manual")).unwrap();
        let e = Config::from_toml_str("[stt]\nmode = \"foo\"\n", "f.toml").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("f.toml:2:") && msg.contains("stt.mode"),
            "{msg}"
        );
    }
}
