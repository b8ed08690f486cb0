//! A private Xorg server with the dummy video driver: real RandR outputs (`DUMMY0`…`DUMMY15`)
//! that GTK sees as monitors, switched on, moved, made primary and unplugged with `xrandr`.
//! Xvfb has one fixed output, so monitor layouts need this server.
//!
//! Each server gets a free display number and its own temporary directory (config, log); it is
//! stopped when dropped. Also reads what the server shows: window geometry by `WM_CLASS` and
//! painted pixels of a root-window screenshot.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, ImageFormat, Window};
use x11rb::rust_connection::RustConnection;

/// What to install when the server cannot start.
const INSTALL: &str =
    "install xserver-xorg-core and xserver-xorg-video-dummy (./scripts/setup --tests)";

/// A virtual screen large enough for three 1920-pixel monitors side by side.
const CONFIG: &str = r#"Section "ServerFlags"
  Option "AutoAddDevices" "false"
  Option "AutoEnableDevices" "false"
EndSection
Section "Device"
  Identifier "dummy"
  Driver "dummy"
  VideoRam 256000
EndSection
Section "Monitor"
  Identifier "monitor"
  HorizSync 5.0-1000.0
  VertRefresh 5.0-200.0
EndSection
Section "Screen"
  Identifier "screen"
  Device "dummy"
  Monitor "monitor"
  DefaultDepth 24
  SubSection "Display"
    Depth 24
    Virtual 5760 1080
  EndSubSection
EndSection
"#;

/// Modes the layouts use: `(name, xrandr --newmode timings)`.
const MODES: [(&str, &str); 2] = [
    (
        "1920x1080_60",
        "173.00 1920 2048 2248 2576 1080 1083 1088 1120 -hsync +vsync",
    ),
    (
        "1280x1080_60",
        "115.00 1280 1368 1496 1712 1080 1083 1093 1120 -hsync +vsync",
    ),
];

/// A monitor rectangle `(x, y, width, height)` on the screen.
pub type Rect = (i32, i32, i32, i32);

/// Left monitor of the two-monitor layouts (output `DUMMY0`).
pub const LEFT: Rect = (0, 0, 1920, 1080);
/// Right monitor of the two-monitor layouts (output `DUMMY1`).
pub const RIGHT: Rect = (1920, 0, 1920, 1080);
/// The three-monitor layout's monitors, 1280 pixels wide (outputs `DUMMY0`..`DUMMY2`).
pub const THIRDS: [Rect; 3] = [
    (0, 0, 1280, 1080),
    (1280, 0, 1280, 1080),
    (2560, 0, 1280, 1080),
];

/// A monitor arrangement.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// [`LEFT`] (primary) and [`RIGHT`].
    TwoPrimaryLeft,
    /// [`LEFT`] and [`RIGHT`] (primary).
    TwoPrimaryRight,
    /// [`THIRDS`], the middle one primary.
    ThreeMiddle,
    /// Only [`LEFT`]: the right monitor unplugged (and no primary set).
    Single,
}

/// A running Xorg-dummy server.
pub struct DummyX {
    child: Child,
    display: String,
    /// Holds the config and the log; removed with the server.
    _dir: tempfile::TempDir,
}

impl DummyX {
    /// Starts a server on a free display; panics (saying what to install) when it cannot.
    pub fn start() -> DummyX {
        let dir = tempfile::Builder::new()
            .prefix("syxorg")
            .tempdir()
            .expect("temp dir");
        let config = dir.path().join("xorg.conf");
        std::fs::write(&config, CONFIG).expect("xorg.conf");
        let base = 310 + (std::process::id() % 300);
        for n in base..base + 60 {
            if Path::new(&format!("/tmp/.X{n}-lock")).exists()
                || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
            {
                continue;
            }
            if let Some(child) = Self::try_display(n, &config, dir.path()) {
                let x = DummyX {
                    child,
                    display: format!(":{n}"),
                    _dir: dir,
                };
                x.add_modes();
                return x;
            }
        }
        panic!(
            "no free X display for Xorg between :{base} and :{}",
            base + 60
        )
    }

    /// Starts Xorg on display `n`; `None` when another server took the number first.
    fn try_display(n: u32, config: &Path, dir: &Path) -> Option<Child> {
        let log = dir.join(format!("xorg-{n}.log"));
        let mut child = Command::new("Xorg")
            .arg(format!(":{n}"))
            .args(["-noreset", "-nolisten", "tcp", "-novtswitch", "-sharevts"])
            .arg("-config")
            .arg(config)
            .arg("-logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run Xorg ({e}); {INSTALL}"));
        let socket = format!("/tmp/.X11-unix/X{n}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                if text.contains("Server is already active") {
                    return None;
                }
                let errors: Vec<&str> = text.lines().filter(|l| l.contains("(EE)")).collect();
                panic!(
                    "Xorg with the dummy driver did not start; {INSTALL}\n{}",
                    errors.join("\n")
                );
            }
            if Path::new(&socket).exists() && x11rb::connect(Some(&format!(":{n}"))).is_ok() {
                return Some(child);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "Xorg did not open display :{n} within 20 s (log: {})",
            log.display()
        )
    }

    /// The display name (`:N`).
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Runs `xrandr ARGS` on this server; panics when it fails.
    pub fn xrandr(&self, args: &[&str]) {
        let out = Command::new("xrandr")
            .args(["-display", &self.display])
            .args(args)
            .output()
            .expect("xrandr is missing; install x11-xserver-utils (./scripts/setup --tests)");
        assert!(
            out.status.success(),
            "xrandr {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn add_modes(&self) {
        for (name, timings) in MODES {
            let mut args = vec!["--newmode", name];
            args.extend(timings.split(' '));
            self.xrandr(&args);
            for output in ["DUMMY0", "DUMMY1", "DUMMY2"] {
                self.xrandr(&["--addmode", output, name]);
            }
        }
    }

    /// Switches to `layout` in one RandR request.
    pub fn set_layout(&self, layout: Layout) {
        let wide = "1920x1080_60";
        let third = "1280x1080_60";
        let args: Vec<&str> = match layout {
            Layout::TwoPrimaryLeft | Layout::TwoPrimaryRight => {
                let (l, r) = if matches!(layout, Layout::TwoPrimaryLeft) {
                    (vec!["--primary"], vec![])
                } else {
                    (vec![], vec!["--primary"])
                };
                [
                    &["--output", "DUMMY0", "--mode", wide, "--pos", "0x0"][..],
                    &l,
                    &["--output", "DUMMY1", "--mode", wide, "--pos", "1920x0"],
                    &r,
                    &["--output", "DUMMY2", "--off"],
                ]
                .concat()
            }
            Layout::ThreeMiddle => vec![
                "--output",
                "DUMMY0",
                "--mode",
                third,
                "--pos",
                "0x0",
                "--output",
                "DUMMY1",
                "--mode",
                third,
                "--pos",
                "1280x0",
                "--primary",
                "--output",
                "DUMMY2",
                "--mode",
                third,
                "--pos",
                "2560x0",
            ],
            Layout::Single => vec![
                "--output", "DUMMY0", "--mode", wide, "--pos", "0x0", "--output", "DUMMY1",
                "--off", "--output", "DUMMY2", "--off",
            ],
        };
        self.xrandr(&args);
    }

    /// A client connection to this server.
    pub fn connect(&self) -> (RustConnection, Window) {
        let (conn, screen) = x11rb::connect(Some(&self.display)).expect("connect to Xorg");
        let root = conn.setup().roots[screen].root;
        (conn, root)
    }

    /// `(x, y, width, height)` on the screen of the first mapped window whose `WM_CLASS`
    /// (instance or class) is `class`, if any.
    pub fn geometry_of_class(&self, class: &str) -> Option<Rect> {
        let (conn, root) = self.connect();
        let id = find_class(&conn, root, class)?;
        let g = conn.get_geometry(id).ok()?.reply().ok()?;
        let t = conn
            .translate_coordinates(id, root, 0, 0)
            .ok()?
            .reply()
            .ok()?;
        Some((
            i32::from(t.dst_x),
            i32::from(t.dst_y),
            i32::from(g.width),
            i32::from(g.height),
        ))
    }

    /// `WM_CLASS` (instance and class) of every window, for failure messages.
    pub fn window_classes(&self) -> Vec<String> {
        let (conn, root) = self.connect();
        let mut out = Vec::new();
        classes(&conn, root, &mut out);
        out
    }

    /// Pixels inside `rect` of a root-window screenshot that are not black (the empty root's
    /// colour): more than 0 means something is really drawn there. Parts of `rect` outside
    /// the screen count as black.
    pub fn painted(&self, rect: Rect) -> usize {
        let (conn, root) = self.connect();
        let screen = conn.get_geometry(root).unwrap().reply().unwrap();
        let (x, y) = (rect.0.max(0), rect.1.max(0));
        let w = (rect.0 + rect.2).min(i32::from(screen.width)) - x;
        let h = (rect.1 + rect.3).min(i32::from(screen.height)) - y;
        if w <= 0 || h <= 0 {
            return 0;
        }
        let img = conn
            .get_image(
                ImageFormat::Z_PIXMAP,
                root,
                x as i16,
                y as i16,
                w as u16,
                h as u16,
                !0,
            )
            .unwrap()
            .reply()
            .unwrap();
        // Depth 24 in 32-bit pixels: blue, green, red, padding.
        img.data
            .chunks_exact(4)
            .filter(|p| p[0] != 0 || p[1] != 0 || p[2] != 0)
            .count()
    }
}

/// `WM_CLASS` of every viewable window below `parent` (for failure messages).
fn classes(conn: &RustConnection, parent: Window, out: &mut Vec<String>) {
    let Some(tree) = conn.query_tree(parent).ok().and_then(|c| c.reply().ok()) else {
        return;
    };
    for w in tree.children {
        if let Some(p) = conn
            .get_property(false, w, AtomEnum::WM_CLASS, AtomEnum::STRING, 0, 256)
            .ok()
            .and_then(|c| c.reply().ok())
            .filter(|p| !p.value.is_empty())
        {
            out.push(String::from_utf8_lossy(&p.value).replace('\0', " "));
        }
        classes(conn, w, out);
    }
}

/// The first viewable window below `parent` (depth first) whose `WM_CLASS` names `class`.
fn find_class(conn: &RustConnection, parent: Window, class: &str) -> Option<Window> {
    let tree = conn.query_tree(parent).ok()?.reply().ok()?;
    for w in tree.children {
        let viewable = conn
            .get_window_attributes(w)
            .ok()
            .and_then(|c| c.reply().ok())
            .is_some_and(|a| a.map_state == x11rb::protocol::xproto::MapState::VIEWABLE);
        if !viewable {
            continue;
        }
        let prop = conn
            .get_property(false, w, AtomEnum::WM_CLASS, AtomEnum::STRING, 0, 256)
            .ok()
            .and_then(|c| c.reply().ok());
        if prop.is_some_and(|p| p.value.split(|b| *b == 0).any(|n| n == class.as_bytes())) {
            return Some(w);
        }
        if let Some(found) = find_class(conn, w, class) {
            return Some(found);
        }
    }
    None
}

impl Drop for DummyX {
    fn drop(&mut self) {
        super::harness::stop_x_server(&mut self.child);
    }
}
