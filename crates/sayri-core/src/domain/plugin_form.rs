//! The settings form a plugin's manifest declares (`ui.settings`), as the settings a person can
//! change: each editable node becomes a [`SettingSpec`], checked like a skill's settings.
//!
//! A manifest declares its form as a list of nodes, each with a type `t`:
//!
//! ```text
//! "ui": {
//!   "settings": [
//!     {"t": "note", "text": "Pick the character you like."},          display only
//!     {"t": "select", "id": "character", "key": "character", "label": "Character",
//!      "default": "Clippy", "options": [{"value": "Clippy", "label": "Clippy"}]},
//!     {"t": "check", "key": "sound_effects", "label": "Sounds", "default": true},
//!     {"t": "entry", "key": "nickname", "placeholder": "…", "hint": "…"}
//!   ]
//! }
//! ```
//!
//! Rules:
//! * Editable nodes: `entry` (one line; `secret: true` makes it a password), `select` (one of
//!   its `options`), `check` (on or off), and the names the skills' declarations use (`text`
//!   is *not* one of them here: in a manifest it is a line of display text). Display nodes
//!   (`text`, `sub`, `note`, `spacer`), nodes of a type this Sayri does not know and nodes
//!   without a `key` are not settings.
//! * A key is 1–64 ASCII letters, digits, `_`, `-` or `.`, starting with a letter; a key
//!   declared twice, a choice without options or a default its own checks refuse makes the
//!   whole declaration unusable (the error names the node).
//! * Defaults: the declared one; a `select` without one defaults to its first option and a
//!   `check` to off, as the form shows them. A secret has no default.
//! * The values live in the plugin's settings file, a flat JSON object: [`with_defaults`] is the
//!   file a plugin finds the first time, [`merged`] the file after one setting changed — every
//!   other key, declared or not, is kept as it was.

use crate::domain::skills::settings::{MAX_SETTINGS, SettingKind, SettingSpec};
use serde_json::{Map, Value};

/// Whether `key` can name a setting of a plugin: 1–64 ASCII letters, digits, `_`, `-` or `.`,
/// starting with a letter.
///
/// ```
/// use sayri_core::domain::plugin_form::valid_key;
/// assert!(valid_key("sound_effects"));
/// assert!(valid_key("chatUrl"));
/// assert!(!valid_key("../x"));
/// assert!(!valid_key(""));
/// ```
pub fn valid_key(key: &str) -> bool {
    key.len() <= 64
        && key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The kind of an editable node type, `None` for a display node or an unknown type.
fn node_kind(t: &str) -> Option<SettingKind> {
    Some(match t.trim().to_ascii_lowercase().as_str() {
        "entry" | "string" => SettingKind::Text,
        "textarea" => SettingKind::Textarea,
        "password" | "secret" => SettingKind::Password,
        "number" | "int" | "integer" | "float" => SettingKind::Number,
        "check" | "switch" | "bool" | "boolean" | "toggle" => SettingKind::Toggle,
        "select" | "choice" | "enum" => SettingKind::Choice,
        _ => return None,
    })
}

/// The settings the nodes of a manifest's `ui.settings` declare, in order; empty when none is
/// editable.
///
/// # Errors
/// A sentence naming the node and what is wrong with it (a bad or repeated key, a choice
/// without options, a default its checks refuse, more than [`MAX_SETTINGS`] settings).
///
/// ```
/// use sayri_core::domain::plugin_form::declared;
/// use serde_json::json;
/// let nodes = json!([
///     {"t": "note", "text": "hello"},
///     {"t": "select", "key": "character", "default": "Clippy",
///      "options": [{"value": "Clippy", "label": "Clippy"}, {"value": "Merlin", "label": "Merlin"}]},
///     {"t": "check", "key": "sound_effects", "default": true},
/// ]);
/// let specs = declared(nodes.as_array().unwrap()).unwrap();
/// assert_eq!(specs.len(), 2);
/// assert_eq!(specs[1].default, Some(json!(true)));
/// ```
pub fn declared(nodes: &[Value]) -> Result<Vec<SettingSpec>, String> {
    let mut out: Vec<SettingSpec> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let Some(spec) = one(node).map_err(|e| format!("setting node {}: {e}", i + 1))? else {
            continue;
        };
        if out.iter().any(|s| s.key == spec.key) {
            return Err(format!("setting {} is declared twice", spec.key));
        }
        out.push(spec);
        if out.len() > MAX_SETTINGS {
            return Err(format!("more than {MAX_SETTINGS} settings are declared"));
        }
    }
    Ok(out)
}

/// Reads one node: `None` when it is not an editable setting.
fn one(node: &Value) -> Result<Option<SettingSpec>, String> {
    let Value::Object(m) = node else {
        return Ok(None);
    };
    let Some(kind) = m.get("t").and_then(Value::as_str).and_then(node_kind) else {
        return Ok(None);
    };
    let key = match m.get("key") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(k)) if valid_key(k) => k.clone(),
        Some(other) => {
            return Err(format!(
                "key {other} is not a setting key: use 1–64 ASCII letters, digits, _, - or ., starting with a letter"
            ));
        }
    };
    let secret = kind == SettingKind::Password || m.get("secret") == Some(&Value::Bool(true));
    let kind = if secret && kind == SettingKind::Text {
        SettingKind::Password
    } else {
        kind
    };
    let options = options_of(m, &key)?;
    if kind == SettingKind::Choice && options.is_empty() {
        return Err(format!("{key}: a select needs `options`"));
    }
    let number = |name: &str| {
        m.get(name)
            .and_then(Value::as_f64)
            .filter(|f| f.is_finite())
    };
    let text = |name: &str| {
        m.get(name)
            .and_then(Value::as_str)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let label = text("label");
    let mut spec = SettingSpec {
        label: if label.is_empty() { key.clone() } else { label },
        hint: text("hint"),
        key,
        kind,
        secret,
        default: None,
        options,
        min: number("min"),
        max: number("max"),
        step: number("step"),
    };
    if let (Some(lo), Some(hi)) = (spec.min, spec.max)
        && lo > hi
    {
        return Err(format!("{}: `min` ({lo}) is above `max` ({hi})", spec.key));
    }
    spec.default = match (m.get("default"), kind) {
        _ if secret => None,
        (None | Some(Value::Null), SettingKind::Choice) => {
            spec.options.first().map(|(v, _)| Value::from(v.clone()))
        }
        (None | Some(Value::Null), SettingKind::Toggle) => Some(Value::Bool(false)),
        (None | Some(Value::Null), _) => None,
        (Some(d), _) => Some(
            spec.check(d)
                .map_err(|e| format!("{}: its default is refused: {e}", spec.key))?,
        ),
    };
    Ok(Some(spec))
}

/// The `options` of a select: each `{value, label}` (a text or number value; the label
/// defaults to the value) or a bare text.
fn options_of(m: &Map<String, Value>, key: &str) -> Result<Vec<(String, String)>, String> {
    let Some(list) = m.get("options") else {
        return Ok(Vec::new());
    };
    let Value::Array(list) = list else {
        return Err(format!("{key}: `options` must be a list"));
    };
    list.iter()
        .map(|o| {
            let (value, label) = match o {
                Value::String(s) => (Some(s.clone()), None),
                Value::Object(om) => (
                    match om.get("value") {
                        Some(Value::String(s)) => Some(s.clone()),
                        Some(Value::Number(n)) => Some(n.to_string()),
                        _ => None,
                    },
                    om.get("label").and_then(Value::as_str).map(str::to_string),
                ),
                _ => (None, None),
            };
            let value = value.ok_or_else(|| format!("{key}: every option needs a text `value`"))?;
            let label = label.unwrap_or_else(|| value.clone());
            Ok((value, label))
        })
        .collect()
}

/// The settings file a plugin finds the first time: `existing` (what the file holds, empty
/// when there is none) with every declared default it lacks added.
///
/// ```
/// use sayri_core::domain::plugin_form::{declared, with_defaults};
/// use serde_json::{json, Map};
/// let nodes = json!([{"t": "check", "key": "sound_effects", "default": true},
///                    {"t": "entry", "key": "nickname"}]);
/// let specs = declared(nodes.as_array().unwrap()).unwrap();
/// let file = with_defaults(&specs, &Map::new());
/// assert_eq!(serde_json::Value::Object(file), json!({"sound_effects": true}));
/// ```
pub fn with_defaults(specs: &[SettingSpec], existing: &Map<String, Value>) -> Map<String, Value> {
    let mut out = existing.clone();
    for s in specs {
        if let Some(d) = &s.default
            && !out.contains_key(&s.key)
        {
            out.insert(s.key.clone(), d.clone());
        }
    }
    out
}

/// The settings file after setting `key` to `value` (already checked; `None` puts it back to
/// its default, or removes it when it has none), starting from [`with_defaults`] of
/// `existing`; every other key is kept.
///
/// ```
/// use sayri_core::domain::plugin_form::{declared, merged};
/// use serde_json::{json, Map};
/// let nodes = json!([{"t": "check", "key": "sound_effects", "default": true},
///                    {"t": "entry", "key": "nickname", "default": "Clip"}]);
/// let specs = declared(nodes.as_array().unwrap()).unwrap();
/// let mut file = Map::new();
/// file.insert("window_x".into(), json!(40));
/// let after = merged(&specs, &file, "nickname", Some(json!("Paper")));
/// assert_eq!(serde_json::Value::Object(after),
///            json!({"window_x": 40, "sound_effects": true, "nickname": "Paper"}));
/// ```
pub fn merged(
    specs: &[SettingSpec],
    existing: &Map<String, Value>,
    key: &str,
    value: Option<Value>,
) -> Map<String, Value> {
    let mut out = with_defaults(specs, existing);
    let default = specs
        .iter()
        .find(|s| s.key == key)
        .and_then(|s| s.default.clone());
    match value.or(default) {
        Some(v) => {
            out.insert(key.to_string(), v);
        }
        None => {
            out.remove(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs(nodes: Value) -> Result<Vec<SettingSpec>, String> {
        declared(nodes.as_array().unwrap())
    }

    #[test]
    fn display_nodes_unknown_types_and_nodes_without_a_key_are_not_settings() {
        let s = specs(json!([
            {"t": "text", "key": "looks_like_one", "text": "display text"},
            {"t": "sub", "text": "heading"},
            {"t": "note", "text": "careful", "level": "warn"},
            {"t": "spacer"},
            {"t": "slider", "key": "volume"},
            {"t": "entry", "label": "no key"},
            "not an object",
            {"t": "entry", "key": "nickname"},
        ]))
        .unwrap();
        let keys: Vec<&str> = s.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["nickname"]);
        assert_eq!(s[0].kind, SettingKind::Text);
    }

    #[test]
    fn node_types_become_kinds_and_defaults_follow_the_form() {
        let s = specs(json!([
            {"t": "select", "key": "character", "options": [
                {"value": "Clippy", "label": "📎 Clippy", "desc": "paperclip"}, "Merlin"]},
            {"t": "check", "key": "sound_effects"},
            {"t": "entry", "key": "token", "secret": true, "default": "leaked"},
            {"t": "number", "key": "size", "min": 80, "max": 400, "default": 120},
        ]))
        .unwrap();
        assert_eq!(s[0].kind, SettingKind::Choice);
        assert_eq!(s[0].default, Some(json!("Clippy")), "first option");
        assert_eq!(s[0].options[0].1, "📎 Clippy");
        assert_eq!(s[0].options[1], ("Merlin".into(), "Merlin".into()));
        assert_eq!(s[1].default, Some(json!(false)));
        assert_eq!(s[2].kind, SettingKind::Password);
        assert!(s[2].secret);
        assert_eq!(s[2].default, None, "a secret has no default");
        assert_eq!(s[3].default, Some(json!(120)));
        assert!(s[3].check(&json!(401)).is_err());
    }

    #[test]
    fn bad_declarations_are_refused_naming_the_node() {
        for (nodes, says) in [
            (json!([{"t": "entry", "key": "../x"}]), "not a setting key"),
            (json!([{"t": "entry", "key": 5}]), "not a setting key"),
            (
                json!([{"t": "check", "key": "a"}, {"t": "entry", "key": "a"}]),
                "declared twice",
            ),
            (json!([{"t": "select", "key": "c"}]), "needs `options`"),
            (
                json!([{"t": "select", "key": "c", "options": [{"label": "x"}]}]),
                "text `value`",
            ),
            (
                json!([{"t": "select", "key": "c", "options": ["a"], "default": "b"}]),
                "default is refused",
            ),
            (
                json!([{"t": "check", "key": "c", "default": "perhaps"}]),
                "default is refused",
            ),
            (
                json!([{"t": "number", "key": "n", "min": 5, "max": 1}]),
                "above `max`",
            ),
        ] {
            let e = specs(nodes.clone()).unwrap_err();
            assert!(e.contains(says), "{nodes}: {e}");
            assert!(e.contains("setting node") || e.contains("twice"), "{e}");
        }
        let many: Vec<Value> = (0..=MAX_SETTINGS)
            .map(|i| json!({"t": "check", "key": format!("k{i}")}))
            .collect();
        assert!(declared(&many).unwrap_err().contains("more than"));
    }

    #[test]
    fn a_change_keeps_every_other_key_and_null_goes_back_to_the_default() {
        let s = specs(json!([
            {"t": "select", "key": "character", "default": "Clippy", "options": ["Clippy", "Merlin"]},
            {"t": "check", "key": "sound_effects", "default": true},
            {"t": "entry", "key": "nickname"},
        ]))
        .unwrap();
        let mut file = Map::new();
        file.insert("position".into(), json!([10, 20]));
        file.insert("sound_effects".into(), json!(false));
        let first = with_defaults(&s, &file);
        assert_eq!(
            Value::Object(first.clone()),
            json!({"position": [10, 20], "sound_effects": false, "character": "Clippy"}),
            "a value already in the file is never replaced by a default"
        );
        let after = merged(&s, &first, "character", Some(json!("Merlin")));
        assert_eq!(after["character"], json!("Merlin"));
        assert_eq!(after["position"], json!([10, 20]));
        let back = merged(&s, &after, "character", None);
        assert_eq!(back["character"], json!("Clippy"));
        let nick = merged(&s, &back, "nickname", Some(json!("Paper")));
        assert_eq!(
            merged(&s, &nick, "nickname", None).get("nickname"),
            None,
            "no default: removed"
        );
    }
}
