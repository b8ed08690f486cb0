//! The conversation on the card: the request, the reply's markdown blocks and the tool steps.
//!
//! Untrusted text reaches GTK only through [`text_label`] (markup off) or through
//! [`inline_markup`], which escapes every run with `glib::markup_escape_text` before joining it
//! to the few tags the card itself writes (`<b>`, `<i>`, `<tt>`, and `<a>` for web links only).

use super::permissions::ActionSink;
use crate::markdown::{self, Block, Inline};
use crate::view::{Action, ToolStep, Turn, TurnItem};
use gtk::glib;
use gtk::prelude::*;
use std::rc::Rc;

/// Called with the URI of a clicked link (only `http:`/`https:` links exist).
pub type LinkHandler = Rc<dyn Fn(&str)>;

/// A wrapping, selectable label showing `text` as plain text (never parsed as markup).
pub fn text_label(text: &str, css: &[&str]) -> gtk::Label {
    let label = gtk::Label::builder()
        .wrap(true)
        .wrap_mode(gtk::pango::WrapMode::WordChar)
        .xalign(0.0)
        .selectable(true)
        .use_markup(false)
        .build();
    label.set_text(text);
    for c in css {
        label.add_css_class(c);
    }
    label
}

/// Pango markup for `inlines`: every text run escaped, tags written only here.
pub fn inline_markup(inlines: &[Inline]) -> String {
    let esc = |s: &str| glib::markup_escape_text(s).to_string();
    let mut m = String::new();
    for i in inlines {
        match i {
            Inline::Text(t) => m.push_str(&esc(t)),
            Inline::Strong(t) => m.push_str(&format!("<b>{}</b>", esc(t))),
            Inline::Emphasis(t) => m.push_str(&format!("<i>{}</i>", esc(t))),
            Inline::Code(t) => m.push_str(&format!("<tt>{}</tt>", esc(t))),
            Inline::Link { label, url } if markdown::is_web_url(url) => {
                m.push_str(&format!("<a href=\"{}\">{}</a>", esc(url), esc(label)));
            }
            Inline::Link { label, url } => m.push_str(&esc(&format!("{label} ({url})"))),
            Inline::Break => m.push('\n'),
        }
    }
    m
}

fn markup_label(inlines: &[Inline], css: &[&str], on_link: &LinkHandler) -> gtk::Label {
    let label = text_label("", css);
    label.set_markup(&inline_markup(inlines));
    let on_link = on_link.clone();
    label.connect_activate_link(move |_, uri| {
        if markdown::is_web_url(uri) {
            on_link(uri);
        }
        glib::Propagation::Stop
    });
    label
}

/// Widgets for one markdown block.
pub fn block_widget(block: &Block, on_link: &LinkHandler) -> gtk::Widget {
    match block {
        Block::Paragraph { inlines, heading } => {
            let css: &[&str] = if *heading { &["heading"] } else { &[] };
            markup_label(inlines, css, on_link).upcast()
        }
        Block::Quote(inlines) => markup_label(inlines, &["quote"], on_link).upcast(),
        Block::Item {
            marker,
            depth,
            inlines,
        } => {
            let row = gtk::Box::new(gtk::Orientation::Horizontal, 6);
            row.set_margin_start(12 * i32::try_from(*depth).unwrap_or(0).min(6));
            let m = text_label(marker, &["dim-label"]);
            m.set_selectable(false);
            m.set_valign(gtk::Align::Start);
            row.append(&m);
            let body = markup_label(inlines, &[], on_link);
            body.set_hexpand(true);
            row.append(&body);
            row.upcast()
        }
        Block::Code(code) => {
            let label = text_label(code, &["code"]);
            label.set_wrap_mode(gtk::pango::WrapMode::Char);
            label.update_property(&[gtk::accessible::Property::Label("Code")]);
            label.upcast()
        }
    }
}

/// The reply text of a turn rendered as markdown blocks (one box).
pub fn reply_widget(text: &str, on_link: &LinkHandler) -> gtk::Box {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 4);
    b.set_widget_name("reply");
    b.add_css_class("reply");
    for block in markdown::parse(text) {
        b.append(&block_widget(&block, on_link));
    }
    b
}

/// A tool step: the command with its status, and the redacted output in a collapsed expander.
pub fn step_widget(step: &ToolStep) -> gtk::Widget {
    let status = match (step.running(), step.exit_code) {
        (true, _) => "running…".to_string(),
        (false, Some(0)) => "done".to_string(),
        (false, Some(c)) => format!("exit {c}"),
        (false, None) => "stopped".to_string(),
    };
    let title = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    let cmd = text_label(&format!("$ {}", step.command), &["step-command"]);
    cmd.set_selectable(false);
    cmd.set_hexpand(true);
    title.append(&cmd);
    title.append(&text_label(&status, &["dim-label"]));
    let expander = gtk::Expander::builder().name("tool-step").build();
    expander.set_label_widget(Some(&title));
    expander.add_css_class("step");
    let output = step.output.as_deref().unwrap_or("");
    let out = text_label(
        if output.trim().is_empty() && !step.running() {
            "(no output)"
        } else {
            output
        },
        &["code", "step-output"],
    );
    out.set_wrap_mode(gtk::pango::WrapMode::Char);
    expander.set_child(Some(&out));
    expander.update_property(&[gtk::accessible::Property::Label(&format!(
        "Command step: {} ({status}); expand for its output",
        step.command
    ))]);
    expander.upcast()
}

/// A whole turn; the line the person said has a "Remember this" button (`sink` gets
/// [`Action::Remember`] with that line).
pub fn turn_widget(turn: &Turn, on_link: &LinkHandler, sink: &ActionSink) -> gtk::Widget {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 6);
    b.add_css_class("turn");
    if let Some(user) = &turn.user {
        let u = text_label(user, &["user-bubble"]);
        u.set_widget_name("user-text");
        u.set_halign(gtk::Align::End);
        u.update_property(&[gtk::accessible::Property::Label("You asked")]);
        b.append(&u);
        let keep = gtk::Button::with_label("Remember this");
        keep.set_widget_name("remember-this");
        keep.add_css_class("flat");
        keep.set_halign(gtk::Align::End);
        let (s, said) = (sink.clone(), user.clone());
        keep.connect_clicked(move |_| s(Action::Remember(said.clone())));
        b.append(&keep);
    }
    for item in &turn.items {
        match item {
            TurnItem::Text(t) => b.append(&reply_widget(t, on_link)),
            TurnItem::Step(s) => b.append(&step_widget(s)),
        }
    }
    if !turn.reasoning.is_empty() && !turn.done {
        let r = text_label(&turn.reasoning, &["dim-label", "reasoning"]);
        r.update_property(&[gtk::accessible::Property::Label("Reasoning")]);
        b.append(&r);
    }
    if let Some(e) = &turn.error {
        let l = text_label(e, &["error"]);
        l.set_widget_name("turn-error");
        b.append(&l);
    }
    b.upcast()
}

/// Keeps the conversation box in step with the view model's turns, rebuilding only turns that
/// changed (a streaming reply rebuilds its own turn only).
#[derive(Default)]
pub struct TurnList {
    shown: Vec<(Turn, gtk::Widget)>,
}

impl TurnList {
    /// Updates `container` to show `turns`.
    pub fn sync(
        &mut self,
        container: &gtk::Box,
        turns: &[Turn],
        on_link: &LinkHandler,
        sink: &ActionSink,
    ) {
        while self.shown.len() > turns.len() {
            if let Some((_, w)) = self.shown.pop() {
                container.remove(&w);
            }
        }
        for (i, turn) in turns.iter().enumerate() {
            match self.shown.get_mut(i) {
                Some((old, _)) if old == turn => {}
                Some((old, w)) => {
                    let new = turn_widget(turn, on_link, sink);
                    container.insert_child_after(&new, Some(&*w));
                    container.remove(&*w);
                    *old = turn.clone();
                    *w = new;
                }
                None => {
                    let new = turn_widget(turn, on_link, sink);
                    container.append(&new);
                    self.shown.push((turn.clone(), new));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_escapes_every_run_and_links_only_the_web() {
        let inlines = vec![
            Inline::Text("<span size=\"1\">x</span> & ".into()),
            Inline::Strong("<b>".into()),
            Inline::Link {
                label: "g\"uide".into(),
                url: "https://docs.invalid/a?b=1&c=\"2\"".into(),
            },
            Inline::Link {
                label: "x".into(),
                url: "file:///etc/passwd".into(),
            },
        ];
        let m = inline_markup(&inlines);
        assert_eq!(
            m,
            "&lt;span size=&quot;1&quot;&gt;x&lt;/span&gt; &amp; <b>&lt;b&gt;</b>\
             <a href=\"https://docs.invalid/a?b=1&amp;c=&quot;2&quot;\">g&quot;uide</a>\
             x (file:///etc/passwd)"
        );
    }
}
