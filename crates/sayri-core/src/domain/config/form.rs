//! How a settings form offers each key: the form half of a key-table row.
//!
//! Every row of the key table carries a [`Form`] (section, label, step, whether a change needs
//! a restart). Everything else a form shows follows from the row itself: the kind of input and
//! the range or choices from its [`Check`], the hint from its doc line, the masking from
//! [`is_secret`](super::is_secret). [`schema`] builds the whole `settings_schema` answer from
//! [`KEYS`](super::KEYS), and [`form_value`] reads what a form sends back, so a new key appears
//! in every front-end with its checks, and no second list of settings exists.

use super::{Check, Config, ConfigError, ConfigValue, KEYS, KeySpec, ValueType, mask_value};
use sayri_protocol::reply::config::{Choice, SettingsField, SettingsSection};
use serde_json::{Map, Number, Value as Json};

/// A group of fields shown together in a settings form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The chat model endpoint.
    Llm,
    /// How the assistant answers.
    Assistant,
    /// Speech input.
    SpeechInput,
    /// Speech output.
    Voice,
    /// Desktop front-ends.
    Interface,
    /// Permissions and sandbox.
    Security,
    /// Not shown in forms (bookkeeping keys such as `ui.setup_complete`); still settable.
    Hidden,
}

impl Section {
    /// Every shown section, in form order.
    pub const SHOWN: [Section; 6] = [
        Section::Llm,
        Section::Assistant,
        Section::SpeechInput,
        Section::Voice,
        Section::Interface,
        Section::Security,
    ];

    /// The section's id in `settings_schema` (`llm`, `assistant`, `speech_input`, `voice`,
    /// `interface`, `security`; `hidden` is never sent).
    pub fn id(self) -> &'static str {
        match self {
            Section::Llm => "llm",
            Section::Assistant => "assistant",
            Section::SpeechInput => "speech_input",
            Section::Voice => "voice",
            Section::Interface => "interface",
            Section::Security => "security",
            Section::Hidden => "hidden",
        }
    }

    /// Title and one-line subtitle.
    fn titles(self) -> (&'static str, &'static str) {
        match self {
            Section::Llm => (
                "Language model",
                "The OpenAI-compatible server Sayri talks to.",
            ),
            Section::Assistant => (
                "Assistant",
                "How answers are produced and how much is kept.",
            ),
            Section::SpeechInput => ("Speech input", "Microphone, wake word and transcription."),
            Section::Voice => ("Voice", "How replies are spoken."),
            Section::Interface => ("Interface", "The orb and the desktop front-ends."),
            Section::Security => (
                "Security",
                "Permission questions, policies and what sandboxed commands may read.",
            ),
            Section::Hidden => ("", ""),
        }
    }
}

/// The form half of a key-table row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Form {
    /// Where the field is shown.
    pub section: Section,
    /// Short label, e.g. `Orb size`.
    pub label: &'static str,
    /// Step of a number field (`None`: 1 for integers, 0.1 for numbers).
    pub step: Option<f64>,
    /// A change takes effect only after the daemon restarts.
    pub restart: bool,
}

impl Form {
    /// A field labelled `label` in `section`.
    pub const fn new(section: Section, label: &'static str) -> Form {
        Form {
            section,
            label,
            step: None,
            restart: false,
        }
    }
    /// A bookkeeping key not shown in forms.
    pub const fn hidden() -> Form {
        Form::new(Section::Hidden, "")
    }
    /// Sets the step of a number field.
    pub const fn step(mut self, step: f64) -> Form {
        self.step = Some(step);
        self
    }
    /// Marks a key whose change needs a daemon restart.
    pub const fn restart(mut self) -> Form {
        self.restart = true;
        self
    }
}

/// The input a form uses for a key, from its check: `toggle`, `choice`, `number`, `password`
/// (credentials), `textarea` (multi-line text, regex lists), `list` (a list of strings: a JSON
/// array, or text whose entries are separated by commas or line breaks), `text`.
pub fn kind(spec: &KeySpec) -> &'static str {
    match spec.check {
        Check::Flag => "toggle",
        Check::Choice(_) => "choice",
        Check::Int { .. } | Check::IntOrZero { .. } | Check::Float { .. } => "number",
        Check::Credential { .. } => "password",
        Check::Paragraph { .. } | Check::Patterns => "textarea",
        Check::Headers | Check::AbsolutePaths { .. } | Check::AgentIds => "list",
        Check::HttpUrl
        | Check::SecureUrl
        | Check::Line { .. }
        | Check::Name
        | Check::Language
        | Check::Locale
        | Check::AgentId
        | Check::LocalModel => "text",
    }
}

/// One field of `settings_schema`: `key`, `label`, `hint`, `kind`, `save` (`"section"`), `type`,
/// `expected`, `secret`, `restart`, `value` (masked when secret); a number field adds `min`,
/// `max`, `step` and `unit` (one where 0 means something else adds `zero`, what 0 means, and
/// `lowest`, the smallest other value), a choice `options` (`[{value, label}]`),
/// `ui.default_ui` `dynamic_options: "ui_list"`.
pub fn field(spec: &KeySpec, value: &ConfigValue) -> SettingsField {
    let secret = spec.is_secret();
    let shown = if secret {
        mask_value(value)
    } else {
        value.clone()
    };
    let mut f = SettingsField {
        key: spec.full_name(),
        label: spec.form.label.into(),
        hint: spec.doc.into(),
        kind: kind(spec).into(),
        save: "section".into(),
        ty: spec.ty.name().into(),
        expected: spec.expected(),
        secret,
        restart: spec.form.restart,
        value: shown.to_json(),
        min: None,
        max: None,
        step: None,
        unit: None,
        zero: None,
        lowest: None,
        options: None,
        dynamic_options: None,
        asset: None,
    };
    let step = |default: f64| Some(spec.form.step.unwrap_or(default));
    match spec.check {
        Check::Int { min, max, unit } => {
            f.min = Some(min.into());
            f.max = Some(max.into());
            f.step = step(1.0);
            f.unit = Some(unit.into());
        }
        Check::IntOrZero {
            min,
            max,
            unit,
            zero,
        } => {
            // 0 is offered too; `expected` says that 1 to `min - 1` is not.
            f.min = Some(0.into());
            f.max = Some(max.into());
            f.step = step(1.0);
            f.unit = Some(unit.into());
            f.zero = Some(zero.into());
            f.lowest = Some(min.into());
        }
        Check::Float { min, max, unit } => {
            f.min = Number::from_f64(min);
            f.max = Number::from_f64(max);
            f.step = step(0.1);
            f.unit = Some(unit.into());
        }
        Check::Choice(words) => {
            f.options = Some(
                words
                    .iter()
                    .map(|w| Choice {
                        value: w.to_string(),
                        label: w.to_string(),
                    })
                    .collect(),
            );
        }
        _ => {}
    }
    if spec.group == "ui" && spec.key == "default_ui" {
        f.dynamic_options = Some("ui_list".into());
    }
    f
}

/// The `sections` of `settings_schema` for `cfg`: `[{id, title, subtitle, save_label, fields}]`
/// in form order, every key of the table in exactly one section except hidden ones.
pub fn schema(cfg: &Config) -> Vec<SettingsSection> {
    Section::SHOWN
        .iter()
        .map(|&section| {
            let fields = cfg
                .entries()
                .into_iter()
                .filter(|(spec, _)| spec.form.section == section)
                .map(|(spec, v)| field(spec, &v))
                .collect();
            let (title, subtitle) = section.titles();
            SettingsSection {
                id: section.id().into(),
                title: title.into(),
                subtitle: subtitle.into(),
                save_label: "Save".into(),
                fields,
            }
        })
        .collect()
}

/// Whether a secret field's value from a form means "keep the current value": empty (the form
/// never shows the secret), or exactly the masked value the schema showed.
pub fn keeps_secret(spec: &KeySpec, current: &ConfigValue, sent: &Json) -> bool {
    if !spec.is_secret() {
        return false;
    }
    let empty = match sent {
        Json::Null => true,
        Json::String(s) => s.is_empty(),
        Json::Array(a) => a.is_empty(),
        _ => false,
    };
    empty || *sent == mask_value(current).to_json()
}

/// Reads the value a form sends for `spec` and checks it: a JSON value of the key's type, or
/// the text an input holds, parsed by the key's type as `sayri config set` parses it (`"140"` for
/// an integer, `"on"` for a toggle; `"2.5"` for an integer is refused, never truncated); a list
/// also takes text whose entries are separated by commas or line breaks, and a text key a
/// number as its decimal text ([`KeySpec::value_from_client`]). Nothing is clamped: a value out
/// of range is an error.
///
/// # Errors
/// [`ConfigError::BadValue`] naming the key and what it expects.
pub fn form_value(spec: &KeySpec, sent: &Json) -> Result<ConfigValue, ConfigError> {
    let json = match (spec.ty, sent) {
        (ValueType::StrList, Json::String(_)) | (ValueType::Str, Json::Number(_)) => {
            return spec.value_from_client(sent);
        }
        (ValueType::Str, _) | (_, Json::Bool(_) | Json::Number(_) | Json::Array(_)) => sent.clone(),
        (_, Json::String(text)) => spec.json_from_text(text)?,
        _ => sent.clone(),
    };
    spec.value_from_json(&json)
}

/// Every key of the table that a form shows, as `"group.key"`.
pub fn shown_keys() -> Vec<String> {
    KEYS.iter()
        .filter(|s| s.form.section != Section::Hidden)
        .map(KeySpec::full_name)
        .collect()
}

/// `{"g.k": value}` for `keys`, masked when secret (the `values` of `settings_save` and of
/// `settings_changed`).
pub fn masked_values(cfg: &Config, keys: &[String]) -> Map<String, Json> {
    keys.iter()
        .filter_map(|k| {
            let spec = Config::spec(k).ok()?;
            let v = cfg.get(k).ok()?;
            let v = if spec.is_secret() { mask_value(&v) } else { v };
            Some((k.clone(), v.to_json()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_shown_key_is_in_exactly_one_section_with_its_checks_range_and_choices() {
        let cfg = Config::default();
        let sections = serde_json::to_value(schema(&cfg)).unwrap();
        let mut seen = Vec::new();
        for s in sections.as_array().unwrap() {
            for f in s["fields"].as_array().unwrap() {
                let key = f["key"].as_str().unwrap().to_string();
                let spec = Config::spec(&key).unwrap();
                assert!(!f["label"].as_str().unwrap().is_empty(), "{key}");
                assert_eq!(f["hint"], spec.doc);
                match spec.check {
                    Check::Int { min, max, .. } => {
                        assert_eq!(
                            (f["min"].as_i64(), f["max"].as_i64()),
                            (Some(min), Some(max))
                        )
                    }
                    Check::Choice(words) => {
                        assert_eq!(f["options"].as_array().unwrap().len(), words.len(), "{key}")
                    }
                    _ => {}
                }
                seen.push(key);
            }
        }
        let mut want = shown_keys();
        want.sort();
        seen.sort();
        assert_eq!(seen, want);
        assert!(!seen.contains(&"ui.setup_complete".to_string()));
        assert_eq!(seen.len(), KEYS.len() - 1);
    }

    #[test]
    fn secrets_are_masked_in_the_schema() {
        let mut cfg = Config::default();
        cfg.set_json("provider.api_key", &json!("sk-abcdef123456"))
            .unwrap();
        cfg.set_json(
            "provider.extra_headers",
            &json!(["Authorization: Bearer abcdefghijk"]),
        )
        .unwrap();
        let text = serde_json::to_string(&schema(&cfg)).unwrap();
        assert!(!text.contains("abcdef123456") && !text.contains("abcdefghijk"));
        assert!(text.contains("sk-...456"), "{text}");
    }

    #[test]
    fn form_text_is_parsed_by_the_keys_type_and_never_clamped_or_truncated() {
        let spec = |k| Config::spec(k).unwrap();
        assert_eq!(
            form_value(spec("ui.orb_size"), &json!("140")),
            Ok(ConfigValue::Int(140))
        );
        assert_eq!(
            form_value(spec("ui.autostart"), &json!("on")),
            Ok(ConfigValue::Bool(true))
        );
        for (k, v) in [
            ("ui.orb_size", json!(5000)),
            ("ui.orb_size", json!("2.5")),
            ("ui.orb_size", json!(140.5)),
            ("provider.temperature", json!(-3)),
            ("stt.mode", json!("sometimes")),
            ("ui.autostart", json!("maybe")),
        ] {
            assert!(
                matches!(form_value(spec(k), &v), Err(ConfigError::BadValue { .. })),
                "{k} {v}"
            );
        }
        assert_eq!(
            form_value(spec("sandbox.deny_read"), &json!("/srv/a\n\n /srv/b \n")),
            Ok(ConfigValue::StrList(vec!["/srv/a".into(), "/srv/b".into()]))
        );
        assert!(form_value(spec("sandbox.deny_read"), &json!("srv")).is_err());
    }

    #[test]
    fn comma_text_becomes_a_list_only_when_every_entry_passes_and_a_number_becomes_text() {
        let spec = |k| Config::spec(k).unwrap();
        assert_eq!(
            form_value(spec("sandbox.deny_read"), &json!("/tmp/a, /tmp/b,")),
            Ok(ConfigValue::StrList(vec!["/tmp/a".into(), "/tmp/b".into()]))
        );
        assert_eq!(
            form_value(spec("provider.extra_headers"), &json!("X-A: 1,X-B: 2")),
            Ok(ConfigValue::StrList(vec!["X-A: 1".into(), "X-B: 2".into()]))
        );
        assert_eq!(
            form_value(spec("sandbox.deny_read"), &json!("")),
            Ok(ConfigValue::StrList(vec![]))
        );
        for (k, v) in [
            ("sandbox.deny_read", json!("/tmp/a,relative")),
            ("permissions.policy_files", json!("/etc/a.json,b.json")),
            ("provider.extra_headers", json!("Accept: a, b")),
            ("provider.model", json!(true)),
            ("provider.model", json!(1e300)),
        ] {
            match form_value(spec(k), &v) {
                Err(ConfigError::BadValue { key, .. }) => assert_eq!(key, k),
                other => panic!("{k} {v}: {other:?}"),
            }
        }
        assert_eq!(
            form_value(spec("provider.model"), &json!(8080)),
            Ok(ConfigValue::Str("8080".into()))
        );
    }

    #[test]
    fn an_empty_or_masked_secret_keeps_the_current_value() {
        let spec = Config::spec("provider.api_key").unwrap();
        let current = ConfigValue::Str("sk-abcdef123456".into());
        assert!(keeps_secret(spec, &current, &json!("")));
        assert!(keeps_secret(spec, &current, &json!("sk-...456")));
        assert!(!keeps_secret(spec, &current, &json!("sk-new-key-0000")));
        let model = Config::spec("provider.model").unwrap();
        assert!(!keeps_secret(
            model,
            &ConfigValue::Str("x".into()),
            &json!("")
        ));
    }
}
