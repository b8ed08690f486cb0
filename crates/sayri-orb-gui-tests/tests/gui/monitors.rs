//! The orb under a real window manager (openbox): it appears in the top-right corner of the
//! monitor, never takes the keyboard from the window the person is typing in (not when it
//! appears, not while it answers, runs a step or shows a permission card: keys typed meanwhile
//! reach the person's window exactly; a click into its entry gives it the keyboard and a click
//! back gives it back), stays above a window raised over it, and takes pointer input only inside its round orb (the X
//! input shape the server applies to clicks). This Xvfb has one monitor; which monitor the orb
//! picks among several, and how it follows them when they change, is tested on real RandR
//! outputs in `layouts.rs`.

use super::harness::{settle, wait_until};
use gtk::prelude::*;
use sayri_orb::link::LinkOptions;
use sayri_orb::ui::{OrbApp, Source};
use std::process::{Child, Command};
use std::rc::Rc;
use std::time::Duration;
use x11rb::connection::Connection;
use x11rb::protocol::shape::{ConnectionExt as _, SK};
use x11rb::protocol::xproto::ConnectionExt as _;

const SCREEN_W: i32 = 1280;
const WAIT: Duration = Duration::from_secs(5);

struct WindowManager(Child);

impl Drop for WindowManager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn active_window() -> Option<u32> {
    let out = Command::new("xdotool")
        .arg("getactivewindow")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The managed windows, bottom to top (the window manager's `_NET_CLIENT_LIST_STACKING`).
fn stacking() -> Vec<u32> {
    let (conn, screen) = x11rb::connect(None).unwrap();
    let root = conn.setup().roots[screen].root;
    let atom = conn
        .intern_atom(false, b"_NET_CLIENT_LIST_STACKING")
        .unwrap()
        .reply()
        .unwrap()
        .atom;
    let reply = conn
        .get_property(
            false,
            root,
            atom,
            x11rb::protocol::xproto::AtomEnum::WINDOW,
            0,
            1024,
        )
        .unwrap()
        .reply()
        .unwrap();
    reply.value32().map(Iterator::collect).unwrap_or_default()
}

/// Runs `xdotool ARGS`; it must succeed.
fn xdotool(args: &[&str]) {
    let status = Command::new("xdotool")
        .args(args)
        .status()
        .expect("xdotool runs");
    assert!(status.success(), "xdotool {args:?}");
}

/// Clicks the middle of `widget`, which is inside the X window `window`, with the real pointer.
fn click_widget(window: u32, widget: &impl IsA<gtk::Widget>) {
    let root = widget.root().expect("a widget in a window");
    let bounds = widget
        .compute_bounds(&root)
        .expect("the widget is laid out");
    let (x, y, _, _) = geometry(window);
    let cx = x + (bounds.x() + bounds.width() / 2.0) as i32;
    let cy = y + (bounds.y() + bounds.height() / 2.0) as i32;
    xdotool(&["mousemove", "--sync", &cx.to_string(), &cy.to_string()]);
    xdotool(&["click", "1"]);
}

fn xid(w: &gtk::Window) -> u32 {
    w.surface()
        .and_then(|s| s.downcast::<gdk4_x11::X11Surface>().ok())
        .map(|s| s.xid() as u32)
        .expect("an X11 window")
}

/// `(x, y, width, height)` of window `id` on the screen.
fn geometry(id: u32) -> (i32, i32, i32, i32) {
    let (conn, screen) = x11rb::connect(None).unwrap();
    let root = conn.setup().roots[screen].root;
    let g = conn.get_geometry(id).unwrap().reply().unwrap();
    let t = conn
        .translate_coordinates(id, root, 0, 0)
        .unwrap()
        .reply()
        .unwrap();
    (
        i32::from(t.dst_x),
        i32::from(t.dst_y),
        i32::from(g.width),
        i32::from(g.height),
    )
}

fn input_rects(id: u32) -> Vec<(i16, i16, u16, u16)> {
    let (conn, _) = x11rb::connect(None).unwrap();
    let r = conn
        .shape_get_rectangles(id, SK::INPUT)
        .unwrap()
        .reply()
        .unwrap();
    r.rectangles
        .iter()
        .map(|b| (b.x, b.y, b.width, b.height))
        .collect()
}

/// Whether the X input shape of window `id` covers its point `(x, y)`.
fn takes_input_at(id: u32, x: i32, y: i32) -> bool {
    let (conn, _) = x11rb::connect(None).unwrap();
    let r = conn
        .shape_get_rectangles(id, SK::INPUT)
        .unwrap()
        .reply()
        .unwrap();
    r.rectangles.iter().any(|b| {
        let (bx, by) = (i32::from(b.x), i32::from(b.y));
        x >= bx && x < bx + i32::from(b.width) && y >= by && y < by + i32::from(b.height)
    })
}

fn in_top_right_of(g: (i32, i32, i32, i32), left: i32, width: i32) -> bool {
    let (x, y, w, _) = g;
    let right = left + width;
    x >= left && x + w <= right && right - (x + w) <= 64 && y <= 64
}

pub fn orb_sits_in_the_corner_takes_no_focus_and_passes_clicks_around_its_circle() {
    let _wm = WindowManager(
        Command::new("openbox")
            .spawn()
            .expect("openbox is missing; install the test packages with ./scripts/setup --tests"),
    );
    settle(Duration::from_millis(800));
    // The window the person types in.
    let holder = gtk::Window::builder().title("sy-64-holder").build();
    let typed = gtk::Entry::new();
    holder.set_child(Some(&typed));
    holder.present();
    assert!(
        wait_until(WAIT, || holder.is_mapped()),
        "the holder did not map"
    );
    let holder_id = xid(&holder);
    assert!(
        wait_until(WAIT, || active_window() == Some(holder_id)),
        "the holder did not get the focus: {:?}",
        active_window()
    );

    // Connected to a real daemon, so the orb rests as the orb alone (the card closed).
    let mut world = super::world::World::new();
    world.start_daemon();
    let app: Rc<OrbApp> = OrbApp::new(
        None,
        Source::Daemon(LinkOptions {
            socket: world.socket(),
            starter: None,
        }),
    );
    app.window.set_visible(true);
    assert!(wait_until(WAIT, || app.window.is_mapped()));
    super::world::wait_connected(&app);
    let orb = xid(&app.window);
    let placed = wait_until(WAIT, || in_top_right_of(geometry(orb), 0, SCREEN_W));
    assert!(
        placed,
        "not in the monitor's top-right corner: {:?}",
        geometry(orb)
    );
    settle(Duration::from_millis(300));
    assert_eq!(
        active_window(),
        Some(holder_id),
        "the orb took the focus when it appeared"
    );
    // Talking to it (a streamed answer) does not take the keyboard either.
    super::world::type_request(&app, "Hello?");
    settle(Duration::from_secs(2));
    assert_eq!(
        active_window(),
        Some(holder_id),
        "the orb took the focus while answering"
    );

    // Pointer input: inside the round orb only. The orb is the window's right-hand square.
    // The orb is the window's top-right square of `ui.orb_size` (140 by default); the card,
    // when open, sits to its left.
    let (_, _, w, _) = geometry(orb);
    let side = 140;
    let (ox, oy) = (w - side, 0);
    assert!(
        takes_input_at(orb, ox + side / 2, oy + side / 2),
        "the orb's centre takes no click"
    );
    assert!(
        !takes_input_at(orb, ox + 3, oy + 3),
        "the corner outside the circle takes clicks: window {:?}, input shape {:?}",
        geometry(orb),
        input_rects(orb).iter().take(8).collect::<Vec<_>>()
    );
    assert!(!takes_input_at(orb, ox + side - 4, oy + side - 4));

    // The first answer has ended (its last words are shown and the orb is idle) before the
    // next request: `busy` alone is also false before a slow daemon has begun the turn.
    assert!(
        wait_until(Duration::from_secs(30), || {
            super::acceptance::reply_text(&app).contains(super::world::ANSWER_END)
                && !app.model().busy
        }),
        "the answer did not finish: {:?}",
        super::acceptance::reply_text(&app)
    );
    // Nor does a tool step and the permission card it raises; what the person types still
    // lands in their window, exactly.
    let marker = world.home().join("sy64-card");
    super::world::type_request(
        &app,
        &format!("<cmd>echo step && touch {}</cmd>", marker.display()),
    );
    let card = super::acceptance::wait_for_card(&app, &world);
    settle(Duration::from_millis(500));
    assert_eq!(
        active_window(),
        Some(holder_id),
        "the permission card took the focus"
    );
    xdotool(&["type", "--delay", "30", "sy64 typed"]);
    assert!(
        wait_until(WAIT, || typed.text() == "sy64 typed"),
        "the keys did not reach the person's window exactly: {:?}",
        typed.text()
    );
    let deny: gtk::Button = super::harness::one(&card, "permission-deny");
    deny.emit_clicked();
    assert!(
        wait_until(WAIT, || super::harness::named(
            &app.window,
            "permission-card"
        )
        .is_empty()),
        "the card goes away once answered"
    );
    assert!(!marker.exists(), "denied: nothing ran");
    assert_eq!(active_window(), Some(holder_id), "answering took the focus");

    // A click into the orb's entry gives it the keyboard (it takes focus when asked), and a
    // click back into the person's window takes it back: no grab is left behind.
    let entry: gtk::Entry = super::harness::one(&app.window, "talk-entry");
    // The card has just grown with the answer; let the window reach its size first.
    settle(Duration::from_secs(1));
    click_widget(orb, &entry);
    assert!(
        wait_until(WAIT, || active_window() == Some(orb)),
        "a click into the entry did not give the orb the keyboard"
    );
    xdotool(&["type", "--delay", "30", "hello"]);
    assert!(
        wait_until(WAIT, || entry.text() == "hello"),
        "typed into the orb: {:?}",
        entry.text()
    );
    xdotool(&["key", "Escape"]);
    settle(Duration::from_millis(300));
    click_widget(holder_id, &typed);
    assert!(
        wait_until(WAIT, || active_window() == Some(holder_id)),
        "a click into the person's window did not take the keyboard back"
    );
    xdotool(&["type", "--delay", "30", " back"]);
    assert!(
        wait_until(WAIT, || typed.text() == "sy64 typed back"),
        "the keys went elsewhere: holder {:?}, orb entry {:?}",
        typed.text(),
        entry.text()
    );

    // With `ui.always_on_top` (the default) the orb stays above the person's window when
    // that window is moved over it and raised: the window manager's stacking order says so.
    let (ox, oy, _, _) = geometry(orb);
    xdotool(&[
        "windowmove",
        "--sync",
        &holder_id.to_string(),
        &ox.to_string(),
        &oy.to_string(),
    ]);
    xdotool(&["windowraise", &holder_id.to_string()]);
    settle(Duration::from_millis(500));
    let order = stacking();
    let at = |id: u32| order.iter().position(|w| *w == id);
    assert!(
        matches!((at(holder_id), at(orb)), (Some(h), Some(o)) if o > h),
        "the raised window is above the orb: stacking {order:?}, holder {holder_id}, orb {orb}"
    );

    app.quit();
    holder.destroy();
    settle(Duration::from_millis(200));
}
