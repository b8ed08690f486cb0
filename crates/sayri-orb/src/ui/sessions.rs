//! The session list: new conversation, switch, rename (inline entry) and delete (asks twice).

use super::conversation::text_label;
use super::permissions::ActionSink;
use crate::view::{Action, SessionRow};
use gtk::prelude::*;

fn row(s: &SessionRow, current: bool, sink: &ActionSink) -> gtk::Box {
    let row = gtk::Box::new(gtk::Orientation::Horizontal, 4);
    row.set_widget_name("session-row");
    row.add_css_class("session");
    let title = text_label(
        &format!(
            "{}{} · {} messages",
            if current { "● " } else { "" },
            s.title,
            s.messages
        ),
        &[],
    );
    title.set_selectable(false);
    title.set_hexpand(true);
    row.append(&title);

    let open = gtk::Button::with_label("Open");
    open.set_sensitive(!current);
    open.update_property(&[gtk::accessible::Property::Label(&format!(
        "Continue the conversation {}",
        s.title
    ))]);
    let (sink2, id) = (sink.clone(), s.id.clone());
    open.connect_clicked(move |_| sink2(Action::SwitchSession(id.clone())));
    row.append(&open);

    let rename = gtk::Entry::builder()
        .placeholder_text("New title, Enter")
        .width_chars(10)
        .visible(false)
        .build();
    rename.update_property(&[gtk::accessible::Property::Label(&format!(
        "New title for {}",
        s.title
    ))]);
    let (sink2, id) = (sink.clone(), s.id.clone());
    rename.connect_activate(move |e| {
        sink2(Action::RenameSession {
            id: id.clone(),
            title: e.text().to_string(),
        });
        e.set_visible(false);
    });
    let rename_btn = gtk::Button::with_label("Rename");
    rename_btn.update_property(&[gtk::accessible::Property::Label(&format!(
        "Rename {}",
        s.title
    ))]);
    let entry = rename.clone();
    rename_btn.connect_clicked(move |_| {
        entry.set_visible(!WidgetExt::is_visible(&entry));
        entry.grab_focus();
    });
    row.append(&rename_btn);
    row.append(&rename);

    let delete = gtk::Button::with_label("Delete");
    delete.add_css_class("destructive-action");
    delete.update_property(&[gtk::accessible::Property::Label(&format!(
        "Delete {}",
        s.title
    ))]);
    let (sink2, id) = (sink.clone(), s.id.clone());
    delete.connect_clicked(move |b| {
        if b.label().as_deref() == Some("Delete") {
            b.set_label("Really delete?");
        } else {
            sink2(Action::DeleteSession(id.clone()));
        }
    });
    row.append(&delete);
    row
}

/// Rebuilds the list in `container` (a vertical box) from `sessions`.
pub fn sync(
    container: &gtk::Box,
    sessions: &[SessionRow],
    current: Option<&str>,
    sink: &ActionSink,
) {
    while let Some(child) = container.first_child() {
        container.remove(&child);
    }
    if sessions.is_empty() {
        container.append(&text_label("No conversations yet.", &["dim-label"]));
    }
    for s in sessions {
        container.append(&row(s, current == Some(s.id.as_str()), sink));
    }
}
