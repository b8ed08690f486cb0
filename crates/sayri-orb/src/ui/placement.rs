//! Putting the small undecorated window in the configured screen corner and above other
//! windows. GTK 4 has no API for either, so on X11 the orb asks the window manager directly
//! (`ConfigureWindow` and the EWMH `_NET_WM_STATE_ABOVE` message, over its own X connection).
//!
//! On X11:
//! * **Which monitor**: the primary one (RandR), else the first that exists — never the
//!   monitor the window happened to be mapped on, which may be gone. [`follow_monitors`] places
//!   it again whenever a monitor is added, removed or changed (a dock unplugged, the primary
//!   moved), once the change has settled, so it never stays on a monitor that no longer
//!   exists.
//! * **HiDPI**: positions are computed in the monitor's logical pixels and sent in device
//!   pixels (times the surface's scale).
//! * **Focus**: the window is mapped with `_NET_WM_USER_TIME` 0, which tells an EWMH window
//!   manager not to give it the keyboard when it appears ([`no_focus_on_map`]); it gets the
//!   keyboard only when the person clicks into it.
//!
//! On Wayland without layer shell the compositor decides where the window goes. With the
//! `layer-shell` feature and a compositor that supports it, the window is anchored with
//! wlr-layer-shell instead.

use crate::view::{OrbCorner, UiPrefs};
use gtk::glib;
use gtk::prelude::*;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// Gap between the window and the screen edges, in logical pixels.
pub const MARGIN: i32 = 16;

/// Top-left position of a `w`×`h` window in `corner` of a monitor at `(mx, my, mw, mh)`.
pub fn corner_position(
    corner: OrbCorner,
    monitor: (i32, i32, i32, i32),
    w: i32,
    h: i32,
) -> (i32, i32) {
    let (mx, my, mw, mh) = monitor;
    let x = if corner.is_left() {
        mx + MARGIN
    } else {
        mx + mw - w - MARGIN
    };
    let y = if corner.is_bottom() {
        my + mh - h - MARGIN
    } else {
        my + MARGIN
    };
    (x.max(mx), y.max(my))
}

/// Prepares `window` before it is shown: layer shell when built in and supported.
pub fn prepare(window: &gtk::Window, prefs: &UiPrefs) {
    #[cfg(feature = "layer-shell")]
    layer::prepare(window, prefs);
    #[cfg(not(feature = "layer-shell"))]
    let _ = (window, prefs);
}

/// Moves `window` to its corner and sets its stacking; call after it is mapped and whenever its
/// size or the preferences change. Never fails: a window manager that ignores the request just
/// leaves the window where it is.
pub fn place(window: &gtk::Window, prefs: &UiPrefs) {
    #[cfg(feature = "layer-shell")]
    if layer::place(window, prefs) {
        return;
    }
    if let Err(e) = x11::place(window, prefs) {
        tracing::debug!("window placement skipped: {e}");
    }
}

mod x11 {
    use super::*;
    use gdk4_x11::X11Surface;
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{
        ClientMessageEvent, ConfigureWindowAux, ConnectionExt, EventMask,
    };

    /// The monitors as RandR 1.5 lists them (what `xrandr --listmonitors` shows; GDK only
    /// knows outputs): `(primary, x, y, width, height)` in device pixels.
    pub fn monitors(conn: &impl Connection, root: u32) -> Vec<(bool, i32, i32, i32, i32)> {
        use x11rb::protocol::randr::ConnectionExt as _;
        conn.randr_get_monitors(root, true)
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|r| {
                r.monitors
                    .iter()
                    .map(|m| {
                        (
                            m.primary,
                            i32::from(m.x),
                            i32::from(m.y),
                            i32::from(m.width),
                            i32::from(m.height),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The primary monitor, else the first one, else the GDK monitor of the display (device
    /// pixels).
    fn target(
        conn: &impl Connection,
        root: u32,
        display: &gtk::gdk::Display,
        scale: i32,
    ) -> Option<(i32, i32, i32, i32)> {
        if let Some(m) = super::pick(&monitors(conn, root)) {
            return Some(m);
        }
        let g = display
            .monitors()
            .item(0)
            .and_then(|o| o.downcast::<gtk::gdk::Monitor>().ok())?
            .geometry();
        Some((
            g.x() * scale,
            g.y() * scale,
            g.width() * scale,
            g.height() * scale,
        ))
    }

    /// Calls `on_change` whenever RandR reports a change of the screen, its outputs, CRTCs
    /// (modes, positions) or the primary output, from a connection of its own watched by the
    /// GLib main loop. The returned source stops the watch when removed.
    pub fn watch_randr(on_change: impl Fn() + 'static) -> Result<glib::SourceId, String> {
        use std::os::fd::AsRawFd;
        use x11rb::protocol::randr::{ConnectionExt as _, NotifyMask};
        let (conn, screen) = x11rb::connect(None).map_err(|e| e.to_string())?;
        let root = conn.setup().roots.get(screen).ok_or("no X screen")?.root;
        conn.randr_query_version(1, 5)
            .map_err(|e| e.to_string())?
            .reply()
            .map_err(|e| e.to_string())?;
        let mask = NotifyMask::SCREEN_CHANGE
            | NotifyMask::CRTC_CHANGE
            | NotifyMask::OUTPUT_CHANGE
            | NotifyMask::RESOURCE_CHANGE;
        conn.randr_select_input(root, mask)
            .map_err(|e| e.to_string())?
            .check()
            .map_err(|e| e.to_string())?;
        let fd = conn.stream().as_raw_fd();
        let watch = glib::IOCondition::IN | glib::IOCondition::HUP | glib::IOCondition::ERR;
        // The connection lives in the closure, so its socket stays open as long as the watch.
        Ok(glib::unix_fd_add_local(fd, watch, move |_, cond| {
            let mut changed = false;
            loop {
                match conn.poll_for_event() {
                    Ok(Some(_)) => changed = true,
                    Ok(None) => break,
                    Err(_) => return glib::ControlFlow::Break,
                }
            }
            if changed {
                on_change();
            }
            if cond.intersects(glib::IOCondition::HUP | glib::IOCondition::ERR) {
                return glib::ControlFlow::Break;
            }
            glib::ControlFlow::Continue
        }))
    }

    const NET_WM_STATE_REMOVE: u32 = 0;
    const NET_WM_STATE_ADD: u32 = 1;

    pub fn place(window: &gtk::Window, prefs: &UiPrefs) -> Result<(), String> {
        let surface = window.surface().ok_or("the window has no surface yet")?;
        let x11 = surface
            .downcast_ref::<X11Surface>()
            .ok_or("not an X11 window")?;
        let xid = u32::try_from(x11.xid()).map_err(|_| "window id out of range")?;
        x11.set_skip_taskbar_hint(true);
        x11.set_skip_pager_hint(true);
        let display = surface.display();
        let scale = surface.scale_factor().max(1);
        let (conn, screen) = x11rb::connect(None).map_err(|e| e.to_string())?;
        let root = conn.setup().roots.get(screen).ok_or("no X screen")?.root;
        let (mx, my, mw, mh) =
            target(&conn, root, &display, scale).ok_or("no monitor is connected")?;
        // In logical pixels, as the window's size is given.
        let (w, h) = (window.width(), window.height());
        let monitor = (mx / scale, my / scale, mw / scale, mh / scale);
        let (x, y) = corner_position(prefs.corner, monitor, w, h);
        conn.configure_window(xid, &ConfigureWindowAux::new().x(x * scale).y(y * scale))
            .map_err(|e| e.to_string())?;
        let atom = |name: &[u8]| -> Result<u32, String> {
            Ok(conn
                .intern_atom(false, name)
                .map_err(|e| e.to_string())?
                .reply()
                .map_err(|e| e.to_string())?
                .atom)
        };
        let state = atom(b"_NET_WM_STATE")?;
        let above = atom(b"_NET_WM_STATE_ABOVE")?;
        let sticky = atom(b"_NET_WM_STATE_STICKY")?;
        let action = if prefs.always_on_top {
            NET_WM_STATE_ADD
        } else {
            NET_WM_STATE_REMOVE
        };
        let msg = ClientMessageEvent::new(32, xid, state, [action, above, sticky, 1, 0]);
        conn.send_event(
            false,
            root,
            EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
            msg,
        )
        .map_err(|e| e.to_string())?;
        conn.flush().map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// The monitor the orb goes on: the primary one, else the first; `(x, y, width, height)`.
/// Each entry is `(primary, x, y, width, height)`.
pub fn pick(monitors: &[(bool, i32, i32, i32, i32)]) -> Option<(i32, i32, i32, i32)> {
    monitors
        .iter()
        .find(|m| m.0)
        .or(monitors.first())
        .map(|m| (m.1, m.2, m.3, m.4))
}

/// How long the monitors must stay unchanged before the window is placed again: one layout
/// change (`xrandr` switching several outputs) arrives as a burst of events, and a placement in
/// the middle of it would use a half-applied layout.
pub const MONITOR_SETTLE: Duration = Duration::from_millis(150);

/// The window is placed once more this long after a monitor change, because a window manager
/// moves windows by itself when the screen changes size, possibly after the first placement.
pub const WINDOW_MANAGER_SETTLE: Duration = Duration::from_millis(600);

/// Runs a placement once changes have settled (see [`MONITOR_SETTLE`]).
struct Settled {
    place: Box<dyn Fn()>,
    pending: Cell<Option<glib::SourceId>>,
}

impl Settled {
    /// A change happened: (re)starts the wait, then places, then places once more after
    /// [`WINDOW_MANAGER_SETTLE`].
    fn changed(self: &Rc<Self>) {
        if let Some(id) = self.pending.take() {
            id.remove();
        }
        let me = self.clone();
        let id = glib::timeout_add_local_once(MONITOR_SETTLE, move || {
            me.pending.set(None);
            (me.place)();
            let again = me.clone();
            glib::timeout_add_local_once(WINDOW_MANAGER_SETTLE, move || (again.place)());
        });
        self.pending.set(Some(id));
    }
}

/// Places `window` again whenever the monitors change (see the module rules): GDK's monitor
/// list (a monitor added or removed) and, on X11, every RandR change of the screen, its
/// outputs, their positions and modes and the primary output (a monitor that moves or becomes
/// primary changes no item of that list). Stops following when the window is destroyed.
pub fn follow_monitors(window: &gtk::Window, place_again: impl Fn() + 'static) {
    let settled = Rc::new(Settled {
        place: Box::new(place_again),
        pending: Cell::new(None),
    });
    let monitors = WidgetExt::display(window).monitors();
    let s = settled.clone();
    let handler = monitors.connect_items_changed(move |_, _, _, _| s.changed());
    let randr = if WidgetExt::display(window).is::<gdk4_x11::X11Display>() {
        let s = settled.clone();
        x11::watch_randr(move || s.changed())
            .inspect_err(|e| tracing::debug!("monitor changes come from GDK only: {e}"))
            .ok()
    } else {
        None
    };
    let stop = Cell::new(Some((handler, randr)));
    window.connect_destroy(move |_| {
        if let Some((handler, randr)) = stop.take() {
            monitors.disconnect(handler);
            // The watch may have ended by itself (the X connection closed).
            if let Some(source) =
                randr.and_then(|id| glib::MainContext::default().find_source_by_id(&id))
            {
                source.destroy();
            }
        }
        if let Some(id) = settled.pending.take() {
            id.remove();
        }
    });
}

/// Asks the window manager not to focus `window` when it is mapped (`_NET_WM_USER_TIME` 0);
/// call once it is realized.
pub fn no_focus_on_map(window: &gtk::Window) {
    if let Some(s) = window
        .surface()
        .and_then(|s| s.downcast::<gdk4_x11::X11Surface>().ok())
    {
        s.set_user_time(0);
    }
}

#[cfg(feature = "layer-shell")]
mod layer {
    use super::*;
    use gtk4_layer_shell::{Edge, KeyboardMode, Layer, LayerShell};

    pub fn prepare(window: &gtk::Window, prefs: &UiPrefs) {
        if !gtk4_layer_shell::is_supported() {
            return;
        }
        window.init_layer_shell();
        window.set_layer(Layer::Overlay);
        window.set_keyboard_mode(KeyboardMode::OnDemand);
        place(window, prefs);
    }

    /// Anchors the window; false when layer shell is not in use for it.
    pub fn place(window: &gtk::Window, prefs: &UiPrefs) -> bool {
        if !window.is_layer_window() {
            return false;
        }
        let c = prefs.corner;
        for (edge, on) in [
            (Edge::Left, c.is_left()),
            (Edge::Right, !c.is_left()),
            (Edge::Top, !c.is_bottom()),
            (Edge::Bottom, c.is_bottom()),
        ] {
            window.set_anchor(edge, on);
            window.set_margin(edge, if on { MARGIN } else { 0 });
        }
        window.set_layer(if prefs.always_on_top {
            Layer::Overlay
        } else {
            Layer::Top
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_primary_monitor_wins_and_without_one_the_first_that_exists() {
        let left = (false, 0, 0, 1920, 1080);
        let right = (true, 1920, 0, 1920, 1080);
        assert_eq!(pick(&[left, right]), Some((1920, 0, 1920, 1080)));
        // The primary was unplugged: the one left.
        assert_eq!(pick(&[left]), Some((0, 0, 1920, 1080)));
        assert_eq!(pick(&[]), None);
        // The corner is the monitor's, not the screen's.
        let (mx, my, mw, mh) = pick(&[left, right]).unwrap();
        assert_eq!(
            corner_position(OrbCorner::TopRight, (mx, my, mw, mh), 172, 172),
            (3840 - 172 - MARGIN, MARGIN)
        );
    }

    #[test]
    fn each_corner_keeps_the_margin_from_its_edges() {
        let m = (0, 0, 1280, 800);
        assert_eq!(corner_position(OrbCorner::TopLeft, m, 300, 200), (16, 16));
        assert_eq!(corner_position(OrbCorner::TopRight, m, 300, 200), (964, 16));
        assert_eq!(
            corner_position(OrbCorner::BottomLeft, m, 300, 200),
            (16, 584)
        );
        assert_eq!(
            corner_position(OrbCorner::BottomRight, m, 300, 200),
            (964, 584)
        );
        // A second monitor to the right; a window larger than the monitor stays on it.
        assert_eq!(
            corner_position(OrbCorner::BottomRight, (1280, 0, 800, 600), 2000, 2000),
            (1280, 0)
        );
    }
}
