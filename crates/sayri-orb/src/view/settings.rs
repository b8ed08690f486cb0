//! The settings view (rows of `config_list`) and the `ui.*` preferences the window follows.

use super::{Request, Tag, ViewModel};
use sayri_protocol::params::ConfigSetParams;
use sayri_protocol::reply::config::ConfigRow;
use serde_json::{Map, Value};

/// One setting as the settings view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingRow {
    /// `group.key`.
    pub key: String,
    /// Current value (masked by the daemon for secrets).
    pub value: Value,
    /// Secret: shown masked, edited in a password field.
    pub is_secret: bool,
    /// `bool`, `int`, `float`, `string` or `list`.
    pub ty: String,
    /// One-line description.
    pub doc: String,
    /// The daemon refused the last change (its message, shown beside the field).
    pub error: Option<String>,
    /// A change was sent and not yet answered.
    pub pending: bool,
}

impl SettingRow {
    /// The value as the field shows it (`a, b` for lists).
    pub fn display_value(&self) -> String {
        match &self.value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", "),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

/// Which screen corner the orb sits in (`ui.orb_position`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OrbCorner {
    /// Top left.
    TopLeft,
    /// Top right (default).
    #[default]
    TopRight,
    /// Bottom left.
    BottomLeft,
    /// Bottom right.
    BottomRight,
}

impl OrbCorner {
    /// Parses `top-right` etc.; anything else is the default.
    pub fn parse(s: &str) -> OrbCorner {
        match s {
            "top-left" => OrbCorner::TopLeft,
            "bottom-left" => OrbCorner::BottomLeft,
            "bottom-right" => OrbCorner::BottomRight,
            _ => OrbCorner::TopRight,
        }
    }
    /// True for the left corners (the card then sits right of the orb).
    pub fn is_left(self) -> bool {
        matches!(self, OrbCorner::TopLeft | OrbCorner::BottomLeft)
    }
    /// True for the bottom corners.
    pub fn is_bottom(self) -> bool {
        matches!(self, OrbCorner::BottomLeft | OrbCorner::BottomRight)
    }
}

/// The window's `ui.*` preferences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UiPrefs {
    /// Orb diameter in pixels (40–1000).
    pub orb_size: i32,
    /// Screen corner.
    pub corner: OrbCorner,
    /// Keep above other windows.
    pub always_on_top: bool,
    /// Show the card beside the orb.
    pub bubble_visible: bool,
}

impl Default for UiPrefs {
    fn default() -> UiPrefs {
        UiPrefs {
            orb_size: 140,
            corner: OrbCorner::TopRight,
            always_on_top: true,
            bubble_visible: true,
        }
    }
}

impl UiPrefs {
    /// Reads the `ui.*` rows; missing or malformed values keep their defaults.
    pub fn from_rows(rows: &[SettingRow]) -> UiPrefs {
        let mut p = UiPrefs::default();
        for r in rows {
            match (r.key.as_str(), &r.value) {
                ("ui.orb_size", v) => {
                    if let Some(n) = v.as_i64().or_else(|| v.as_str()?.parse().ok()) {
                        p.orb_size = n.clamp(40, 1000) as i32;
                    }
                }
                ("ui.orb_position", Value::String(s)) => p.corner = OrbCorner::parse(s),
                ("ui.always_on_top", Value::Bool(b)) => p.always_on_top = *b,
                ("ui.bubble_visible", Value::Bool(b)) => p.bubble_visible = *b,
                _ => {}
            }
        }
        p
    }
}

impl ViewModel {
    pub(super) fn set_settings(&mut self, rows: Vec<ConfigRow>) {
        let before = self.ui();
        self.settings = rows
            .into_iter()
            .map(|r| SettingRow {
                key: format!("{}.{}", r.group, r.key),
                value: r.value,
                is_secret: r.is_secret,
                ty: r.ty,
                doc: r.doc,
                error: None,
                pending: false,
            })
            .collect();
        self.changes.settings = true;
        self.ui_changed(before);
    }

    /// Follows a change of the `ui.*` preferences (the card follows `ui.bubble_visible`).
    fn ui_changed(&mut self, before: UiPrefs) {
        let now = self.ui();
        if now != before {
            self.changes.layout = true;
            if now.bubble_visible != before.bubble_visible {
                self.card_open = now.bubble_visible || !self.permissions.is_empty();
            }
        }
    }

    /// `settings_changed {keys, values}` from any client.
    pub(super) fn settings_changed(&mut self, values: &Map<String, Value>) {
        let before = self.ui();
        for (key, value) in values {
            if let Some(row) = self.settings.iter_mut().find(|r| &r.key == key) {
                row.value = value.clone();
                row.error = None;
                self.changes.settings = true;
            }
        }
        self.ui_changed(before);
    }

    pub(super) fn set_config(&mut self, key: String, value: Value) -> Vec<Request> {
        if let Some(row) = self.settings.iter_mut().find(|r| r.key == key) {
            row.pending = true;
            row.error = None;
            self.changes.settings = true;
        }
        vec![Request::typed(
            Tag::SetConfig { key: key.clone() },
            &ConfigSetParams {
                key,
                group: None,
                value,
            },
        )]
    }

    pub(super) fn setting_stored(&mut self, key: &str, stored: Value) {
        let before = self.ui();
        if let Some(row) = self.settings.iter_mut().find(|r| r.key == key) {
            row.pending = false;
            row.error = None;
            // The reply carries the stored value unmasked; a secret keeps its masked form
            // until `settings_changed` brings it.
            if !row.is_secret {
                row.value = stored;
            }
            self.changes.settings = true;
        }
        self.ui_changed(before);
    }

    pub(super) fn setting_failed(&mut self, key: &str, message: &str) {
        match self.settings.iter_mut().find(|r| r.key == key) {
            Some(row) => {
                row.pending = false;
                row.error = Some(crate::safe_text::visible(message).into_owned());
                self.changes.settings = true;
            }
            None => self.notice(message, true),
        }
    }
}
