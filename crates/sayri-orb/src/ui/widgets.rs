//! The window's widget tree and the small redraw helpers that are not lists.

use super::conversation::{LinkHandler, text_label};
use super::orb::Orb;
use super::permissions::ActionSink;
use crate::view::{Action, LinkState, UiPrefs, ViewModel};
use gtk::prelude::*;

/// Width of the card in pixels.
pub const CARD_WIDTH: i32 = 380;

/// Every widget the redraw touches.
pub struct Widgets {
    pub window: gtk::Window,
    pub root: gtk::Box,
    pub orb: Orb,
    pub card: gtk::Box,
    pub banner: gtk::Label,
    pub hint: gtk::Label,
    pub notices: gtk::Box,
    pub permissions: gtk::Box,
    pub conversation: gtk::Box,
    pub scroller: gtk::ScrolledWindow,
    pub partial: gtk::Label,
    pub entry: gtk::Entry,
    pub interrupt: gtk::Button,
    pub agent_badge: gtk::MenuButton,
    pub agent_list: gtk::Box,
    pub sessions: gtk::Box,
    pub settings: gtk::Grid,
    pub sink: ActionSink,
    pub on_link: LinkHandler,
}

fn page_button(
    label: &str,
    a11y: &str,
    page: &'static str,
    stack: &gtk::Stack,
) -> gtk::ToggleButton {
    let b = gtk::ToggleButton::with_mnemonic(label);
    b.update_property(&[gtk::accessible::Property::Label(a11y)]);
    b.set_widget_name(&format!("page-{page}"));
    let stack = stack.clone();
    b.connect_toggled(move |b| {
        if b.is_active() {
            stack.set_visible_child_name(page);
        }
    });
    b
}

impl Widgets {
    fn header(
        sink: &ActionSink,
        stack: &gtk::Stack,
    ) -> (gtk::Box, gtk::MenuButton, gtk::Box, gtk::ToggleButton) {
        let header = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        let agent_list = gtk::Box::new(gtk::Orientation::Vertical, 2);
        let popover = gtk::Popover::builder().child(&agent_list).build();
        let agent_badge = gtk::MenuButton::builder()
            .label("Sayri")
            .popover(&popover)
            .name("agent-badge")
            .css_classes(["badge"])
            .tooltip_text("Agent answering your requests — click to switch")
            .build();
        agent_badge.update_property(&[gtk::accessible::Property::Label("Switch agent")]);
        header.append(&agent_badge);
        let spacer = gtk::Box::new(gtk::Orientation::Horizontal, 0);
        spacer.set_hexpand(true);
        header.append(&spacer);
        let chat = page_button("_Chat", "Show the conversation", "chat", stack);
        let sessions = page_button("_Sessions", "Show conversations", "sessions", stack);
        let settings = page_button("Se_ttings", "Show settings", "settings", stack);
        sessions.set_group(Some(&chat));
        settings.set_group(Some(&chat));
        for b in [&chat, &sessions, &settings] {
            header.append(b);
        }
        let new = gtk::Button::from_icon_name("document-new-symbolic");
        new.set_widget_name("new-conversation");
        new.set_tooltip_text(Some("New conversation"));
        new.update_property(&[gtk::accessible::Property::Label("New conversation")]);
        let s = sink.clone();
        new.connect_clicked(move |_| s(Action::NewConversation));
        header.append(&new);
        (header, agent_badge, agent_list, chat)
    }

    fn chat_page(stack: &gtk::Stack) -> (gtk::Box, gtk::ScrolledWindow) {
        let conversation = gtk::Box::new(gtk::Orientation::Vertical, 8);
        conversation.set_widget_name("conversation");
        let scroller = gtk::ScrolledWindow::builder()
            .hscrollbar_policy(gtk::PolicyType::Never)
            .min_content_height(60)
            .max_content_height(380)
            .propagate_natural_height(true)
            .child(&conversation)
            .build();
        stack.add_named(&scroller, Some("chat"));
        (conversation, scroller)
    }

    fn sessions_page(stack: &gtk::Stack, sink: &ActionSink) -> gtk::Box {
        let page = gtk::Box::new(gtk::Orientation::Vertical, 6);
        let new = gtk::Button::with_mnemonic("_New conversation");
        new.update_property(&[gtk::accessible::Property::Label("Start a new conversation")]);
        let s = sink.clone();
        new.connect_clicked(move |_| s(Action::NewConversation));
        page.append(&new);
        let list = gtk::Box::new(gtk::Orientation::Vertical, 4);
        list.set_widget_name("sessions-list");
        let scroller = gtk::ScrolledWindow::builder()
            .hscrollbar_policy(gtk::PolicyType::Never)
            .min_content_height(60)
            .max_content_height(380)
            .propagate_natural_height(true)
            .child(&list)
            .build();
        page.append(&scroller);
        stack.add_named(&page, Some("sessions"));
        list
    }

    fn settings_page(stack: &gtk::Stack) -> gtk::Grid {
        let grid = gtk::Grid::builder()
            .row_spacing(4)
            .column_spacing(8)
            .name("settings-grid")
            .build();
        let scroller = gtk::ScrolledWindow::builder()
            .hscrollbar_policy(gtk::PolicyType::Never)
            .min_content_height(200)
            .max_content_height(380)
            .propagate_natural_height(true)
            .child(&grid)
            .build();
        stack.add_named(&scroller, Some("settings"));
        grid
    }

    fn input_row(sink: &ActionSink) -> (gtk::Box, gtk::Entry, gtk::Button) {
        let row = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        let entry = gtk::Entry::builder()
            .placeholder_text("Ask Sayri…")
            .hexpand(true)
            .name("talk-entry")
            .build();
        entry.update_property(&[gtk::accessible::Property::Label(
            "Request for Sayri; press Enter to send",
        )]);
        let s = sink.clone();
        entry.connect_activate(move |e| {
            let text = e.text().to_string();
            if !text.trim().is_empty() {
                e.set_text("");
                s(Action::Talk(text));
            }
        });
        row.append(&entry);
        let interrupt = gtk::Button::from_icon_name("media-playback-stop-symbolic");
        interrupt.set_widget_name("interrupt");
        interrupt.set_tooltip_text(Some("Stop the running request"));
        interrupt.update_property(&[gtk::accessible::Property::Label("Stop the running request")]);
        interrupt.set_visible(false);
        let s = sink.clone();
        interrupt.connect_clicked(move |_| s(Action::Interrupt));
        row.append(&interrupt);
        (row, entry, interrupt)
    }

    /// Builds the whole tree; `sink` receives every action, `on_link` every clicked web link.
    pub fn build(sink: ActionSink, on_link: LinkHandler) -> Widgets {
        let window = gtk::Window::builder()
            .title("Sayri")
            .decorated(false)
            .resizable(false)
            .icon_name("sayri-orb")
            .name("sayri-orb")
            .css_classes(["sayri-orb"])
            .build();
        let root = gtk::Box::new(gtk::Orientation::Horizontal, 8);
        window.set_child(Some(&root));
        let toggle_sink = sink.clone();
        let card_sink = sink.clone();
        let orb = Orb::new(
            140,
            move || toggle_sink(Action::ToggleListening),
            move || card_sink(Action::ToggleCard),
        );
        orb.area.set_valign(gtk::Align::Start);
        let card = gtk::Box::builder()
            .orientation(gtk::Orientation::Vertical)
            .spacing(6)
            .width_request(CARD_WIDTH)
            .name("cajita")
            .css_classes(["card"])
            .build();
        let stack = gtk::Stack::builder().vhomogeneous(false).build();
        let (header, agent_badge, agent_list, chat_button) = Self::header(&sink, &stack);
        card.append(&header);
        let banner = text_label("", &["banner"]);
        banner.set_widget_name("link-banner");
        banner.set_visible(false);
        card.append(&banner);
        let hint = text_label("", &["dim-label"]);
        hint.set_widget_name("hint");
        hint.set_visible(false);
        card.append(&hint);
        let notices = gtk::Box::new(gtk::Orientation::Vertical, 4);
        card.append(&notices);
        let permissions = gtk::Box::new(gtk::Orientation::Vertical, 6);
        permissions.set_widget_name("permissions");
        permissions.set_visible(false);
        card.append(&permissions);
        let (conversation, scroller) = Self::chat_page(&stack);
        let sessions = Self::sessions_page(&stack, &sink);
        let settings = Self::settings_page(&stack);
        stack.set_visible_child_name("chat");
        chat_button.set_active(true);
        card.append(&stack);
        let partial = text_label("", &["dim-label"]);
        partial.set_widget_name("partial");
        partial.set_visible(false);
        card.append(&partial);
        let (input, entry, interrupt) = Self::input_row(&sink);
        card.append(&input);
        root.append(&card);
        root.append(&orb.area);
        entry.grab_focus();
        Widgets {
            window,
            root,
            orb,
            card,
            banner,
            hint,
            notices,
            permissions,
            conversation,
            scroller,
            partial,
            entry,
            interrupt,
            agent_badge,
            agent_list,
            sessions,
            settings,
            sink,
            on_link,
        }
    }

    /// Connection banner ("reconnecting…") and the latest hint.
    pub fn render_banner(&self, m: &ViewModel) {
        let text = match &m.link {
            LinkState::Connected | LinkState::Demo => None,
            LinkState::Connecting => Some("Connecting to the Sayri daemon…".to_string()),
            LinkState::StartingDaemon => Some("Starting the Sayri daemon…".to_string()),
            LinkState::Reconnecting {
                retry_in_ms,
                reason,
                ..
            } => Some(format!(
                "Reconnecting to the Sayri daemon (next try in {:.1} s): {reason}",
                *retry_in_ms as f64 / 1000.0
            )),
        };
        self.banner.set_visible(text.is_some());
        self.banner.set_text(text.as_deref().unwrap_or(""));
        self.entry.set_sensitive(text.is_none());
        match &m.hint {
            Some(h) => {
                self.hint.set_text(h);
                self.hint.set_visible(true);
            }
            None => self.hint.set_visible(false),
        }
    }

    /// Errors and information lines, each with a close button.
    pub fn render_notices(&self, m: &ViewModel) {
        while let Some(c) = self.notices.first_child() {
            self.notices.remove(&c);
        }
        for (i, n) in m.notices.iter().enumerate() {
            let row = gtk::Box::new(gtk::Orientation::Horizontal, 4);
            let l = text_label(&n.text, if n.error { &["error"] } else { &[] });
            l.set_widget_name("notice");
            l.set_hexpand(true);
            row.append(&l);
            let close = gtk::Button::from_icon_name("window-close-symbolic");
            close.update_property(&[gtk::accessible::Property::Label("Dismiss this message")]);
            let s = self.sink.clone();
            close.connect_clicked(move |_| s(Action::DismissNotice(i)));
            row.append(&close);
            self.notices.append(&row);
        }
    }

    /// The agent badge and the switcher's entries.
    pub fn render_agents(&self, m: &ViewModel) {
        let name = m.agent_name().unwrap_or_else(|| "Sayri".into());
        self.agent_badge.set_label(&name);
        self.agent_badge
            .update_property(&[gtk::accessible::Property::Label(&format!(
                "Agent: {name}. Switch agent"
            ))]);
        while let Some(c) = self.agent_list.first_child() {
            self.agent_list.remove(&c);
        }
        for a in &m.agents {
            let current = m.agent_id.as_deref() == Some(a.id.as_str());
            let b =
                gtk::Button::with_label(&format!("{}{}", if current { "● " } else { "" }, a.name));
            b.set_sensitive(!current);
            b.update_property(&[gtk::accessible::Property::Label(&format!(
                "Use agent {}",
                a.name
            ))]);
            let (s, id, badge) = (self.sink.clone(), a.id.clone(), self.agent_badge.clone());
            b.connect_clicked(move |_| {
                badge.popdown();
                s(Action::SwitchAgent(id.clone()));
            });
            self.agent_list.append(&b);
        }
    }

    /// The live transcript line.
    pub fn render_partial(&self, partial: &str) {
        self.partial.set_visible(!partial.is_empty());
        self.partial.set_text(&format!("“{partial}”"));
    }

    /// Keeps the newest part of the conversation in view.
    pub fn scroll_to_end(&self) {
        let adj = self.scroller.vadjustment();
        gtk::glib::idle_add_local_once(move || adj.set_value(adj.upper() - adj.page_size()));
    }

    /// Orb size, which side the card is on, and whether it shows.
    pub fn apply_layout(&self, ui: &UiPrefs, card_open: bool) {
        self.orb.set_size(ui.orb_size);
        let card_first = !ui.corner.is_left();
        let first_is_card = self.root.first_child().as_ref() == Some(self.card.upcast_ref());
        if card_first != first_is_card {
            let after = card_first.then(|| self.card.upcast_ref::<gtk::Widget>());
            self.root.reorder_child_after(&self.orb.area, after);
        }
        let align = if ui.corner.is_bottom() {
            gtk::Align::End
        } else {
            gtk::Align::Start
        };
        self.orb.area.set_valign(align);
        self.card.set_valign(align);
        self.card.set_visible(card_open);
        self.window.set_default_size(-1, -1);
    }
}
