//! Sayri's typed configuration (`sayri.toml`): every key, its type, default, meaning and check.
//!
//! Pure data and parsing; reading and writing the file is the binary's job. The key table below
//! is the single source of truth: adding a key is one line in the `config_keys!` invocation,
//! and that line must name the key's [`Check`] (what the value means beyond its type; a check
//! that does not fit the type does not compile). The typed struct, the default, `get`/`set` by
//! `"group.key"`, `config_list`, the TOML reader and every validation follow from it.
//!
//! Rules:
//! * Unknown groups or keys are errors that name the key; they are never ignored.
//! * Values are typed and never coerced: over IPC ([`Config::set_json`]) a JSON value of the
//!   wrong type is refused (`5` is not a string, `"false"` is not a boolean, `"x"` is not a
//!   list). Command-line text is parsed by the key's type first ([`Config::parse_text`]: for a
//!   boolean `true/false/yes/no/on/off/1/0`, for a list a JSON array).
//! * Every value then passes its key's [`Check`] — when set over IPC or from the command line,
//!   when read from the file (errors carry `file:line`), and in [`Config::problems`] (for
//!   `sayri doctor`). A refusal ([`ConfigError::BadValue`]) names the key and what is expected,
//!   and never repeats a secret value.
//! * Secret-looking keys are masked when shown ([`mask_value`], [`is_secret`]).
//!
//! ```
//! use sayri_core::domain::config::Config;
//! let mut cfg = Config::from_toml_str("[provider]\nmodel = \"qwen\"\n", "sayri.toml").unwrap();
//! assert_eq!(cfg.provider.model, "qwen");
//! cfg.set_json("provider.native_tools", &serde_json::json!(true)).unwrap();
//! assert!(cfg.provider.native_tools);
//! assert!(cfg.set_json("provider.native_tools", &serde_json::json!("false")).is_err());
//! cfg.set_text("provider.native_tools", "off").unwrap();
//! assert!(!cfg.provider.native_tools);
//! ```

pub mod check;
pub mod form;
pub mod locale;

pub use check::Check;
pub use form::{Form, Section};

use super::text::{cut_chars, mask};
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

    /// Strict conversion from JSON: a boolean key takes a JSON boolean, an integer key a JSON
    /// integer, a number key any finite JSON number, a string key a JSON string, a list key a
    /// JSON array of strings. Anything else is `None` (nothing is coerced).
    pub fn from_json(ty: ValueType, v: &Json) -> Option<ConfigValue> {
        match (ty, v) {
            (ValueType::Bool, Json::Bool(b)) => Some(ConfigValue::Bool(*b)),
            (ValueType::Int, Json::Number(n)) => n.as_i64().map(ConfigValue::Int),
            (ValueType::Float, Json::Number(n)) => {
                n.as_f64().filter(|f| f.is_finite()).map(ConfigValue::Float)
            }
            (ValueType::Str, Json::String(s)) => Some(ConfigValue::Str(s.clone())),
            (ValueType::StrList, Json::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .map(ConfigValue::StrList),
            _ => None,
        }
    }

    /// Strict conversion from TOML: the TOML type must match (an integer is accepted for a
    /// number key).
    pub fn from_toml(ty: ValueType, v: &toml::Value) -> Option<ConfigValue> {
        match (ty, v) {
            (ValueType::Bool, toml::Value::Boolean(b)) => Some(ConfigValue::Bool(*b)),
            (ValueType::Int, toml::Value::Integer(i)) => Some(ConfigValue::Int(*i)),
            (ValueType::Float, toml::Value::Float(f)) if f.is_finite() => {
                Some(ConfigValue::Float(*f))
            }
            (ValueType::Float, toml::Value::Integer(i)) => Some(ConfigValue::Float(*i as f64)),
            (ValueType::Str, toml::Value::String(s)) => Some(ConfigValue::Str(s.clone())),
            (ValueType::StrList, toml::Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .map(ConfigValue::StrList),
            _ => None,
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
    #[error("unknown setting: {key}{} (run `sayri config list` to see every setting)", retired_hint(.key))]
    UnknownKey {
        /// The key as given.
        key: String,
    },
    /// A value has the wrong type or does not pass the key's [`Check`].
    #[error("invalid value for {key}: expected {expected}; got {got}{}", detail_suffix(.detail))]
    BadValue {
        /// `group.key`.
        key: String,
        /// What the key takes, e.g. `an integer from 80 to 400 (pixels)`.
        expected: String,
        /// The offending value, rendered as JSON, shortened, masked for secret keys.
        got: String,
        /// What exactly is wrong, when more can be said (`no host`, the regex compiler's
        /// error, `a number where text is needed`).
        detail: Option<String>,
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

fn detail_suffix(detail: &Option<String>) -> String {
    detail
        .as_deref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default()
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
    /// Unwraps a [`ConfigValue`] of this type (`None` for another type).
    fn from_value(v: ConfigValue) -> Option<Self>;
}

/// Parses the text forms of a boolean: `true/false`, `yes/no`, `on/off`, `1/0` (any case).
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

macro_rules! config_type {
    ($ty:ty, $tag:ident, $lit:ty, |$l:ident| $from_lit:expr, |$s:ident| $to:expr) => {
        impl ConfigType for $ty {
            const TYPE: ValueType = ValueType::$tag;
            type Lit = $lit;
            fn from_lit($l: $lit) -> Self {
                $from_lit
            }
            fn to_value(&self) -> ConfigValue {
                let $s = self;
                ConfigValue::$tag($to)
            }
            fn from_value(v: ConfigValue) -> Option<Self> {
                match v {
                    ConfigValue::$tag(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}

config_type!(bool, Bool, bool, |l| l, |s| *s);
config_type!(i64, Int, i64, |l| l, |s| *s);
config_type!(f64, Float, f64, |l| l, |s| *s);
config_type!(String, Str, &'static str, |l| l.to_string(), |s| s.clone());
config_type!(
    Vec<String>,
    StrList,
    &'static [&'static str],
    |l| l.iter().map(|s| s.to_string()).collect(),
    |s| s.clone()
);

/// One row of the key table.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// TOML table, e.g. `provider`.
    pub group: &'static str,
    /// Key inside the table, e.g. `base_url`.
    pub key: &'static str,
    /// Value type.
    pub ty: ValueType,
    /// What the value means beyond its type; enforced everywhere a value enters.
    pub check: Check,
    /// How a settings form offers it (section, label, step, restart).
    pub form: Form,
    /// One-line meaning, with units.
    pub doc: &'static str,
}

/// Longest rendering of a refused value in a message, in characters.
const SHOWN_VALUE_CHARS: usize = 60;

impl KeySpec {
    /// `"group.key"`.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.group, self.key)
    }
    /// Whether the value is shown masked (see [`is_secret`]).
    pub fn is_secret(&self) -> bool {
        is_secret(self.group, self.key)
    }
    /// What a value of this key must be ([`Check::expected`]).
    pub fn expected(&self) -> String {
        self.check.expected()
    }

    /// A refused value rendered for a message: JSON, masked for secret keys, cut after
    /// [`SHOWN_VALUE_CHARS`] characters with the full length added.
    fn shown(&self, v: &Json) -> String {
        let v = if self.is_secret() {
            match v {
                Json::String(s) => Json::String(mask(s)),
                Json::Array(_) | Json::Object(_) => Json::String("(hidden)".into()),
                other => other.clone(),
            }
        } else {
            v.clone()
        };
        let text = v.to_string();
        let n = text.chars().count();
        if n <= SHOWN_VALUE_CHARS {
            text
        } else {
            format!("{}… ({n} characters)", cut_chars(&text, SHOWN_VALUE_CHARS))
        }
    }

    fn refuse(&self, got: &Json, detail: Option<String>) -> ConfigError {
        ConfigError::BadValue {
            key: self.full_name(),
            expected: self.expected(),
            got: self.shown(got),
            detail,
        }
    }

    /// Converts a JSON value strictly to this key's type and runs its [`Check`].
    ///
    /// # Errors
    /// [`ConfigError::BadValue`] naming the key, what it expects and what is wrong.
    pub fn value_from_json(&self, v: &Json) -> Result<ConfigValue, ConfigError> {
        let value = ConfigValue::from_json(self.ty, v)
            .ok_or_else(|| self.refuse(v, Some(wrong_type(self.ty, v))))?;
        self.validate(&value)?;
        Ok(value)
    }

    /// Converts a value a client sent (`config_set`, `settings_save`) to this key's type, then
    /// runs its [`Check`]. Only two conversions are made, both exact:
    ///
    /// * **Text for a list** (not starting with `[`): commas and line breaks separate the
    ///   entries, each trimmed; blank entries are dropped, so `""` empties the list. Every entry
    ///   must then pass the key's check, else the whole value is refused (an entry that itself
    ///   contains a comma must be sent as a JSON array). Text starting with `[` is read as a
    ///   JSON array of strings.
    /// * **A number for a text key**: its decimal text (`8080` → `"8080"`, `0.5` → `"0.5"`);
    ///   a number written with an exponent is refused.
    ///
    /// Any other value of the wrong JSON type is refused naming the key, as by
    /// [`KeySpec::value_from_json`].
    ///
    /// # Errors
    /// [`ConfigError::BadValue`] naming the key, what it expects and what is wrong.
    pub fn value_from_client(&self, v: &Json) -> Result<ConfigValue, ConfigError> {
        match (self.ty, v) {
            (ValueType::StrList, Json::String(text)) if text.trim_start().starts_with('[') => {
                self.value_from_json(&self.json_from_text(text)?)
            }
            (ValueType::StrList, Json::String(text)) => {
                let entries: Vec<&str> = text
                    .split([',', '\n'])
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .collect();
                self.value_from_json(&Json::from(entries))
                    .map_err(|e| match e {
                        ConfigError::BadValue { detail, .. } => self.refuse(
                            v,
                            Some(format!(
                                "{}; commas and line breaks separate entries, so send an entry that contains a comma as a JSON array",
                                detail.unwrap_or_else(|| "an entry is refused".into())
                            )),
                        ),
                        other => other,
                    })
            }
            (ValueType::Str, Json::Number(n)) => {
                let text = n.to_string();
                if text.contains(['e', 'E']) {
                    return Err(self.refuse(
                        v,
                        Some(
                            "a number with an exponent where text is needed; send it as text"
                                .into(),
                        ),
                    ));
                }
                self.value_from_json(&Json::String(text))
            }
            _ => self.value_from_json(v),
        }
    }

    /// Runs this key's [`Check`] on a value of its type.
    ///
    /// # Errors
    /// [`ConfigError::BadValue`] naming the key, what it expects and what is wrong.
    pub fn validate(&self, value: &ConfigValue) -> Result<(), ConfigError> {
        self.check
            .validate(value)
            .map_err(|detail| self.refuse(&value.to_json(), Some(detail.to_string())))
    }

    /// Parses command-line text by this key's type (booleans `true/false/yes/no/on/off/1/0`,
    /// numbers as written, lists as a JSON array of strings, strings as they are). The result
    /// still has to pass [`KeySpec::value_from_json`].
    ///
    /// # Errors
    /// [`ConfigError::BadValue`] when the text is not of the key's type.
    pub fn json_from_text(&self, text: &str) -> Result<Json, ConfigError> {
        let got = Json::String(text.to_string());
        let parsed = match self.ty {
            ValueType::Bool => parse_bool(text).map(Json::Bool),
            ValueType::Int => text.trim().parse::<i64>().ok().map(Json::from),
            ValueType::Float => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(Json::from),
            ValueType::Str => Some(got.clone()),
            ValueType::StrList => {
                let list = serde_json::from_str::<Vec<String>>(text.trim()).ok();
                return list.map(Json::from).ok_or_else(|| {
                    self.refuse(
                        &got,
                        Some("write the list as a JSON array of strings; [] empties it".into()),
                    )
                });
            }
        };
        parsed.ok_or_else(|| self.refuse(&got, Some(format!("not {}", self.ty.describe()))))
    }
}

/// Why a JSON value does not have type `ty`, e.g. `a number where a string is needed`.
fn wrong_type(ty: ValueType, v: &Json) -> String {
    let kind = match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if n.is_f64() => "a fractional number",
        Json::Number(_) if ty == ValueType::Int => "an integer out of range",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) if ty == ValueType::StrList => "a list with an entry that is not a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    };
    format!("{kind} where {} is needed", ty.describe())
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

/// Declares the key table: one row per key `name: Type = default, check, form, "doc";` inside
/// its group. Generates one struct per group, [`Config`], [`KEYS`], and get/put by name, and
/// asserts at compile time that every key's [`Check`] fits its type.
macro_rules! config_keys {
    ($( $group:ident => $gty:ident, $gdoc:literal {
        $( $key:ident : $ty:ty = $def:expr, $check:expr, $form:expr, $doc:literal; )*
    } )*) => {
        $(
            #[doc = $gdoc]
            #[doc = ""]
            #[doc = "Its `Debug` form hides the value of every secret key ([`is_secret`])."]
            #[derive(Clone, PartialEq)]
            pub struct $gty {
                $( #[doc = $doc] pub $key: $ty, )*
            }
            impl std::fmt::Debug for $gty {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    let mut d = f.debug_struct(stringify!($gty));
                    $(
                        if is_secret(stringify!($group), stringify!($key)) {
                            d.field(stringify!($key), &"(hidden)");
                        } else {
                            d.field(stringify!($key), &self.$key);
                        }
                    )*
                    d.finish()
                }
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
                check: $check,
                form: $form,
                doc: $doc,
            }, )* )*
        ];

        $( $(
            const _: () = assert!(
                Check::fits(&$check, <$ty as ConfigType>::TYPE),
                concat!("the check of ", stringify!($group), ".", stringify!($key), " does not fit its type")
            );
        )* )*

        impl Config {
            fn get_raw(&self, group: &str, key: &str) -> Option<ConfigValue> {
                match (group, key) {
                    $( $( (stringify!($group), stringify!($key)) =>
                        Some(ConfigType::to_value(&self.$group.$key)), )* )*
                    _ => None,
                }
            }

            /// Stores an already checked value; `false` when the key or the type is wrong.
            fn put(&mut self, group: &str, key: &str, value: ConfigValue) -> bool {
                match (group, key) {
                    $( $( (stringify!($group), stringify!($key)) => {
                        match <$ty as ConfigType>::from_value(value) {
                            Some(v) => {
                                self.$group.$key = v;
                                true
                            }
                            None => false,
                        }
                    } )* )*
                    _ => false,
                }
            }
        }
    };
}

use Section::{Assistant, Interface, Llm, Security, SpeechInput, Voice};

const SECONDS_1_TO_A_DAY: Check = Check::Int {
    min: 1,
    max: 86_400,
    unit: "seconds",
};

config_keys! {
    provider => ProviderConfig, "`[provider]`: the OpenAI-compatible chat endpoint." {
        base_url: String = "http://127.0.0.1:11434/v1", Check::HttpUrl,
            Form::new(Llm, "Server URL"),
            "Base URL of the OpenAI-compatible API (…/v1).";
        api_key: String = "", Check::Credential { min: 4 }, Form::new(Llm, "API key"),
            "Bearer token for the provider (secret; masked when shown).";
        model: String = "llama3.2", Check::Line { max: 256, empty: false }, Form::new(Llm, "Model"),
            "Model used when the agent says `default`.";
        temperature: f64 = 0.7, Check::Float { min: 0.0, max: 2.0, unit: "" },
            Form::new(Assistant, "Temperature").step(0.05),
            "Legacy default sampling temperature (agents carry their own).";
        max_tokens: i64 = 512, Check::Int { min: 1, max: 1_000_000, unit: "tokens" },
            Form::new(Assistant, "Answer length limit").step(64.0),
            "Largest answer per request when the agent sets none, tokens (1 to 1000000; there is no 'unlimited' value).";
        stream: bool = true, Check::Flag, Form::new(Assistant, "Stream replies"),
            "Legacy switch; replies are always streamed.";
        timeout: i64 = 120, SECONDS_1_TO_A_DAY, Form::new(Llm, "First-byte timeout").step(5.0),
            "Longest wait for the first byte of an answer, seconds.";
        strip_patterns: String = "<think>.*?</think>, <thought>.*?</thought>", Check::Patterns,
            Form::new(Assistant, "Remove from replies"),
            "Comma/newline separated regexes removed from the final reply.";
        connect_timeout: i64 = 10, Check::Int { min: 1, max: 3_600, unit: "seconds" },
            Form::new(Llm, "Connect timeout"),
            "TCP/TLS connect timeout, seconds.";
        idle_timeout: i64 = 60, SECONDS_1_TO_A_DAY, Form::new(Llm, "Idle timeout").step(5.0),
            "Longest silence allowed inside a streamed reply, seconds.";
        retries: i64 = 2, Check::Int { min: 0, max: 10, unit: "retries" },
            Form::new(Llm, "Retries"),
            "Retries on connect errors, 429 and 5xx before the first token.";
        extra_headers: Vec<String> = &[], Check::Headers, Form::new(Llm, "Extra HTTP headers"),
            "Extra HTTP headers, each \"Name: value\" (secret; masked when shown).";
        native_tools: bool = false, Check::Flag, Form::new(Llm, "Native tool calls"),
            "Use the provider's native tool calls instead of fenced code blocks.";
        context_tokens: i64 = 0,
            Check::IntOrZero { min: 512, max: 100_000_000, unit: "tokens", zero: "ask the server" },
            Form::new(Llm, "Context window").step(512.0),
            "The model's context window in tokens (prompt + answer); 0 = as the server's model list says, else 4096.";
        local_model: String = "", Check::LocalModel, Form::new(Llm, "Local model"),
            "A local model the daemon serves itself and uses instead of base_url: a .gguf path or a name from `sayri models list`; \"\" = off.";
        local_temperature: f64 = 0.0, Check::Float { min: 0.0, max: 2.0, unit: "" },
            Form::new(Llm, "Local model temperature").step(0.05),
            "Sampling temperature for the local model (provider.local_model), used instead of the agent's: 0 picks the likeliest word each time, so a small model gives its best answer every time; raise it for varied answers.";
    }
    stt => SttConfig, "`[stt]`: speech input." {
        mode: String = "wakeword", Check::Choice(&["always", "wakeword", "manual", "disabled"]),
            Form::new(SpeechInput, "Listening mode"),
            "always | wakeword | manual | disabled.";
        wake_word: String = "hey sayri", Check::Line { max: 256, empty: false },
            Form::new(SpeechInput, "Wake word"),
            "Comma-separated wake phrases (removed from the start of a query). The wake word is heard by stt.wake_model: with no model for these phrases, the installed one's phrase is used (`sayri voice status` names it).";
        model_size: String = "base", Check::Name, Form::new(SpeechInput, "Whisper model size"),
            "Whisper model size (tiny, base, small, medium, large-v3), used when stt.whisper_model is auto.";
        language: String = "en", Check::Language, Form::new(SpeechInput, "Language"),
            "Whisper language code, or auto (default: the language of LC_ALL/LANG, else en).";
        mic_device: String = "", Check::Line { max: 4096, empty: true },
            Form::new(SpeechInput, "Microphone"),
            "Capture device: part of its name (`sayri voice status` lists them), empty = default, or file:/path/in.wav to hear a WAV file as the microphone (it plays once each time the microphone opens; live-file:/path/in.wav plays it in real time, as a sound card would), or pipe:/path to read raw 16 kHz mono s16le audio from a FIFO or a file another program writes. A live microphone that stalls, ends, vanishes or delivers only zeros is reported once (`mic` event, `sayri voice status`) and waited for; the loop keeps running.";
        silence_ms: i64 = 500, Check::Int { min: 200, max: 5_000, unit: "milliseconds" },
            Form::new(SpeechInput, "End-of-speech silence").step(100.0),
            "End-of-utterance silence, milliseconds (200 to 5000).";
        live_transcript: bool = true, Check::Flag, Form::new(SpeechInput, "Live transcript"),
            "Show partial transcripts while speaking.";
        whisper_model: String = "auto", Check::Name, Form::new(SpeechInput, "Whisper model"),
            "Whisper model in the voice model store (`sayri models list`), or auto: the stt.model_size model for stt.language (.en for English), else the installed one closest to it.";
        wake_model: String = "auto", Check::Name, Form::new(SpeechInput, "Wake-word model"),
            "Wake-word model in the voice model store (e.g. hey_jarvis_v0.1), or auto: a model for a phrase of stt.wake_word, else hey_jarvis_v0.1 when installed.";
        wake_threshold: f64 = 0.5, Check::Float { min: 0.05, max: 0.99, unit: "" },
            Form::new(SpeechInput, "Wake-word sensitivity threshold").step(0.01),
            "Wake-word score at or above which the phrase counts as heard, 0.05 to 0.99 (lower hears more, and more falsely).";
        activation_timeout_ms: i64 = 5000, Check::Int { min: 1_000, max: 60_000, unit: "milliseconds" },
            Form::new(SpeechInput, "Wait for speech after activation").step(500.0),
            "After the wake word or `listen`, how long to wait for speech before waiting for the wake word again, milliseconds.";
        max_utterance_ms: i64 = 15_000, Check::Int { min: 2_000, max: 60_000, unit: "milliseconds" },
            Form::new(SpeechInput, "Longest utterance").step(500.0),
            "Longest utterance, milliseconds (cut there and transcribed).";
    }
    tts => TtsConfig, "`[tts]`: speech output." {
        enabled: bool = true, Check::Flag, Form::new(Voice, "Speak replies"),
            "Speak replies.";
        language: String = "en_US", Check::Locale, Form::new(Voice, "Voice language"),
            "Piper voice language key (default: from LC_ALL/LANG, else en_US).";
        voice: String = "joe", Check::Name, Form::new(Voice, "Voice"),
            "Piper voice name (default: a voice of tts.language's default).";
        quality: String = "medium", Check::Choice(&["x_low", "low", "medium", "high"]),
            Form::new(Voice, "Voice quality"),
            "Piper voice quality: x_low | low | medium | high.";
        speed: f64 = 1.0, Check::Float { min: 0.5, max: 2.0, unit: "times the normal speed" },
            Form::new(Voice, "Speaking speed").step(0.05),
            "Speaking speed factor, 0.5 to 2 (length scale = 1/speed).";
        piper_voice: String = "auto", Check::Name, Form::new(Voice, "Piper voice model"),
            "Piper voice in the voice model store, or auto: <language>-<voice>-<quality>, else an installed voice of tts.language (else espeak-ng speaks).";
        output_device: String = "", Check::Line { max: 4096, empty: true },
            Form::new(Voice, "Speaker"),
            "Playback device: part of its name (`sayri voice status` lists them), empty = default, or file:/path/out.wav to write speech to a WAV file.";
    }
    ui => UiConfig, "`[ui]`: desktop front-ends." {
        orb_size: i64 = 140, Check::Int { min: 80, max: 400, unit: "pixels" },
            Form::new(Interface, "Orb size").step(10.0),
            "Orb diameter, pixels (80 to 400).";
        orb_position: String = "top-right",
            Check::Choice(&["top-right", "top-left", "bottom-right", "bottom-left"]),
            Form::new(Interface, "Orb position"),
            "top-right | top-left | bottom-right | bottom-left.";
        autostart: bool = true, Check::Flag, Form::new(Interface, "Start at login"),
            "Start Sayri at login.";
        always_on_top: bool = true, Check::Flag, Form::new(Interface, "Always on top"),
            "Keep the orb above other windows.";
        bubble_visible: bool = true, Check::Flag, Form::new(Interface, "Show the text bubble"),
            "Show the text bubble.";
        default_ui: String = "desktop", Check::Name, Form::new(Interface, "Default interface"),
            "UI launched by default: desktop, orb or a UI plugin id.";
        autostart_mode: String = "ui", Check::Choice(&["ui", "daemon", "off"]),
            Form::new(Interface, "What starts at login"),
            "ui | daemon | off.";
        setup_complete: bool = false, Check::Flag, Form::hidden(),
            "Set when the welcome wizard finished or was skipped.";
    }
    agent => AgentConfig, "`[agent]`: the agent engine." {
        default_agent: String = "default", Check::AgentId, Form::new(Assistant, "Default agent"),
            "Agent used when none is chosen.";
        auto_title: bool = true, Check::Flag, Form::new(Assistant, "Title conversations"),
            "Ask the model for a short title after a session's first exchange (one extra model call); false keeps the first words of the request.";
        history_tokens: i64 = 2500, Check::Int { min: 200, max: 1_000_000, unit: "tokens" },
            Form::new(Assistant, "History budget").step(100.0),
            "Token budget for conversation history per request.";
        output_limit: i64 = 65536, Check::Int { min: 1_024, max: 16 * 1024 * 1024, unit: "bytes" },
            Form::new(Assistant, "Command output kept").step(1024.0),
            "Largest tool output kept per command, bytes.";
        delegation_budget_calls: i64 = 24, Check::Int { min: 1, max: 1_000, unit: "model calls" },
            Form::new(Assistant, "Model calls per request"),
            "Most model calls one request may make, its sub-agents' included; then it stops and says so.";
        delegation_budget_tokens: i64 = 250000, Check::Int { min: 1_000, max: 100_000_000, unit: "tokens" },
            Form::new(Assistant, "Tokens per request").step(1000.0),
            "Most tokens (prompt and completion) one request may use, its sub-agents' included; then it stops and says so.";
    }
    memory => MemoryConfig, "`[memory]`: long-term memory (facts recalled on demand; none is in the fixed prompt)." {
        auto_accept: bool = false, Check::Flag, Form::new(Assistant, "Remember without asking"),
            "Store a fact the model proposes (a remember block) without a card, in your own requests only (a gateway's or routine's fact waits for `sayri memory review`); a request that has read outside text (command output, a recalled fact) still asks.";
        recall_tokens: i64 = 300, Check::Int { min: 20, max: 4_000, unit: "tokens" },
            Form::new(Assistant, "Memory recall budget").step(10.0),
            "Most tokens of saved facts one recall (or memory.auto_recall) puts in a request; facts that do not fit are left out whole.";
        auto_recall: bool = false, Check::Flag, Form::new(Assistant, "Recall automatically"),
            "Before the first model call of a turn, add saved facts sharing at least two words (of four letters or more) with the message, within memory.recall_tokens.";
        shared_with_sub_agents: Vec<String> = &[], Check::AgentIds,
            Form::new(Assistant, "Agents whose sub-agents read their memory"),
            "Creator agents whose sub-agents may read their memory (a sub-agent always writes only to its own).";
        ttl_days: i64 = 90, Check::Int { min: 1, max: 3_650, unit: "days" },
            Form::new(Assistant, "Review facts unused for"),
            "Days after which a fact never recalled since is listed by `sayri memory review` (it is never deleted by itself).";
    }
    permissions => PermissionsConfig, "`[permissions]`: the permission broker." {
        ask_timeout: i64 = 120, SECONDS_1_TO_A_DAY,
            Form::new(Security, "Permission question timeout").restart(),
            "How long a permission question waits for an answer, seconds (then deny).";
        policy_files: Vec<String> = &["/usr/share/sayri/policies.json", "/etc/sayri/policies.json"],
            Check::AbsolutePaths { example: "/etc/sayri/team-policies.json" },
            Form::new(Security, "Policy files"),
            "Extra policy files (absolute paths) that can only tighten rules, in order (the system files /usr/share/sayri/policies.json and /etc/sayri/policies.json always apply).";
    }
    lookup => LookupConfig, "`[lookup]`: the web sources of `sayri lookup` (read-only; each asked with a 5 s timeout)." {
        duckduckgo_url: String = "https://api.duckduckgo.com/", Check::HttpUrl,
            Form::new(Assistant, "Instant-answer source"),
            "DuckDuckGo Instant Answer API (`?q=…&format=json`), asked first.";
        wikipedia_url: String = "https://en.wikipedia.org/w/api.php", Check::HttpUrl,
            Form::new(Assistant, "Encyclopedia source"),
            "MediaWiki API searched second (an `en.` host becomes `es.` for a Spanish query).";
        archwiki_url: String = "https://wiki.archlinux.org/api.php", Check::HttpUrl,
            Form::new(Assistant, "Linux wiki source"),
            "MediaWiki API asked third with `opensearch` (ArchWiki).";
    }
    skills => SkillsConfig, "`[skills]`: where `skills_install {slug}` and `skills_search` look for skills." {
        registry_url: String = "", Check::SecureUrl, Form::new(Assistant, "Skills registry"),
            "The index of a skills registry (a JSON document `{\"packages\": [...]}`), e.g. https://skills.example.org/index.json; \"\" = none: skills are installed from a folder or archive only. https:// only (http:// to this machine only).";
        registry_timeout: i64 = 30, Check::Int { min: 1, max: 600, unit: "seconds" },
            Form::new(Assistant, "Skills registry timeout"),
            "Longest a registry search or install may take, index and download together, seconds.";
    }
    sandbox => SandboxSettings, "`[sandbox]`: isolation for levels 1–2." {
        deny_read: Vec<String> = &[], Check::AbsolutePaths { example: "/srv/private" },
            Form::new(Security, "Paths sandboxed commands may not read").restart(),
            "Extra paths (absolute) that sandboxed commands may not read.";
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

    /// Sets `"group.key"` from JSON (as sent over IPC): the JSON type must be the key's type
    /// (nothing is coerced) and the value must pass the key's [`Check`]. Returns the stored
    /// value; the config is unchanged on error.
    ///
    /// # Errors
    /// [`ConfigError::UnknownKey`]; [`ConfigError::BadValue`] naming the key and what it
    /// expects.
    pub fn set_json(&mut self, name: &str, value: &Json) -> Result<ConfigValue, ConfigError> {
        let spec = Self::spec(name)?;
        let v = spec.value_from_json(value)?;
        self.put(spec.group, spec.key, v.clone());
        Ok(v)
    }

    /// Sets `"group.key"` from a value a client sent ([`KeySpec::value_from_client`]).
    ///
    /// # Errors
    /// [`ConfigError::UnknownKey`]; [`ConfigError::BadValue`] naming the key.
    pub fn set_from_client(
        &mut self,
        name: &str,
        value: &Json,
    ) -> Result<ConfigValue, ConfigError> {
        let spec = Self::spec(name)?;
        let v = spec.value_from_client(value)?;
        self.put(spec.group, spec.key, v.clone());
        Ok(v)
    }

    /// Parses command-line text for `"group.key"` into JSON of the key's type (see
    /// [`KeySpec::json_from_text`]); the CLI sends the result as `config_set`'s value.
    ///
    /// # Errors
    /// As [`KeySpec::json_from_text`], or an unknown key.
    pub fn parse_text(name: &str, text: &str) -> Result<Json, ConfigError> {
        Self::spec(name)?.json_from_text(text)
    }

    /// Sets `"group.key"` from command-line text: [`Config::parse_text`], then
    /// [`Config::set_json`].
    ///
    /// # Errors
    /// As those two.
    pub fn set_text(&mut self, name: &str, text: &str) -> Result<ConfigValue, ConfigError> {
        let json = Self::parse_text(name, text)?;
        self.set_json(name, &json)
    }

    /// Every value that does not pass its key's [`Check`], in [`KEYS`] order (empty for a
    /// config read by [`Config::from_toml_str`] or built with the setters; for
    /// `sayri doctor`).
    pub fn problems(&self) -> Vec<ConfigError> {
        self.entries()
            .into_iter()
            .filter_map(|(spec, v)| spec.validate(&v).err())
            .collect()
    }

    /// Every key with its current value, in [`KEYS`] order.
    pub fn entries(&self) -> Vec<(&'static KeySpec, ConfigValue)> {
        KEYS.iter()
            .filter_map(|s| self.get_raw(s.group, s.key).map(|v| (s, v)))
            .collect()
    }

    /// Parses TOML text over the defaults. `origin` labels errors (usually the file path).
    /// Every value passes its key's [`Check`].
    ///
    /// # Errors
    /// [`ConfigError::Parse`] with a 1-based line: text that is not valid TOML, a value outside
    /// a table, an unknown group or key, a value of the wrong type or one its check refuses.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        Self::from_toml_str_over(text, origin, Config::default())
    }

    /// The defaults for a user whose locale is `locale` (e.g. `de_DE.UTF-8`; `None`: unset):
    /// the table's defaults with `stt.language`, `tts.language` and `tts.voice` from
    /// [`locale::speech_defaults`].
    pub fn defaults_for_locale(locale: Option<&str>) -> Config {
        let speech = locale::speech_defaults(locale);
        let mut cfg = Config::default();
        cfg.stt.language = speech.stt_language.into();
        cfg.tts.language = speech.tts_language.into();
        cfg.tts.voice = speech.tts_voice.into();
        cfg
    }

    /// As [`Config::from_toml_str`], with the keys the text does not set taken from `base`
    /// instead of the table's defaults (e.g. [`Config::defaults_for_locale`]).
    ///
    /// # Errors
    /// As [`Config::from_toml_str`].
    pub fn from_toml_str_over(
        text: &str,
        origin: &str,
        base: Config,
    ) -> Result<Config, ConfigError> {
        type Spanned<T> = toml::Spanned<T>;
        type Doc =
            BTreeMap<Spanned<String>, Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>>;
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let perr = |offset: usize, message: String| ConfigError::Parse {
            origin: origin.to_string(),
            line: line_of(offset),
            message,
        };
        let message_of = |e: &toml::de::Error| e.message().trim().replace('\n', " ");
        if let Err(e) = text.parse::<toml::Table>() {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            return Err(perr(offset, format!("not valid TOML: {}", message_of(&e))));
        }
        let doc: Doc = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            perr(
                offset,
                format!(
                    "{} (every setting belongs in a table such as [provider])",
                    message_of(&e)
                ),
            )
        })?;
        let mut cfg = base;
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
                if RETIRED_KEYS.iter().any(|(k, _)| *k == name) {
                    continue;
                }
                let Ok(spec) = Self::spec(&name) else {
                    return Err(perr(key.span().start, format!("unknown setting {name}")));
                };
                let checked = match ConfigValue::from_toml(spec.ty, value.get_ref()) {
                    Some(v) => spec.validate(&v).map(|()| v),
                    None => Err(spec.refuse(
                        &toml_as_json(value.get_ref()),
                        Some(format!(
                            "a TOML {} where {} is needed",
                            value.get_ref().type_str(),
                            spec.ty.describe()
                        )),
                    )),
                };
                let v = checked.map_err(|e| perr(value.span().start, bad_value_line(e)))?;
                cfg.put(spec.group, spec.key, v);
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

/// Settings earlier versions had that nothing reads any more, with what replaced them. A file
/// that still sets one is read as if it did not (so an old `sayri.toml` keeps working); setting
/// one is refused with the replacement.
pub const RETIRED_KEYS: &[(&str, &str)] = &[
    (
        "provider.system_prompt",
        "the system prompt is built from the active agent — `sayri prompt show` prints exactly what is sent; put your own instructions in an agent's system_prompt (`sayri agents edit ID`)",
    ),
    ("provider.agent_mode", "Sayri always runs as an agent"),
];

/// `"; it is no longer used: <why>"` for a retired key, else `""`.
fn retired_hint(key: &str) -> String {
    RETIRED_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, why)| format!("; it is no longer used: {why}"))
        .unwrap_or_default()
}

/// A [`ConfigError::BadValue`] as the message of a file error: `key: expected …; got …`.
fn bad_value_line(e: ConfigError) -> String {
    match e {
        ConfigError::BadValue {
            key,
            expected,
            got,
            detail,
        } => format!(
            "{key} must be {expected}, not {got}{}",
            detail_suffix(&detail)
        ),
        other => other.to_string(),
    }
}

/// A TOML value as JSON, for messages (datetimes become their text).
fn toml_as_json(v: &toml::Value) -> Json {
    serde_json::to_value(v).unwrap_or_else(|_| Json::String(v.to_string()))
}

/// The configuration reference as a Markdown table: every key in [`KEYS`] order with its
/// type, its default (the key table's, before locale defaults) and its meaning. The README's
/// "Configuration reference" section is this text (`sayri config reference` prints it; a test
/// keeps the two equal).
pub fn reference_markdown() -> String {
    let defaults = Config::default();
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("| setting | type | default | meaning |\n|---|---|---|---|\n");
    for (spec, value) in defaults.entries() {
        let shown = format!("`{}`", value.to_json());
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            spec.full_name(),
            spec.ty.name(),
            cell(&shown),
            cell(spec.doc)
        ));
    }
    out
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

    /// The check is part of each table row (a row without one does not compile); this pins
    /// that every row's check fits its type, that every default passes its own check, and that
    /// every check says what it expects.
    #[test]
    fn every_key_has_a_check_that_fits_its_type_and_accepts_its_default() {
        let defaults = Config::default();
        assert!(defaults.problems().is_empty(), "{:?}", defaults.problems());
        for spec in KEYS {
            assert!(spec.check.fits(spec.ty), "{}", spec.full_name());
            assert!(!spec.expected().is_empty(), "{}", spec.full_name());
            let v = defaults.get(&spec.full_name()).unwrap();
            assert_eq!(spec.validate(&v), Ok(()), "{}", spec.full_name());
        }
    }

    #[test]
    fn json_of_the_wrong_type_is_refused_never_coerced() {
        let mut c = Config::default();
        for (key, wrong) in [
            ("ui.autostart", json!("false")),
            ("ui.autostart", json!(0)),
            ("provider.retries", json!("2")),
            ("provider.retries", json!(2.5)),
            ("provider.retries", json!(2.0)),
            ("provider.model", json!(5)),
            ("provider.base_url", json!(true)),
            ("tts.speed", json!("1.5")),
            ("sandbox.deny_read", json!("/srv/private")),
            ("sandbox.deny_read", json!(["/a", 5])),
            ("provider.model", json!(null)),
            ("provider.model", json!({"name": "x"})),
        ] {
            let before = c.clone();
            let e = c.set_json(key, &wrong).unwrap_err();
            let msg = e.to_string();
            assert!(
                matches!(&e, ConfigError::BadValue { key: k, detail: Some(d), .. }
                    if k == key && d.contains("is needed")),
                "{key} {wrong}: {msg}"
            );
            assert!(msg.contains("expected"), "{msg}");
            assert_eq!(c, before, "{key} left unchanged");
        }
        c.set_json("tts.speed", &json!(1)).unwrap();
        assert_eq!(c.tts.speed, 1.0);
    }

    #[test]
    fn command_line_text_is_parsed_by_the_keys_type() {
        let mut c = Config::default();
        c.set_text("ui.autostart", "off").unwrap();
        assert!(!c.ui.autostart);
        c.set_text("ui.autostart", "YES").unwrap();
        assert!(c.ui.autostart);
        let e = c.set_text("ui.autostart", "maybe").unwrap_err().to_string();
        assert!(
            e.contains("ui.autostart") && e.contains("true or false"),
            "{e}"
        );
        let e = c
            .set_text("provider.retries", "2.5")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("provider.retries") && e.contains("integer"),
            "{e}"
        );
        c.set_text("provider.retries", " 5 ").unwrap();
        assert_eq!(c.provider.retries, 5);
        assert!(c.set_text("tts.speed", "NaN").is_err());
        c.set_text("provider.model", "5").unwrap();
        assert_eq!(c.provider.model, "5");
        c.set_text("provider.extra_headers", r#"["A: 1","B: 2"]"#)
            .unwrap();
        assert_eq!(c.provider.extra_headers.len(), 2);
        c.set_text("sandbox.deny_read", "[]").unwrap();
        let e = c
            .set_text("sandbox.deny_read", "/srv/private")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("JSON array") && e.contains("/srv/private"),
            "{e}"
        );
        assert!(matches!(
            c.set_text("provider.nope", "x"),
            Err(ConfigError::UnknownKey { .. })
        ));
        assert!(matches!(c.get("nope"), Err(ConfigError::UnknownKey { .. })));
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
    fn text_that_is_not_toml_is_reported_as_such_with_its_line() {
        let cut = "# notes\n[provider]\nbase_url = \"http:";
        let e = Config::from_toml_str(cut, "/c/sayri.toml").unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ConfigError::Parse { line: 3, .. }), "{msg}");
        assert!(msg.starts_with("/c/sayri.toml:3: not valid TOML"), "{msg}");
    }

    #[test]
    fn round_trip_writes_only_changes() {
        let mut c = Config::default();
        assert_eq!(c.to_toml_string(), "");
        c.set_text("provider.model", "qwen").unwrap();
        c.set_text("tts.speed", "1.5").unwrap();
        c.set_text("sandbox.deny_read", r#"["/srv/private"]"#)
            .unwrap();
        let text = c.to_toml_string();
        let back = Config::from_toml_str(&text, "x").unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn the_debug_form_of_the_settings_hides_every_secret_value() {
        let mut cfg = Config::default();
        cfg.set_json("provider.api_key", &json!("sk-debug-canary-77"))
            .unwrap();
        cfg.set_json(
            "provider.extra_headers",
            &json!(["Authorization: Bearer hdr-canary-88"]),
        )
        .unwrap();
        let shown = format!("{cfg:?}");
        assert!(
            shown.contains("api_key") && shown.contains("(hidden)"),
            "{shown}"
        );
        assert!(!shown.contains("sk-debug-canary-77"), "{shown}");
        assert!(!shown.contains("hdr-canary-88"), "{shown}");
        assert!(
            shown.contains("base_url"),
            "other settings are shown: {shown}"
        );
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
    fn a_refused_secret_is_never_repeated_in_the_message() {
        let mut c = Config::default();
        let e = c
            .set_json("provider.api_key", &json!("sk-live secret-with-space"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("provider.api_key") && !e.contains("secret-with"),
            "{e}"
        );
        let e = c
            .set_json(
                "provider.extra_headers",
                &json!(["Authorization: Bearer sk-live-\u{1}abcdef"]),
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("Authorization") && !e.contains("sk-live"), "{e}");
    }

    #[test]
    fn a_huge_refused_value_is_shortened_in_the_message() {
        let mut c = Config::default();
        let e = c
            .set_json("provider.base_url", &json!("a".repeat(100_000)))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 400 && e.contains("100002 characters"), "{e}");
    }

    #[test]
    fn values_outside_their_range_or_choices_are_refused_and_nothing_changes() {
        let mut c = Config::default();
        for (key, bad) in [
            ("stt.mode", json!("foo")),
            ("provider.base_url", json!("ftp://x")),
            ("provider.base_url", json!("")),
            ("provider.model", json!(" ")),
            ("provider.model", json!("qwen\n")),
            ("provider.temperature", json!(99)),
            ("provider.timeout", json!(0)),
            ("ui.orb_position", json!("middle")),
            ("ui.orb_size", json!(5000)),
            ("stt.silence_ms", json!(150)),
            ("agent.default_agent", json!("../../etc")),
            ("permissions.ask_timeout", json!(-1)),
            ("stt.language", json!("Spanish")),
            ("tts.language", json!("es")),
            ("tts.quality", json!("ultra")),
            ("ui.default_ui", json!("../x")),
            ("provider.extra_headers", json!(["X-A 1"])),
            ("provider.extra_headers", json!(["X-A: 1\r\nX-B: 2"])),
            ("sandbox.deny_read", json!(["srv/private"])),
            ("agent.default_agent", json!("a\u{1b}[31m")),
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
        c.set_json("stt.language", &json!("auto")).unwrap();
        let e = Config::from_toml_str("[stt]\nmode = \"foo\"\n", "f.toml").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("f.toml:2:") && msg.contains("stt.mode"),
            "{msg}"
        );
    }

    #[test]
    fn a_retired_setting_in_an_old_file_is_skipped_and_setting_it_says_what_replaced_it() {
        let c = Config::from_toml_str(
            "[provider]\nsystem_prompt = \"old\"\nagent_mode = true\nmodel = \"m\"\n",
            "f.toml",
        )
        .unwrap();
        assert_eq!(c.provider.model, "m");
        assert!(!c.entries().iter().any(|(s, _)| s.key == "system_prompt"));
        let e = Config::default()
            .set_json("provider.system_prompt", &json!("x"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no longer used") && e.contains("sayri prompt show"),
            "{e}"
        );
    }

    #[test]
    fn speech_languages_default_to_the_locale_and_the_file_wins() {
        let de = Config::defaults_for_locale(Some("de_DE.UTF-8"));
        assert_eq!(
            (de.stt.language.as_str(), de.tts.language.as_str()),
            ("de", "de_DE")
        );
        let c = Config::from_toml_str_over("[tts]\nlanguage = \"es_ES\"\n", "f", de).unwrap();
        assert_eq!(
            (c.stt.language.as_str(), c.tts.language.as_str()),
            ("de", "es_ES")
        );
        let none = Config::defaults_for_locale(None);
        assert_eq!(
            (none.stt.language.as_str(), none.tts.language.as_str()),
            ("en", "en_US")
        );
    }
}
