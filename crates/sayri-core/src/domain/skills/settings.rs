//! Settings a skill declares, so front-ends can show a form for them (`settings_schema`'s
//! `plugin_sections`) and `plugin_settings_set` can check what a person enters.
//!
//! A skill declares them in its `SKILL.md` frontmatter, as a list under `settings`:
//!
//! ```text
//! ---
//! name: weather-brief
//! description: Short weather briefings.
//! settings:
//!   - key: city                 # 1–64 of a–z 0–9 _, starting with a letter
//!     label: City
//!     hint: Used when you do not name one.
//!     default: Madrid
//!   - key: units
//!     kind: choice              # text (default), textarea, password, number, toggle, choice
//!     options: [metric, imperial]   # or [{value: metric, label: Metric}]
//!     default: metric
//!   - key: days
//!     kind: number
//!     min: 1
//!     max: 14
//!   - key: api_key
//!     label: API key
//!     secret: true              # kind password is always secret
//! ---
//! ```
//!
//! The original plugin manifests' node names are accepted as kinds too (`check`, `switch`,
//! `bool` → toggle; `select`, `enum` → choice; `entry` → text).
//!
//! Rules: a value is checked against its declaration and never clamped or truncated (a number
//! outside `min`..`max` is refused); a secret's value is never repeated in an error, never
//! shown (the form sees `***` when one is set) and never put in the model's prompt: it lives in
//! the vault under [`vault_key`], and only commands of agents allowed that secret receive it.

use sayri_protocol::reply::config::{Choice, PluginField};
use serde_json::{Map, Value, json};

/// Most settings one skill may declare.
pub const MAX_SETTINGS: usize = 50;
/// Longest one-line value (text, password, choice), characters.
pub const MAX_LINE_CHARS: usize = 4096;
/// Longest multi-line value (textarea), characters.
pub const MAX_TEXT_CHARS: usize = 65_536;
/// What the form shows for a secret that is set.
pub const MASK: &str = "***";

/// How a setting is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// One line of text.
    Text,
    /// Several lines of text.
    Textarea,
    /// A secret line (always secret).
    Password,
    /// A number, optionally within `min`..`max`.
    Number,
    /// On or off.
    Toggle,
    /// One of the declared options.
    Choice,
}

impl SettingKind {
    /// Reads a declared kind (the original manifests' names included).
    pub fn parse(s: &str) -> Option<SettingKind> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "text" | "entry" | "string" => SettingKind::Text,
            "textarea" => SettingKind::Textarea,
            "password" | "secret" => SettingKind::Password,
            "number" | "int" | "integer" | "float" => SettingKind::Number,
            "toggle" | "check" | "switch" | "bool" | "boolean" => SettingKind::Toggle,
            "choice" | "select" | "enum" => SettingKind::Choice,
            _ => return None,
        })
    }

    /// The form's kind name (`text`, `textarea`, `password`, `number`, `toggle`, `choice`).
    pub fn name(self) -> &'static str {
        match self {
            SettingKind::Text => "text",
            SettingKind::Textarea => "textarea",
            SettingKind::Password => "password",
            SettingKind::Number => "number",
            SettingKind::Toggle => "toggle",
            SettingKind::Choice => "choice",
        }
    }
}

/// One declared setting.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingSpec {
    /// Its key within the skill.
    pub key: String,
    /// What the form calls it (the key when not declared).
    pub label: String,
    /// One sentence of help (may be empty).
    pub hint: String,
    /// How it is entered.
    pub kind: SettingKind,
    /// Kept in the vault, masked in forms, never in the model's prompt.
    pub secret: bool,
    /// The value used while none is set (checked like a value; never a secret's).
    pub default: Option<Value>,
    /// A choice's options: `(value, label)`.
    pub options: Vec<(String, String)>,
    /// A number's lowest value.
    pub min: Option<f64>,
    /// A number's highest value.
    pub max: Option<f64>,
    /// A number's step (for the form only).
    pub step: Option<f64>,
}

/// Whether `key` can name a setting: 1–64 of `a–z 0–9 _`, starting with a letter.
///
/// ```
/// use sayri_core::domain::skills::settings::valid_key;
/// assert!(valid_key("api_key"));
/// assert!(!valid_key("Api-Key"));
/// assert!(!valid_key("1st"));
/// ```
pub fn valid_key(key: &str) -> bool {
    key.len() <= 64
        && key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The vault key holding secret setting `key` of skill `slug`: `SKILL_<SLUG>_<KEY>`, upper
/// case, `-` as `_` — also the name of the environment variable a command gets it as.
///
/// ```
/// use sayri_core::domain::skills::settings::vault_key;
/// assert_eq!(vault_key("weather-brief", "api_key"), "SKILL_WEATHER_BRIEF_API_KEY");
/// ```
pub fn vault_key(slug: &str, key: &str) -> String {
    format!("SKILL_{slug}_{key}")
        .to_ascii_uppercase()
        .replace('-', "_")
}

/// Why a skill's `settings` declaration is refused (the skill's settings cannot be used).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeclarationError {
    /// `settings` is not a list.
    #[error("`settings` must be a list of settings, each with at least a `key`")]
    NotAList,
    /// More than [`MAX_SETTINGS`] settings.
    #[error("`settings` declares {0} settings; at most {MAX_SETTINGS} are allowed")]
    TooMany(usize),
    /// One setting is wrong.
    #[error("setting {n} of `settings`: {source}")]
    Setting {
        /// 1-based position in the list.
        n: usize,
        /// What is wrong with it.
        source: SettingError,
    },
    /// Two settings share a key.
    #[error("setting {0} is declared twice")]
    Twice(String),
}

/// What is wrong with one declared setting, naming its key where there is one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingError {
    /// Not a mapping of fields.
    #[error("write it as fields (`key: …`, `label: …`)")]
    NotFields,
    /// A key outside `[a-z][a-z0-9_]{0,63}`.
    #[error("key {0:?} is not a setting key: use 1–64 of a–z, 0–9 and _, starting with a letter")]
    BadKey(String),
    /// An unknown `kind`.
    #[error(
        "{key}: unknown kind {kind:?} (use text, textarea, password, number, toggle or choice)"
    )]
    UnknownKind {
        /// The setting's key.
        key: String,
        /// The kind as written.
        kind: String,
    },
    /// A `secret` that is not a boolean.
    #[error("{0}: `secret` must be true or false")]
    SecretNotBool(String),
    /// A choice without `options`.
    #[error("{0}: a choice needs `options`")]
    ChoiceWithoutOptions(String),
    /// `min` above `max`.
    #[error("{key}: `min` ({min}) is above `max` ({max})")]
    MinAboveMax {
        /// The setting's key.
        key: String,
        /// Its `min`.
        min: f64,
        /// Its `max`.
        max: f64,
    },
    /// A secret with a `default` (it would sit in `SKILL.md` for anyone to read).
    #[error("{0}: a secret cannot have a default (it would sit in SKILL.md for anyone to read)")]
    SecretDefault(String),
    /// A `default` the setting's own check refuses.
    #[error("its default is refused: {0}")]
    DefaultRefused(ValueRefused),
    /// A text field written as a bare YAML boolean.
    #[error(
        "`{0}` must be text (quote it: YAML reads a bare yes, no, on, off, y or n as true or false)"
    )]
    BoolNotText(&'static str),
    /// A text field of another type.
    #[error("`{0}` must be text")]
    NotText(&'static str),
    /// A number field that is no finite number.
    #[error("`{0}` must be a number")]
    NotANumber(&'static str),
    /// An `{value, label}` option without a text `value`.
    #[error("{0}: every option needs a text `value`")]
    OptionWithoutValue(String),
    /// An option that is neither text, a number nor `{value, label}`.
    #[error("{0}: an option is text or {{value, label}}")]
    BadOption(String),
    /// `options` that are not a list.
    #[error("{0}: `options` must be a list")]
    OptionsNotAList(String),
}

/// A value refused for a setting: what it must be, and what was sent (a secret's value is
/// never repeated, only its length or type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}; got {got}")]
pub struct ValueRefused {
    /// What a value must be ([`SettingSpec::expected`]).
    pub expected: String,
    /// What was sent, shortened, or for a secret its length or type.
    pub got: String,
}

/// The settings a skill's frontmatter declares (`metadata` is [`super::SkillDoc::metadata`]);
/// empty when it declares none.
///
/// # Errors
/// A sentence naming the setting and what is wrong with its declaration (`settings` not a
/// list, a bad or repeated key, an unknown kind, a choice without options, `min` above `max`,
/// a default its own checks refuse, more than [`MAX_SETTINGS`]).
///
/// ```
/// use sayri_core::domain::skills::parse_skill_md;
/// use sayri_core::domain::skills::settings::{declared, SettingKind};
/// let doc = parse_skill_md(b"---\nname: w\nsettings:\n  - key: city\n    default: Lima\n  - key: token\n    secret: true\n---\nbody\n").unwrap();
/// let s = declared(&doc.metadata).unwrap();
/// assert_eq!((s[0].key.as_str(), s[0].kind), ("city", SettingKind::Text));
/// assert!(s[1].secret);
/// ```
pub fn declared(metadata: &Map<String, Value>) -> Result<Vec<SettingSpec>, DeclarationError> {
    let list = match metadata.get("settings") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(DeclarationError::NotAList),
    };
    if list.len() > MAX_SETTINGS {
        return Err(DeclarationError::TooMany(list.len()));
    }
    let mut out: Vec<SettingSpec> = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let spec = one(item).map_err(|source| DeclarationError::Setting { n: i + 1, source })?;
        if out.iter().any(|s| s.key == spec.key) {
            return Err(DeclarationError::Twice(spec.key));
        }
        out.push(spec);
    }
    Ok(out)
}

/// Reads one declared setting.
fn one(item: &Value) -> Result<SettingSpec, SettingError> {
    let Value::Object(m) = item else {
        return Err(SettingError::NotFields);
    };
    let key = field_text(m, "key")?.unwrap_or_default();
    if !valid_key(&key) {
        return Err(SettingError::BadKey(key));
    }
    let kind = match field_text(m, "kind")?
        .or(field_text(m, "type")?)
        .or(field_text(m, "t")?)
    {
        None => SettingKind::Text,
        Some(k) => SettingKind::parse(&k).ok_or_else(|| SettingError::UnknownKind {
            key: key.clone(),
            kind: k.clone(),
        })?,
    };
    let secret = match m.get("secret") {
        None | Some(Value::Null) => kind == SettingKind::Password,
        Some(Value::Bool(b)) => *b || kind == SettingKind::Password,
        Some(_) => return Err(SettingError::SecretNotBool(key)),
    };
    // A secret line is entered as a password (hidden), whatever kind was written.
    let kind = if secret && kind == SettingKind::Text {
        SettingKind::Password
    } else {
        kind
    };
    let options = options_of(m, &key)?;
    if kind == SettingKind::Choice && options.is_empty() {
        return Err(SettingError::ChoiceWithoutOptions(key));
    }
    let (min, max) = (field_number(m, "min")?, field_number(m, "max")?);
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        return Err(SettingError::MinAboveMax {
            key,
            min: lo,
            max: hi,
        });
    }
    let mut spec = SettingSpec {
        label: field_text(m, "label")?
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| key.clone()),
        hint: field_text(m, "hint")?
            .or(field_text(m, "description")?)
            .unwrap_or_default(),
        key,
        kind,
        secret,
        default: None,
        options,
        min,
        max,
        step: field_number(m, "step")?,
    };
    match m.get("default") {
        None | Some(Value::Null) => {}
        Some(_) if spec.secret => return Err(SettingError::SecretDefault(spec.key)),
        Some(d) => {
            let checked = spec.check(d).map_err(SettingError::DefaultRefused)?;
            spec.default = Some(checked);
        }
    }
    Ok(spec)
}

/// A text field of a declared setting (a number is read as its text); `None` when absent.
fn field_text(m: &Map<String, Value>, name: &'static str) -> Result<Option<String>, SettingError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(_)) => Err(SettingError::BoolNotText(name)),
        Some(_) => Err(SettingError::NotText(name)),
    }
}

/// A finite number field of a declared setting; `None` when absent.
fn field_number(m: &Map<String, Value>, name: &'static str) -> Result<Option<f64>, SettingError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.is_finite())
            .map(Some)
            .ok_or(SettingError::NotANumber(name)),
        Some(_) => Err(SettingError::NotANumber(name)),
    }
}

/// The `options` of setting `key` as (value, label) pairs: each written as text, a number or
/// `{value, label}` (the label defaults to the value).
fn options_of(m: &Map<String, Value>, key: &str) -> Result<Vec<(String, String)>, SettingError> {
    Ok(match m.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|o| match o {
                Value::String(s) => Ok((s.clone(), s.clone())),
                Value::Number(n) => Ok((n.to_string(), n.to_string())),
                Value::Object(om) => match om.get("value") {
                    Some(Value::String(v)) => Ok((
                        v.clone(),
                        om.get("label")
                            .and_then(Value::as_str)
                            .unwrap_or(v)
                            .to_string(),
                    )),
                    _ => Err(SettingError::OptionWithoutValue(key.to_string())),
                },
                _ => Err(SettingError::BadOption(key.to_string())),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(SettingError::OptionsNotAList(key.to_string())),
    })
}

impl SettingSpec {
    /// What a value must be, in the words of a refusal.
    pub fn expected(&self) -> String {
        match self.kind {
            SettingKind::Text | SettingKind::Password => {
                format!("one line of text (at most {MAX_LINE_CHARS} characters)")
            }
            SettingKind::Textarea => format!("text (at most {MAX_TEXT_CHARS} characters)"),
            SettingKind::Toggle => "true or false (or on/off, yes/no, 1/0)".into(),
            SettingKind::Choice => {
                let words: Vec<&str> = self.options.iter().map(|(v, _)| v.as_str()).collect();
                format!("one of {}", words.join(", "))
            }
            SettingKind::Number => match (self.min, self.max) {
                (Some(lo), Some(hi)) => format!("a number from {lo} to {hi}"),
                (Some(lo), None) => format!("a number of at least {lo}"),
                (None, Some(hi)) => format!("a number of at most {hi}"),
                (None, None) => "a number".into(),
            },
        }
    }

    /// Checks a value sent for this setting: of the setting's JSON type, or the text a form
    /// input holds (`"on"` for a toggle, `"12"` for a number). Returns the value to store.
    /// Nothing is clamped or truncated.
    ///
    /// # Errors
    /// [`ValueRefused`]: `expected WHAT; got VALUE` (a secret's value is not repeated).
    ///
    /// ```
    /// use sayri_core::domain::skills::parse_skill_md;
    /// use sayri_core::domain::skills::settings::declared;
    /// let doc = parse_skill_md(b"---\nsettings:\n  - {key: days, kind: number, min: 1, max: 14}\n---\n").unwrap();
    /// let days = &declared(&doc.metadata).unwrap()[0];
    /// assert_eq!(days.check(&serde_json::json!("7")).unwrap(), serde_json::json!(7));
    /// assert!(days.check(&serde_json::json!(15)).unwrap_err().to_string().contains("from 1 to 14"));
    /// ```
    pub fn check(&self, sent: &Value) -> Result<Value, ValueRefused> {
        let refuse = || {
            let got = if self.secret {
                match sent {
                    Value::String(s) => format!("a text of {} characters", s.chars().count()),
                    other => json_type(other).to_string(),
                }
            } else {
                let shown = sent.to_string();
                if shown.chars().count() > 80 {
                    format!("{}…", shown.chars().take(80).collect::<String>())
                } else {
                    shown
                }
            };
            ValueRefused {
                expected: self.expected(),
                got,
            }
        };
        match self.kind {
            SettingKind::Toggle => match sent {
                Value::Bool(b) => Ok(Value::Bool(*b)),
                Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => Ok(Value::Bool(true)),
                    "0" | "false" | "no" | "off" => Ok(Value::Bool(false)),
                    _ => Err(refuse()),
                },
                _ => Err(refuse()),
            },
            SettingKind::Number => {
                let n = match sent {
                    Value::Number(n) => Value::Number(n.clone()),
                    Value::String(s) => {
                        let t = s.trim();
                        if let Ok(i) = t.parse::<i64>() {
                            json!(i)
                        } else {
                            match t.parse::<f64>() {
                                Ok(f) if f.is_finite() => json!(f),
                                _ => return Err(refuse()),
                            }
                        }
                    }
                    _ => return Err(refuse()),
                };
                let f = n.as_f64().filter(|f| f.is_finite()).ok_or_else(refuse)?;
                let low = self.min.is_some_and(|lo| f < lo);
                let high = self.max.is_some_and(|hi| f > hi);
                if low || high { Err(refuse()) } else { Ok(n) }
            }
            SettingKind::Choice => match sent {
                Value::String(s) if self.options.iter().any(|(v, _)| v == s) => {
                    Ok(Value::String(s.clone()))
                }
                _ => Err(refuse()),
            },
            SettingKind::Text | SettingKind::Password => match sent {
                Value::String(s)
                    if s.chars().count() <= MAX_LINE_CHARS && !s.contains(['\n', '\r']) =>
                {
                    Ok(Value::String(s.clone()))
                }
                _ => Err(refuse()),
            },
            SettingKind::Textarea => match sent {
                Value::String(s) if s.chars().count() <= MAX_TEXT_CHARS => {
                    Ok(Value::String(s.clone()))
                }
                _ => Err(refuse()),
            },
        }
    }

    /// The form field: `{key, label, hint, kind, save, secret, expected, value, default}` plus
    /// `options` (`[{value, label}]`) for a choice and `min`/`max`/`step` for a number. `value`
    /// is the stored value, else the default (a secret: [`MASK`] when set, else `""`).
    pub fn field(&self, stored: Option<&Value>, secret_set: bool) -> PluginField {
        let value = if self.secret {
            Value::from(if secret_set { MASK } else { "" })
        } else {
            stored
                .cloned()
                .or_else(|| self.default.clone())
                .unwrap_or(Value::Null)
        };
        let number = self.kind == SettingKind::Number;
        PluginField {
            key: self.key.clone(),
            label: self.label.clone(),
            hint: self.hint.clone(),
            kind: self.kind.name().into(),
            save: "now".into(),
            secret: self.secret,
            expected: self.expected(),
            value,
            default: self.default.clone(),
            options: (self.kind == SettingKind::Choice).then(|| {
                self.options
                    .iter()
                    .map(|(v, l)| Choice {
                        value: v.clone(),
                        label: l.clone(),
                    })
                    .collect()
            }),
            min: number.then_some(self.min),
            max: number.then_some(self.max),
            step: number.then_some(self.step),
        }
    }
}

/// The lines appended to a skill's `SKILL.md` when the model reads it: each setting's current
/// value (or default), and for a secret only where it is kept — never its value.
///
/// ```
/// use sayri_core::domain::skills::parse_skill_md;
/// use sayri_core::domain::skills::settings::{declared, model_lines};
/// let doc = parse_skill_md(b"---\nsettings:\n  - {key: city, default: Lima}\n  - {key: token, secret: true}\n---\n").unwrap();
/// let specs = declared(&doc.metadata).unwrap();
/// let text = model_lines("w", &specs, &serde_json::Map::new());
/// assert!(text.contains("city: \"Lima\" (default)"));
/// assert!(text.contains("$SKILL_W_TOKEN"));
/// ```
pub fn model_lines(slug: &str, specs: &[SettingSpec], stored: &Map<String, Value>) -> String {
    if specs.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n\n---\nSettings of this skill (chosen by the person):\n");
    for s in specs {
        if s.secret {
            let var = vault_key(slug, &s.key);
            out.push_str(&format!(
                "- {}: secret, kept in the vault as {var}; a command gets it as the environment variable ${var} when its agent may use that secret. Never ask for its value or write it out.\n",
                s.key
            ));
            continue;
        }
        match (stored.get(&s.key), &s.default) {
            (Some(v), _) => out.push_str(&format!("- {}: {v}\n", s.key)),
            (None, Some(d)) => out.push_str(&format!("- {}: {d} (default)\n", s.key)),
            (None, None) => out.push_str(&format!("- {}: not set\n", s.key)),
        }
    }
    out
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::skills::parse_skill_md;

    fn specs(yaml: &str) -> Result<Vec<SettingSpec>, DeclarationError> {
        let doc = parse_skill_md(format!("---\n{yaml}---\nbody\n").as_bytes()).unwrap();
        declared(&doc.metadata)
    }

    #[test]
    fn bad_declarations_are_refused_naming_the_setting() {
        for (yaml, says) in [
            ("settings: 3\n", "must be a list"),
            ("settings:\n  - key: Bad-Key\n", "not a setting key"),
            ("settings:\n  - {key: a}\n  - {key: a}\n", "declared twice"),
            ("settings:\n  - {key: a, kind: slider}\n", "unknown kind"),
            ("settings:\n  - {key: a, kind: choice}\n", "needs `options`"),
            (
                "settings:\n  - {key: a, kind: number, min: 5, max: 1}\n",
                "above `max`",
            ),
            (
                "settings:\n  - {key: a, kind: number, max: 3, default: 9}\n",
                "default is refused",
            ),
            (
                "settings:\n  - {key: a, secret: true, default: hunter2}\n",
                "cannot have a default",
            ),
        ] {
            let e = specs(yaml).unwrap_err().to_string();
            assert!(e.contains(says), "{yaml}: {e}");
        }
        assert!(specs("name: x\n").unwrap().is_empty());
    }

    #[test]
    fn values_are_checked_by_kind_and_never_clamped() {
        let s = specs(
            "settings:\n  - {key: flag, kind: check}\n  - {key: num, kind: number, min: 0, max: 10}\n  - {key: c, kind: select, options: [{value: a, label: A}, b]}\n  - {key: t}\n  - {key: p, kind: password}\n",
        )
        .unwrap();
        assert_eq!(s[0].check(&json!("on")).unwrap(), json!(true));
        assert!(s[0].check(&json!("maybe")).is_err());
        assert_eq!(s[1].check(&json!("2.5")).unwrap(), json!(2.5));
        assert!(
            s[1].check(&json!(11))
                .unwrap_err()
                .to_string()
                .contains("from 0 to 10")
        );
        assert!(s[1].check(&json!(-1)).is_err(), "no clamping to 0");
        assert_eq!(s[2].check(&json!("b")).unwrap(), json!("b"));
        assert!(
            s[2].check(&json!("z"))
                .unwrap_err()
                .to_string()
                .contains("one of a, b")
        );
        assert!(s[3].check(&json!("two\nlines")).is_err());
        assert!(s[3].check(&json!(5)).is_err(), "no coercion to text");
        assert!(s[4].secret);
        let e = s[4]
            .check(&json!("line\nsecret-value"))
            .unwrap_err()
            .to_string();
        assert!(
            !e.contains("secret-value"),
            "a secret is never repeated: {e}"
        );
        assert_eq!(s[4].field(None, true).value, json!(MASK));
        assert_eq!(s[4].field(None, false).value, json!(""));
        let options = s[2].field(None, false).options.unwrap();
        assert_eq!(options[0].label, "A");
    }
}
