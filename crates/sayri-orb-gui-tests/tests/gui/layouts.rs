//! The `sayri-orb` program on real RandR monitors (Xorg with the dummy driver, see
//! [`super::dummy_x`]) under a window manager (openbox), connected to a real daemon: it sits in
//! the top-right corner of the primary monitor, not of the whole screen, and follows the
//! monitors within 3 s when the primary one moves, a third one appears, its monitor is
//! unplugged (it goes to the one left, and is drawn there) and plugged back; at `GDK_SCALE=2`
//! it is drawn twice as large, in device pixels.
//!
//! "On a monitor" means: the orb's window lies inside the monitor's rectangle within 64 pixels
//! of its top-right corner, and a root-window screenshot of that rectangle has drawn pixels
//! (mapped is not visible). "Not on a monitor": that screenshot is empty.

use super::dummy_x::{DummyX, LEFT, Layout, RIGHT, Rect, THIRDS};
use super::world::World;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the orb may take to follow a monitor change.
const FOLLOW: Duration = Duration::from_secs(3);
/// How long the orb must then stay where it went.
const STAY: Duration = Duration::from_secs(1);
/// How long the orb may take to appear after it starts.
const START: Duration = Duration::from_secs(20);
/// The orb window's `WM_CLASS` instance name.
const ORB_CLASS: &str = "sayri-orb";
/// How close to the monitor's top-right corner the window must be.
const CORNER_SLACK: i32 = 64;

/// Xorg-dummy, openbox, a daemon and the orb program; all stopped when dropped.
struct Desk {
    x: DummyX,
    world: World,
    wm: Child,
    orb: Option<Child>,
}

impl Desk {
    /// The server in `layout` with a window manager and a daemon; the orb not started yet.
    fn new(layout: Layout) -> Desk {
        let x = DummyX::start();
        x.set_layout(layout);
        let wm = Command::new("openbox")
            .env("DISPLAY", x.display())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("openbox is missing; install the test packages with ./scripts/setup --tests");
        let mut world = World::new();
        world.start_daemon();
        std::thread::sleep(Duration::from_millis(500));
        Desk {
            x,
            world,
            wm,
            orb: None,
        }
    }

    /// Starts the orb program and waits until it is on `monitor`.
    fn start_orb(&mut self, monitor: Rect) {
        self.start_orb_with(monitor, &[]);
    }

    /// Starts the orb program with the extra environment `env` and waits until it is on
    /// `monitor`.
    fn start_orb_with(&mut self, monitor: Rect, env: &[(&str, &str)]) {
        let child = self
            .world
            .orb_program(self.x.display())
            .envs(env.iter().copied())
            .spawn()
            .expect("start the orb program");
        self.orb = Some(child);
        let took = self.wait_on(monitor, START);
        println!(
            "    the orb appeared on {monitor:?} {:.2} s after it started",
            took
        );
    }

    /// Waits until the orb is on `monitor`; returns the seconds it took, panics after `limit`.
    fn wait_on(&mut self, monitor: Rect, limit: Duration) -> f64 {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.is_on(monitor) {
                return started.elapsed().as_secs_f64();
            }
            if let Some(Ok(Some(st))) = self.orb.as_mut().map(Child::try_wait) {
                panic!("the orb exited ({st}): {}", self.world.orb_log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "the orb is not on {monitor:?} after {limit:?}: window {:?} (windows: {:?}), painted there {}\norb log:\n{}",
            self.x.geometry_of_class(ORB_CLASS),
            self.x.window_classes(),
            self.x.painted(monitor),
            self.world.orb_log()
        );
    }

    /// Switches to `layout`, waits until the orb is on `monitor` (printing how long that took)
    /// and checks that it stays there.
    fn follow(&mut self, layout: Layout, monitor: Rect) {
        self.x.set_layout(layout);
        let took = self.wait_on(monitor, FOLLOW);
        println!("    {layout:?}: the orb was on {monitor:?} after {took:.2} s");
        // It stays there once the window manager has reacted to the new screen size too.
        std::thread::sleep(STAY);
        assert!(
            self.is_on(monitor),
            "the orb left {monitor:?} again: window {:?}",
            self.x.geometry_of_class(ORB_CLASS)
        );
    }

    fn is_on(&self, monitor: Rect) -> bool {
        self.x
            .geometry_of_class(ORB_CLASS)
            .is_some_and(|g| in_top_right_corner(g, monitor))
            && self.x.painted(monitor) > 0
    }

    /// Panics when anything is drawn on `monitor`.
    fn assert_not_on(&self, monitor: Rect) {
        let painted = self.x.painted(monitor);
        assert_eq!(
            painted,
            0,
            "pixels drawn on {monitor:?}; the orb window is at {:?}",
            self.x.geometry_of_class(ORB_CLASS)
        );
    }
}

impl Drop for Desk {
    fn drop(&mut self) {
        for child in self.orb.iter_mut().chain(std::iter::once(&mut self.wm)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether window `g` lies inside `monitor` and near its top-right corner.
fn in_top_right_corner(g: Rect, monitor: Rect) -> bool {
    let (x, y, w, h) = g;
    let (mx, my, mw, mh) = monitor;
    let right = mx + mw;
    x >= mx
        && y >= my
        && x + w <= right
        && y + h <= my + mh
        && right - (x + w) <= CORNER_SLACK
        && y - my <= CORNER_SLACK
}

pub fn orb_sits_in_the_primary_monitors_corner_not_the_screens() {
    let mut desk = Desk::new(Layout::TwoPrimaryLeft);
    desk.start_orb(LEFT);
    std::thread::sleep(Duration::from_millis(300));
    desk.assert_not_on(RIGHT);
}

pub fn orb_follows_the_primary_monitor_when_it_moves_and_when_a_third_appears() {
    let mut desk = Desk::new(Layout::TwoPrimaryLeft);
    desk.start_orb(LEFT);
    desk.follow(Layout::TwoPrimaryRight, RIGHT);
    desk.assert_not_on(LEFT);
    desk.follow(Layout::ThreeMiddle, THIRDS[1]);
    desk.assert_not_on(THIRDS[0]);
    desk.assert_not_on(THIRDS[2]);
}

pub fn orb_moves_to_the_remaining_monitor_when_its_own_is_unplugged_and_back_when_replugged() {
    let mut desk = Desk::new(Layout::TwoPrimaryRight);
    desk.start_orb(RIGHT);
    desk.assert_not_on(LEFT);
    desk.follow(Layout::Single, LEFT);
    desk.follow(Layout::TwoPrimaryRight, RIGHT);
    desk.assert_not_on(LEFT);
}

pub fn orb_at_gdk_scale_2_is_drawn_twice_as_large_on_the_primary_monitor() {
    // The same orb at scale 1, then at scale 2: the window doubles in device pixels each way,
    // the orb (`ui.orb_size` 140) is 280 device pixels high plus its margin, and about four
    // times as many pixels are drawn.
    let mut sizes = Vec::new();
    for scale in ["1", "2"] {
        let mut desk = Desk::new(Layout::TwoPrimaryRight);
        desk.start_orb_with(RIGHT, &[("GDK_SCALE", scale)]);
        std::thread::sleep(Duration::from_millis(500));
        let (_, _, w, h) = desk.x.geometry_of_class(ORB_CLASS).expect("the orb window");
        let painted = desk.x.painted(RIGHT);
        println!("    GDK_SCALE={scale}: window {w} x {h}, {painted} pixels drawn");
        desk.assert_not_on(LEFT);
        sizes.push((w, h, painted));
    }
    let ((w1, h1, p1), (w2, h2, p2)) = (sizes[0], sizes[1]);
    assert!(
        (w2 - 2 * w1).abs() <= 4 && (h2 - 2 * h1).abs() <= 4,
        "scale 2 is not twice scale 1: {w1} x {h1} then {w2} x {h2}"
    );
    assert!(
        (280..=360).contains(&h2),
        "the orb window is {h2} device pixels high at scale 2"
    );
    assert!(
        p2 > 40_000 && p2 >= 3 * p1,
        "{p2} pixels drawn at scale 2 against {p1} at scale 1"
    );
}
