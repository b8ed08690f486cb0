//! The `sayri-orb` program's entry point ([`run`]): its command line, the daemon link or demo
//! it shows, the optional screenshot, and the GTK application. The binary calls only [`run`],
//! so a test executable that calls it runs exactly what the installed program runs.

use crate::demo::Demo;
use crate::link::{DaemonStarter, LinkOptions};
use crate::ui::{OrbApp, Source, screenshot};
use clap::Parser;
use gtk::glib;
use gtk::prelude::*;
use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

/// Application id (also the `.desktop` file's name).
const APP_ID: &str = "org.sayri.Orb";

/// Sayri's desktop orb: an animated orb with a card for the conversation, permission questions,
/// sessions and settings. A client of the Sayri daemon, which it starts when none runs.
#[derive(Debug, Parser)]
#[command(name = "sayri-orb", version, about)]
struct Args {
    /// Do not start the daemon when it is not running; keep trying to connect instead.
    #[arg(long)]
    no_start: bool,
    /// Render the window into this PNG file, then exit.
    #[arg(long, value_name = "PATH")]
    screenshot: Option<PathBuf>,
    /// With --screenshot: wait this many milliseconds after the window appears.
    #[arg(long, value_name = "N", default_value_t = 400, requires = "screenshot")]
    after_ms: u64,
    /// Drive the window from a canned event script instead of the daemon.
    #[arg(long, value_enum, value_name = "STATE")]
    demo: Option<Demo>,
    /// Do not show a tray icon.
    #[arg(long)]
    no_tray: bool,
}

fn source(args: &Args) -> Result<Source, String> {
    if let Some(demo) = args.demo {
        return Ok(Source::Demo(demo));
    }
    let paths = sayri_client::paths::Paths::from_env().map_err(|e| e.to_string())?;
    let starter = if args.no_start {
        None
    } else {
        DaemonStarter::sayri_ping()
    };
    if starter.is_none() && !args.no_start {
        tracing::warn!(
            "the `sayri` program was not found (next to sayri-orb, on PATH or in SAYRI_BIN), so the daemon cannot be started from here; waiting for one"
        );
    }
    Ok(Source::Daemon(LinkOptions {
        socket: paths.socket(),
        starter,
    }))
}

/// Captures the window `after_ms` after it is mapped, then quits; the outcome lands in `result`.
fn schedule_screenshot(
    app: &Rc<OrbApp>,
    path: PathBuf,
    after_ms: u64,
    result: Rc<RefCell<Result<(), String>>>,
) {
    let weak = Rc::downgrade(app);
    let arm = move || {
        let (weak, path, result) = (weak.clone(), path.clone(), result.clone());
        glib::timeout_add_local_once(Duration::from_millis(after_ms), move || {
            let Some(app) = weak.upgrade() else { return };
            *result.borrow_mut() =
                screenshot::capture(&app.window, &path).map_err(|e| e.to_string());
            app.quit();
        });
    };
    if app.window.is_mapped() {
        arm();
    } else {
        app.window.connect_map(move |_| arm());
    }
}

/// Runs the orb with the process's command line (as `sayri-orb` would) and returns its exit
/// status: 1 when the arguments, the paths or a requested screenshot fail.
pub fn run() -> ExitCode {
    // The daemon's logging setup: `SAYRI_LOG` (or `RUST_LOG`) filters, stderr.
    sayri_client::logging::init("warn");
    let args = Args::parse();
    let source = match source(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sayri-orb: error: {e}");
            return ExitCode::from(1);
        }
    };
    let application = gtk::Application::builder()
        .application_id(APP_ID)
        .flags(gtk::gio::ApplicationFlags::NON_UNIQUE)
        .build();
    let shot: Rc<RefCell<Result<(), String>>> = Rc::new(RefCell::new(Ok(())));
    let keep: Rc<RefCell<Option<Rc<OrbApp>>>> = Rc::new(RefCell::new(None));
    let (k, s) = (keep.clone(), shot.clone());
    let screenshot = args.screenshot.clone();
    let (after_ms, tray) = (args.after_ms, !args.no_tray && args.screenshot.is_none());
    application.connect_activate(move |gapp| {
        if k.borrow().is_some() {
            return;
        }
        let app = OrbApp::new(Some(gapp), source.clone());
        if let Some(path) = &screenshot {
            schedule_screenshot(&app, path.clone(), after_ms, s.clone());
        }
        if tray {
            app.start_tray();
        }
        // Shown, not presented: presenting asks the window manager for the keyboard, and the
        // orb must never take it from the window the person is typing in.
        app.window.set_visible(true);
        *k.borrow_mut() = Some(app);
    });
    let status = application.run_with_args::<&str>(&[]);
    drop(keep);
    if let Err(e) = &*shot.borrow() {
        eprintln!("sayri-orb: error: {e}");
        return ExitCode::from(1);
    }
    if status != glib::ExitCode::SUCCESS {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
