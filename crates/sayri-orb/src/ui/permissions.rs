//! Permission cards: the command and every judged segment, why it asks, Allow / Allow always /
//! Deny and a countdown. Cards are kept by request id so a countdown tick only changes a label
//! (keyboard focus stays on the button it was on).

use super::conversation::text_label;
use crate::view::{Action, PermissionCard};
use gtk::prelude::*;
use std::rc::Rc;

/// Sends an action to the view model.
pub type ActionSink = Rc<dyn Fn(Action)>;

struct CardWidgets {
    id: String,
    root: gtk::Box,
    countdown: gtk::Label,
    buttons: Vec<gtk::Button>,
    error: gtk::Label,
}

/// The cards on screen.
#[derive(Default)]
pub struct CardList {
    shown: Vec<CardWidgets>,
}

fn answer_button(
    label: &str,
    name: &str,
    a11y: &str,
    card: &PermissionCard,
    allow: bool,
    remember: bool,
    sink: &ActionSink,
) -> gtk::Button {
    let b = gtk::Button::with_mnemonic(label);
    b.set_widget_name(name);
    b.update_property(&[gtk::accessible::Property::Label(a11y)]);
    let (sink, id) = (sink.clone(), card.id.clone());
    b.connect_clicked(move |_| {
        sink(Action::Answer {
            request_id: id.clone(),
            allow,
            remember,
        })
    });
    b
}

fn build(card: &PermissionCard, sink: &ActionSink) -> CardWidgets {
    let root = gtk::Box::builder()
        .orientation(gtk::Orientation::Vertical)
        .spacing(6)
        .accessible_role(gtk::AccessibleRole::Group)
        .name("permission-card")
        .css_classes(["permission"])
        .build();
    root.update_property(&[gtk::accessible::Property::Label("Permission question")]);
    append_details(&root, card);
    let countdown = text_label("", &["dim-label", "countdown"]);
    countdown.set_selectable(false);
    countdown.set_widget_name("permission-countdown");
    root.append(&countdown);
    let (row, buttons) = answer_row(card, sink);
    root.append(&row);
    let error = text_label("", &["error"]);
    error.set_visible(false);
    root.append(&error);
    CardWidgets {
        id: card.id.clone(),
        root,
        countdown,
        buttons,
        error,
    }
}

/// Appends what the card asks about to `root`: who asks, the command, each judged segment,
/// the step whose output the command came from, and why it asks.
fn append_details(root: &gtk::Box, card: &PermissionCard) {
    let who = if card.agent_name.is_empty() {
        "The assistant".to_string()
    } else {
        card.agent_name.clone()
    };
    let title = text_label(
        &format!("{who} asks to run ({}):", card.action),
        &["heading"],
    );
    title.set_selectable(false);
    root.append(&title);
    let command = text_label(&card.resource, &["code", "permission-command"]);
    command.set_widget_name("permission-command");
    command.set_wrap_mode(gtk::pango::WrapMode::Char);
    command.update_property(&[gtk::accessible::Property::Label("Command to approve")]);
    root.append(&command);
    if !card.segments.is_empty() {
        let list = gtk::Box::new(gtk::Orientation::Vertical, 2);
        list.set_widget_name("permission-segments");
        for s in &card.segments {
            let line = text_label(
                &format!("• {} — {}: {}", s.command, s.effect, s.reason),
                &["segment", &format!("effect-{}", s.effect)],
            );
            line.set_widget_name("permission-segment");
            list.append(&line);
        }
        root.append(&list);
    }
    if let Some(step) = &card.from_step {
        let from = text_label(
            &format!(
                "This command comes from text Sayri read, not from you: the output of `{step}`. Allow it only if you want it run."
            ),
            &["warning"],
        );
        from.set_widget_name("permission-from-step");
        root.append(&from);
    }
    let why = text_label(&format!("Why: {}", card.reason), &["dim-label"]);
    why.set_widget_name("permission-reason");
    root.append(&why);
}

/// The row of answer buttons (Allow, Allow always, Deny) and the buttons, in that order.
fn answer_row(card: &PermissionCard, sink: &ActionSink) -> (gtk::Box, Vec<gtk::Button>) {
    let row = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    let allow = answer_button(
        "_Allow",
        "permission-allow",
        "Allow this command once",
        card,
        true,
        false,
        sink,
    );
    allow.add_css_class("suggested-action");
    let always = answer_button(
        "Allow al_ways",
        "permission-allow-always",
        "Allow this command and remember it for this agent",
        card,
        true,
        true,
        sink,
    );
    if card.policy {
        always.set_tooltip_text(Some(
            "A system policy asks every time; it cannot be remembered",
        ));
    }
    if card.from_step.is_some() {
        always.set_tooltip_text(Some(
            "A command from outside text is asked every time; it cannot be remembered",
        ));
    }
    let deny = answer_button(
        "_Deny",
        "permission-deny",
        "Deny this command",
        card,
        false,
        false,
        sink,
    );
    deny.add_css_class("destructive-action");
    for b in [&allow, &always, &deny] {
        row.append(b);
    }
    (row, vec![allow, always, deny])
}

fn refresh(w: &CardWidgets, card: &PermissionCard, now_ms: u64) {
    let left = card.seconds_left(now_ms);
    let text = if card.answering {
        "Answer sent…".to_string()
    } else if left == 0 {
        "Time is up: counts as Deny".to_string()
    } else {
        format!("Answer within {left} s (no answer counts as Deny)")
    };
    if w.countdown.text() != text {
        w.countdown.set_text(&text);
    }
    for (i, b) in w.buttons.iter().enumerate() {
        let remember_blocked = i == 1 && card.policy;
        b.set_sensitive(!card.answering && left > 0 && !remember_blocked);
    }
    match &card.error {
        Some(e) => {
            w.error.set_text(e);
            w.error.set_visible(true);
        }
        None => w.error.set_visible(false),
    }
}

impl CardList {
    /// Updates `container` to show `cards` at `now_ms`.
    pub fn sync(
        &mut self,
        container: &gtk::Box,
        cards: &[PermissionCard],
        now_ms: u64,
        sink: &ActionSink,
    ) {
        self.shown.retain(|w| {
            let keep = cards.iter().any(|c| c.id == w.id);
            if !keep {
                container.remove(&w.root);
            }
            keep
        });
        for card in cards {
            if !self.shown.iter().any(|w| w.id == card.id) {
                let w = build(card, sink);
                container.append(&w.root);
                self.shown.push(w);
            }
            if let Some(w) = self.shown.iter().find(|w| w.id == card.id) {
                refresh(w, card, now_ms);
            }
        }
        container.set_visible(!cards.is_empty());
    }
}
