//! The fields of a plugin's `manifest.json`, as written by plugin authors (serde types, every
//! field optional), and the rules that give a plugin its kind.
//!
//! A manifest is data written by someone else: nothing in it is ever run or followed except
//! what the loader has checked (`super::confine`). Unknown fields are ignored, so a manifest
//! written for a newer Sayri still loads; a known field of the wrong JSON type makes the
//! plugin broken, with serde's message naming the field's line and column.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `manifest.json` as written. Defaults are applied by the loader, not here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's id (default: its folder's name).
    #[serde(default)]
    pub id: Option<String>,
    /// Display name (default: the id).
    #[serde(default)]
    pub name: Option<String>,
    /// Version text (default `1.0.0`).
    #[serde(default)]
    pub version: Option<String>,
    /// One-line description (default empty).
    #[serde(default)]
    pub description: Option<String>,
    /// Author (default `Sayri Community`).
    #[serde(default)]
    pub author: Option<String>,
    /// `ui`, `gateway`, `service`, `tool` or `mcp`; inferred when absent ([`Manifest::kind`]).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Alias of `type`, used when `type` is absent.
    #[serde(default)]
    pub plugin_type: Option<String>,
    /// The program, relative to the plugin's folder (gateways default to `gateway.py`).
    #[serde(default)]
    pub entrypoint: Option<String>,
    /// How a gateway authorizes the people who write to it.
    #[serde(default)]
    pub authorization: Option<Authorization>,
    /// Names of the vault secrets the plugin needs, each given to it under that name.
    #[serde(default)]
    pub required_secrets: Vec<String>,
    /// Channels a gateway serves; its presence alone marks a gateway.
    #[serde(default)]
    pub channels: Option<Value>,
    /// A UI plugin's description and settings form.
    #[serde(default)]
    pub ui: Option<UiBlock>,
    /// A background service the plugin runs.
    #[serde(default)]
    pub service: Option<ServiceBlock>,
}

/// `authorization` of a manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Authorization {
    /// e.g. `none`, `pairing_otp` (absent: `none`).
    #[serde(default)]
    pub mode: Option<String>,
}

/// `ui` of a manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UiBlock {
    /// `orb`, `character`, `desktop` or `custom` (absent: `desktop`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Free text naming how the plugin draws the card (`cajita-gtk`, `speech-bubble`, …).
    #[serde(default)]
    pub xui_renderer: Option<String>,
    /// The declarative settings form: nodes `{t: text|sub|note|spacer|entry|select|check, …}`,
    /// kept as JSON values for the settings code to read node by node.
    #[serde(default)]
    pub settings: Vec<Value>,
    /// File name of the plugin's settings in the config folder (absent: `<id>.json`); the
    /// loader accepts a plain `*.json` file name only ([`super::Plugin::settings_file_name`]).
    #[serde(default)]
    pub settings_file: Option<String>,
    /// Help text shown next to the plugin.
    #[serde(default)]
    pub sync_instructions: Option<String>,
    /// A link the plugin's chat can be opened at.
    #[serde(default)]
    pub chat_url: Option<String>,
    /// A shell command the original ran for plugins without a form. Never run by this daemon.
    #[serde(default)]
    pub flow_command: Option<String>,
}

/// `service` of a manifest: a background program the daemon supervises.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceBlock {
    /// Whether it starts with the daemon when enabled (absent: true).
    #[serde(default)]
    pub auto_start: Option<bool>,
    /// Whether it is enabled before the person chose (absent: `auto_start`, else true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Key of the enable flag in the plugin's settings file (absent: `enabled`).
    #[serde(default)]
    pub enabled_key: Option<String>,
    /// Label of the settings form's check box for the flag.
    #[serde(default)]
    pub enabled_label: Option<String>,
    /// The service program and its arguments: a script or program inside the plugin's folder.
    #[serde(default)]
    pub start: Option<Vec<String>>,
    /// Run after the supervised program was stopped, to clean up.
    #[serde(default)]
    pub stop: Option<Vec<String>>,
    /// The original's status probe; the daemon's supervisor knows the state instead.
    #[serde(default)]
    pub status: Option<Vec<String>>,
}

/// What a plugin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginKind {
    /// A channel gateway: one process per gateway instance.
    Gateway,
    /// A front-end (a companion, an orb).
    Ui,
    /// A background service.
    Service,
    /// Tools only; nothing is run.
    Tool,
    /// An MCP server description; nothing is run by the plugin loader.
    Mcp,
}

impl PluginKind {
    /// Every kind, in the order their names are listed in messages.
    pub const ALL: [PluginKind; 5] = [
        PluginKind::Ui,
        PluginKind::Gateway,
        PluginKind::Service,
        PluginKind::Tool,
        PluginKind::Mcp,
    ];

    /// The wire name (`gateway`, `ui`, `service`, `tool`, `mcp`).
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Gateway => "gateway",
            PluginKind::Ui => "ui",
            PluginKind::Service => "service",
            PluginKind::Tool => "tool",
            PluginKind::Mcp => "mcp",
        }
    }

    /// The kind a wire name names.
    pub fn parse(s: &str) -> Option<PluginKind> {
        PluginKind::ALL.into_iter().find(|k| k.as_str() == s.trim())
    }
}

impl Manifest {
    /// `authorization.mode`, `none` when absent.
    pub fn auth_mode(&self) -> &str {
        self.authorization
            .as_ref()
            .and_then(|a| a.mode.as_deref())
            .unwrap_or("none")
    }

    /// Whether the service block describes a service (it has a `start` or a `status` command).
    pub fn has_service(&self) -> bool {
        self.service.as_ref().is_some_and(|s| {
            s.start.as_ref().is_some_and(|v| !v.is_empty())
                || s.status.as_ref().is_some_and(|v| !v.is_empty())
        })
    }

    /// The plugin's kind, for id `id`:
    /// 1. `type`, else `plugin_type`, when given (an unknown name is an error);
    /// 2. else `gateway` when `authorization.mode` is not `none`, the id contains `gateway`, or
    ///    there is a `channels` field;
    /// 3. else `ui` when the id starts with `sayri-ui-`, or there is a `ui` object and no service;
    /// 4. else `service` when there is a service;
    /// 5. else `tool`.
    ///
    /// # Errors
    /// The named type is none of the kinds; the text says which names are.
    pub fn kind(&self, id: &str) -> Result<PluginKind, String> {
        if let Some(named) = self.kind.as_deref().or(self.plugin_type.as_deref()) {
            return PluginKind::parse(named).ok_or_else(|| {
                let names: Vec<&str> = PluginKind::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "its type {:?} is not one of {}",
                    named.chars().take(40).collect::<String>(),
                    names.join(", ")
                )
            });
        }
        let kind =
            if self.auth_mode() != "none" || id.contains("gateway") || self.channels.is_some() {
                PluginKind::Gateway
            } else if id.starts_with("sayri-ui-") || (self.ui.is_some() && self.service.is_none()) {
                PluginKind::Ui
            } else if self.has_service() {
                PluginKind::Service
            } else {
                PluginKind::Tool
            };
        Ok(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(json: &str) -> Manifest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_kind_is_inferred_in_the_original_order() {
        let cases = [
            (r#"{"type": "ui", "channels": []}"#, "x", PluginKind::Ui),
            (r#"{"plugin_type": "service"}"#, "x", PluginKind::Service),
            (
                r#"{"type": "tool", "plugin_type": "ui"}"#,
                "x",
                PluginKind::Tool,
            ),
            (
                r#"{"authorization": {"mode": "pairing_otp"}}"#,
                "x",
                PluginKind::Gateway,
            ),
            (
                r#"{"authorization": {"mode": "none"}}"#,
                "x",
                PluginKind::Tool,
            ),
            (r#"{}"#, "my-gateway", PluginKind::Gateway),
            (r#"{"channels": ["matrix"]}"#, "x", PluginKind::Gateway),
            (r#"{}"#, "sayri-ui-clippy", PluginKind::Ui),
            (r#"{"ui": {}}"#, "x", PluginKind::Ui),
            (
                r#"{"ui": {}, "service": {"start": ["s.py"]}}"#,
                "x",
                PluginKind::Service,
            ),
            (
                r#"{"service": {"status": ["s.py"]}}"#,
                "x",
                PluginKind::Service,
            ),
            (r#"{"service": {"stop": ["s.py"]}}"#, "x", PluginKind::Tool),
            (r#"{}"#, "x", PluginKind::Tool),
        ];
        for (json, id, want) in cases {
            assert_eq!(manifest(json).kind(id), Ok(want), "{json} {id}");
        }
    }

    #[test]
    fn an_unknown_type_is_an_error_naming_the_known_ones() {
        let err = manifest(r#"{"type": "rootkit"}"#).kind("x").unwrap_err();
        assert!(err.contains("\"rootkit\""), "{err}");
        assert!(err.contains("gateway"), "{err}");
    }

    #[test]
    fn a_field_of_the_wrong_type_is_refused_and_unknown_fields_are_ignored() {
        let err = serde_json::from_str::<Manifest>(r#"{"name": 5}"#).unwrap_err();
        assert!(err.to_string().contains("expected a string"), "{err}");
        let m = manifest(r#"{"name": "A", "homepage": "https://example.org"}"#);
        assert_eq!(m.name.as_deref(), Some("A"));
    }
}
