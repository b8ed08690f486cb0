//! The settings view, driven by `config_list` / `config_set` / `settings_changed`: a switch for
//! booleans, a text field for everything else (a password field for secrets), and the daemon's
//! validation error right below the field it is about.

use super::conversation::text_label;
use super::permissions::ActionSink;
use crate::view::{Action, SettingRow};
use gtk::prelude::*;
use serde_json::{Value, json};
use std::cell::Cell;
use std::rc::Rc;

enum Editor {
    Switch(gtk::Switch),
    Text(gtk::Entry),
    Secret(gtk::PasswordEntry),
}

struct RowWidgets {
    key: String,
    editor: Editor,
    error: gtk::Label,
}

/// The settings rows on screen, built once per key set and updated in place.
#[derive(Default)]
pub struct SettingsView {
    rows: Vec<RowWidgets>,
    /// Set while the view writes a value into a widget, so the change is not sent back.
    updating: Rc<Cell<bool>>,
}

/// The value to send for `text` typed into a field of type `ty`: lists are split on commas,
/// everything else is sent as text (the daemon converts and validates it).
pub fn typed_value(ty: &str, text: &str) -> Value {
    if ty == "list" {
        let items: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        return json!(items);
    }
    json!(text)
}

fn build_row(
    grid: &gtk::Grid,
    line: i32,
    row: &SettingRow,
    sink: &ActionSink,
    updating: &Rc<Cell<bool>>,
) -> RowWidgets {
    let name = text_label(&row.key, &[]);
    name.set_selectable(false);
    name.set_tooltip_text(Some(&row.doc));
    grid.attach(&name, 0, line, 1, 1);
    let a11y = if row.doc.is_empty() {
        row.key.clone()
    } else {
        format!("{} — {}", row.key, row.doc)
    };
    let editor = match (row.ty.as_str(), row.is_secret) {
        ("bool", _) => {
            let sw = gtk::Switch::builder().halign(gtk::Align::Start).build();
            let (sink, key, up) = (sink.clone(), row.key.clone(), updating.clone());
            sw.connect_state_set(move |_, on| {
                if !up.get() {
                    sink(Action::SetConfig {
                        key: key.clone(),
                        value: json!(on),
                    });
                }
                gtk::glib::Propagation::Proceed
            });
            grid.attach(&sw, 1, line, 1, 1);
            Editor::Switch(sw)
        }
        (_, true) => {
            let e = gtk::PasswordEntry::builder()
                .show_peek_icon(true)
                .placeholder_text("unchanged — type a new value, Enter")
                .hexpand(true)
                .build();
            let (sink, key) = (sink.clone(), row.key.clone());
            e.connect_activate(move |e| {
                sink(Action::SetConfig {
                    key: key.clone(),
                    value: json!(e.text().to_string()),
                });
                e.set_text("");
            });
            grid.attach(&e, 1, line, 1, 1);
            Editor::Secret(e)
        }
        (ty, false) => {
            let e = gtk::Entry::builder().hexpand(true).build();
            let (sink, key, ty) = (sink.clone(), row.key.clone(), ty.to_string());
            e.connect_activate(move |e| {
                sink(Action::SetConfig {
                    key: key.clone(),
                    value: typed_value(&ty, &e.text()),
                })
            });
            grid.attach(&e, 1, line, 1, 1);
            Editor::Text(e)
        }
    };
    match &editor {
        Editor::Switch(w) => w.update_property(&[gtk::accessible::Property::Label(&a11y)]),
        Editor::Text(w) => w.update_property(&[gtk::accessible::Property::Label(&a11y)]),
        Editor::Secret(w) => w.update_property(&[gtk::accessible::Property::Label(&a11y)]),
    }
    let error = text_label("", &["error"]);
    error.set_widget_name("setting-error");
    error.set_visible(false);
    grid.attach(&error, 1, line + 1, 1, 1);
    RowWidgets {
        key: row.key.clone(),
        editor,
        error,
    }
}

impl SettingsView {
    /// Updates `grid` to show `rows`; rebuilds only when the set of keys changed.
    pub fn sync(&mut self, grid: &gtk::Grid, rows: &[SettingRow], sink: &ActionSink) {
        let same_keys = self.rows.len() == rows.len()
            && self.rows.iter().zip(rows).all(|(w, r)| w.key == r.key);
        if !same_keys {
            while let Some(child) = grid.first_child() {
                grid.remove(&child);
            }
            self.rows = rows
                .iter()
                .enumerate()
                .map(|(i, r)| build_row(grid, (i as i32) * 2, r, sink, &self.updating))
                .collect();
        }
        self.updating.set(true);
        for (w, r) in self.rows.iter().zip(rows) {
            match &w.editor {
                Editor::Switch(sw) => {
                    let on = r.value.as_bool().unwrap_or(false);
                    if sw.is_active() != on || sw.state() != on {
                        sw.set_state(on);
                        sw.set_active(on);
                    }
                    sw.set_sensitive(!r.pending);
                }
                Editor::Text(e) => {
                    // Never overwrite what the person is typing (focus sits on the entry's text child).
                    if e.focus_child().is_none() || !same_keys {
                        let v = r.display_value();
                        if e.text() != v {
                            e.set_text(&v);
                        }
                    }
                    e.set_sensitive(!r.pending);
                }
                Editor::Secret(e) => {
                    e.set_tooltip_text(Some(&format!("stored: {}", r.display_value())));
                    e.set_sensitive(!r.pending);
                }
            }
            match &r.error {
                Some(msg) => {
                    w.error.set_text(msg);
                    w.error.set_visible(true);
                }
                None => w.error.set_visible(false),
            }
        }
        self.updating.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::typed_value;
    use serde_json::json;

    #[test]
    fn lists_are_split_on_commas_and_other_types_go_as_text() {
        assert_eq!(typed_value("list", " a, b ,,c "), json!(["a", "b", "c"]));
        assert_eq!(typed_value("list", ""), json!([]));
        assert_eq!(typed_value("int", "140"), json!("140"));
        assert_eq!(typed_value("string", "top-left"), json!("top-left"));
    }
}
