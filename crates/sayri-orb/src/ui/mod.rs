//! The GTK window: the orb and its card, wired to the view model.
//!
//! [`OrbApp::new`] builds the window; every input (daemon event, response, click, tick) goes
//! through [`OrbApp::dispatch`], which runs the reducer, sends the requests it returns and
//! redraws the parts that changed. Widgets that tests and assistive technologies look for have
//! stable names (`talk-entry`, `conversation`, `reply`, `tool-step`, `permission-card`,
//! `permission-allow`, `permission-allow-always`, `permission-deny`, `permission-command`,
//! `link-banner`, `hint`, `agent-badge`, `settings-grid`, `sessions-list`).

pub mod conversation;
pub mod input_shape;
pub mod orb;
pub mod permissions;
pub mod placement;
pub mod screenshot;
pub mod sessions;
pub mod settings;
pub mod theme;
pub mod tray;
mod widgets;

use crate::demo::Demo;
use crate::link::{self, LinkHandle, LinkOptions};
use crate::view::{Action, Changes, Input, LinkState, Request, ViewModel};
use conversation::{LinkHandler, TurnList};
use gtk::glib;
use gtk::prelude::*;
use orb::OrbLook;
use permissions::{ActionSink, CardList};
use settings::SettingsView;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};
use widgets::Widgets;

/// How often countdowns are redrawn.
const TICK: Duration = Duration::from_millis(500);

/// Where the window's inputs come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A daemon, through [`crate::link`].
    Daemon(LinkOptions),
    /// A canned event script, no daemon.
    Demo(Demo),
}

/// The running window.
pub struct OrbApp {
    /// The top-level window.
    pub window: gtk::Window,
    w: Widgets,
    model: RefCell<ViewModel>,
    started: Instant,
    link: RefCell<Option<LinkHandle>>,
    queue: RefCell<VecDeque<Input>>,
    dispatching: Cell<bool>,
    turns: RefCell<TurnList>,
    cards: RefCell<CardList>,
    settings: RefCell<SettingsView>,
    on_link: Rc<RefCell<LinkHandler>>,
    application: Option<gtk::Application>,
}

impl OrbApp {
    /// Builds the window (not yet shown) and starts its input source. GTK must be initialised.
    pub fn new(application: Option<&gtk::Application>, source: Source) -> Rc<OrbApp> {
        let app = Rc::new_cyclic(|weak: &Weak<OrbApp>| {
            let sink: ActionSink = {
                let weak = weak.clone();
                Rc::new(move |a: Action| {
                    if let Some(app) = weak.upgrade() {
                        app.dispatch(Input::Action(a));
                    }
                })
            };
            let on_link: Rc<RefCell<LinkHandler>> = Rc::new(RefCell::new(Rc::new(|_: &str| {})));
            let trampoline: LinkHandler = {
                let on_link = on_link.clone();
                Rc::new(move |uri: &str| {
                    let f = on_link.borrow().clone();
                    f(uri)
                })
            };
            let w = Widgets::build(sink, trampoline);
            let window = w.window.clone();
            if let Some(a) = application {
                window.set_application(Some(a));
            }
            OrbApp {
                window,
                w,
                model: RefCell::new(ViewModel::new()),
                started: Instant::now(),
                link: RefCell::new(None),
                queue: RefCell::new(VecDeque::new()),
                dispatching: Cell::new(false),
                turns: RefCell::new(TurnList::default()),
                cards: RefCell::new(CardList::default()),
                settings: RefCell::new(SettingsView::default()),
                on_link,
                application: application.cloned(),
            }
        });
        let win = app.window.clone();
        app.set_link_handler(Rc::new(move |uri: &str| {
            gtk::show_uri(Some(&win), uri, gtk::gdk::CURRENT_TIME)
        }));
        theme::install(&WidgetExt::display(&app.window));
        theme::follow_system_preference();
        app.start_ticks();
        app.start_placement();
        match source {
            Source::Daemon(options) => app.start_link(options),
            Source::Demo(demo) => {
                for input in crate::demo::script(demo) {
                    app.dispatch(input);
                }
            }
        }
        app.model.borrow_mut().mark_all_changed();
        app.dispatch(Input::Tick);
        app
    }

    /// Milliseconds since the window was built (the reducer's clock).
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Replaces what happens when a link in the card is clicked (default: open it with the
    /// desktop's handler). Only `http:`/`https:` URIs ever reach it.
    pub fn set_link_handler(&self, f: LinkHandler) {
        *self.on_link.borrow_mut() = f;
    }

    /// A copy of the current view model (for tests and diagnostics).
    pub fn model(&self) -> ViewModel {
        self.model.borrow().clone()
    }

    /// Starts the tray icon; its commands show/hide or quit this window.
    pub fn start_tray(self: &Rc<Self>) {
        let (tx, rx) = async_channel::unbounded();
        tray::start(tx);
        let weak = Rc::downgrade(self);
        glib::spawn_future_local(async move {
            while let Ok(cmd) = rx.recv().await {
                let Some(app) = weak.upgrade() else { break };
                match cmd {
                    tray::TrayCommand::Toggle => app.dispatch(Input::Action(Action::ToggleWindow)),
                    tray::TrayCommand::Quit => app.quit(),
                }
            }
        });
    }

    /// Closes the window and ends the application.
    pub fn quit(&self) {
        match &self.application {
            Some(a) => a.quit(),
            None => self.window.close(),
        }
    }

    fn start_link(self: &Rc<Self>, options: LinkOptions) {
        let (tx, rx) = async_channel::unbounded();
        match link::spawn(options, tx) {
            Ok(handle) => *self.link.borrow_mut() = Some(handle),
            Err(e) => {
                self.dispatch(Input::Link(LinkState::Reconnecting {
                    attempt: 0,
                    retry_in_ms: 0,
                    reason: format!("cannot start the connection thread: {e}"),
                }));
                return;
            }
        }
        let weak = Rc::downgrade(self);
        glib::spawn_future_local(async move {
            while let Ok(input) = rx.recv().await {
                let Some(app) = weak.upgrade() else { break };
                app.dispatch(input);
            }
        });
    }

    fn start_ticks(self: &Rc<Self>) {
        let weak = Rc::downgrade(self);
        glib::timeout_add_local(TICK, move || match weak.upgrade() {
            Some(app) => {
                app.dispatch(Input::Tick);
                glib::ControlFlow::Continue
            }
            None => glib::ControlFlow::Break,
        });
    }

    /// Places the window in its corner once mapped, whenever its size changes and whenever the
    /// monitors change; keeps its input region to the orb and the card; asks the window manager
    /// not to focus it when it appears.
    fn start_placement(self: &Rc<Self>) {
        self.window.connect_realize(placement::no_focus_on_map);
        let weak = Rc::downgrade(self);
        self.window.connect_map(move |win| {
            let Some(app) = weak.upgrade() else { return };
            app.reshape();
            if let Some(surface) = win.surface() {
                let weak = Rc::downgrade(&app);
                surface.connect_layout(move |_, _, _| {
                    if let Some(app) = weak.upgrade() {
                        app.reshape();
                    }
                });
            }
        });
        let weak = Rc::downgrade(self);
        placement::follow_monitors(&self.window, move || {
            if let Some(app) = weak.upgrade()
                && app.window.is_mapped()
            {
                app.reshape();
            }
        });
        placement::prepare(&self.window, &self.model.borrow().ui());
    }

    /// Places the window and sets its input region.
    fn reshape(&self) {
        placement::place(&self.window, &self.model.borrow().ui());
        input_shape::update(
            &self.window,
            self.w.orb.area.upcast_ref(),
            self.w.card.upcast_ref(),
        );
    }

    /// Applies one input: reducer, requests, redraw. Re-entrant calls (a widget signal fired
    /// while redrawing) are queued and applied right after.
    pub fn dispatch(&self, input: Input) {
        self.queue.borrow_mut().push_back(input);
        if self.dispatching.replace(true) {
            return;
        }
        loop {
            let Some(input) = self.queue.borrow_mut().pop_front() else {
                break;
            };
            let now = self.now_ms();
            let requests = self.model.borrow_mut().apply(input, now);
            for r in requests {
                self.send(r);
            }
            let changes = self.model.borrow_mut().take_changes();
            self.render(changes);
        }
        self.dispatching.set(false);
    }

    fn send(&self, r: Request) {
        let sent = self
            .link
            .borrow()
            .as_ref()
            .is_some_and(|l| l.send(r.clone()));
        if !sent && self.link.borrow().is_some() {
            self.queue.borrow_mut().push_back(Input::Response {
                tag: r.tag,
                result: Err(sayri_protocol::ProtocolError::new(
                    sayri_protocol::ErrorCode::Internal,
                    "the connection thread has stopped; restart the orb",
                )),
            });
        }
    }

    fn render(&self, ch: Changes) {
        let m = self.model.borrow();
        let now = self.now_ms();
        if ch.orb {
            let look = OrbLook {
                state: m.orb,
                level: m.audio_level,
                online: matches!(m.link, LinkState::Connected | LinkState::Demo),
                busy: m.busy,
            };
            self.w.orb.update(look, Some(&m.link));
            self.w.interrupt.set_visible(m.busy);
        }
        if ch.notices || ch.orb {
            self.w.render_banner(&m);
        }
        if ch.notices {
            self.w.render_notices(&m);
        }
        if ch.conversation {
            self.turns.borrow_mut().sync(
                &self.w.conversation,
                &m.turns,
                &self.w.on_link,
                &self.w.sink,
            );
            self.w.render_partial(&m.partial);
            self.w.scroll_to_end();
        }
        if ch.permissions {
            self.cards
                .borrow_mut()
                .sync(&self.w.permissions, &m.permissions, now, &self.w.sink);
        }
        if ch.agents {
            self.w.render_agents(&m);
        }
        if ch.sessions {
            sessions::sync(
                &self.w.sessions,
                &m.sessions,
                m.session_id.as_deref(),
                &self.w.sink,
            );
        }
        if ch.settings {
            self.settings
                .borrow_mut()
                .sync(&self.w.settings, &m.settings, &self.w.sink);
        }
        if ch.layout {
            self.w.apply_layout(&m.ui(), m.card_open);
            if self.window.is_mapped() {
                drop(m);
                self.reshape();
                return self.render_visibility(ch.visibility);
            }
        }
        if ch.visibility {
            self.window.set_visible(m.visible);
        }
    }

    fn render_visibility(&self, changed: bool) {
        if changed {
            self.window.set_visible(self.model.borrow().visible);
        }
    }
}

impl Drop for OrbApp {
    fn drop(&mut self) {
        // The window would otherwise outlive its controller (GTK keeps top-levels alive).
        self.window.destroy();
    }
}
