//! The runner: private D-Bus session, private Xvfb display, GTK on the main thread, one test at
//! a time, libtest-style output. Also the helpers tests use to wait and to read the widget tree.

use gtk::glib;
use gtk::prelude::*;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A test: runs on the GTK main thread; panics to fail.
pub type TestFn = fn();

const BUS_VAR: &str = "SAYRI_ORB_TEST_BUS";

/// GLib warnings and criticals logged during the current test.
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Takes the GLib warnings logged since the last call.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `tests` (see the crate docs of `main.rs`); returns the process exit code.
pub fn run(tests: &[(&str, TestFn)]) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    if std::env::var_os(BUS_VAR).is_none() {
        return rerun_in_private_bus();
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<&(&str, TestFn)> = tests
        .iter()
        .filter(|(n, _)| filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    if selected.is_empty() {
        println!(
            "\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; {} filtered out\n",
            tests.len()
        );
        return ExitCode::SUCCESS;
    }
    let mut xvfb = match Xvfb::start() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("gui tests: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = gtk::init() {
        eprintln!("gui tests: GTK could not start on {}: {e}", xvfb.display);
        return ExitCode::FAILURE;
    }
    glib::log_set_writer_func(|level, fields| {
        if matches!(level, glib::LogLevel::Warning | glib::LogLevel::Critical) {
            let msg: String = fields
                .iter()
                .filter(|f| f.key() == "MESSAGE")
                .filter_map(|f| f.value_str().map(str::to_string))
                .collect();
            WARNINGS.lock().unwrap_or_else(|e| e.into_inner()).push(msg);
        }
        glib::log_writer_default(level, fields)
    });
    let mut failed = Vec::new();
    let started = Instant::now();
    for (name, test) in &selected {
        take_warnings();
        let outcome = std::panic::catch_unwind(test);
        settle(Duration::from_millis(50));
        match outcome {
            Ok(()) => println!("test {name} ... ok"),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                println!("test {name} ... FAILED");
                failed.push((name.to_string(), msg));
            }
        }
    }
    xvfb.stop();
    if !failed.is_empty() {
        println!("\nfailures:\n");
        for (name, msg) in &failed {
            println!("---- {name} ----\n{msg}\n");
        }
    }
    let passed = selected.len() - failed.len();
    println!(
        "\ntest result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        tests.len() - selected.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Re-runs this executable inside `dbus-run-session` (a private session bus for GTK, the
/// accessibility bus and the tray) and passes its exit code on.
fn rerun_in_private_bus() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("gui tests: cannot find this test executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let status = Command::new("dbus-run-session")
        .arg("--")
        .arg(exe)
        .args(std::env::args_os().skip(1))
        .env(BUS_VAR, "1")
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("gui tests: failed ({s})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!(
                "gui tests: cannot run dbus-run-session ({e}); install the test packages with ./scripts/setup --tests"
            );
            ExitCode::FAILURE
        }
    }
}

/// A private X server on a free display.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    fn start() -> Result<Xvfb, String> {
        let base = 40 + (std::process::id() % 200);
        for n in base..base + 60 {
            if Path::new(&format!("/tmp/.X{n}-lock")).exists()
                || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
            {
                continue;
            }
            let mut child = Command::new("Xvfb")
                .arg(format!(":{n}"))
                .args(["-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| {
                    format!("cannot start Xvfb ({e}); install the test packages with ./scripts/setup --tests")
                })?;
            let socket = format!("/tmp/.X11-unix/X{n}");
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if Path::new(&socket).exists() {
                    let display = format!(":{n}");
                    // SAFETY: still single-threaded here (GTK and the tests start afterwards).
                    unsafe {
                        std::env::set_var("DISPLAY", &display);
                        std::env::set_var("GDK_BACKEND", "x11");
                        std::env::remove_var("WAYLAND_DISPLAY");
                    }
                    return Ok(Xvfb { child, display });
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        Err("no free X display for Xvfb between :40 and :300".into())
    }

    fn stop(&mut self) {
        stop_x_server(&mut self.child);
    }
}

/// Stops an X server child with SIGTERM, so it removes its lock file and socket, and waits for
/// it (SIGKILL after 5 s).
pub fn stop_x_server(child: &mut Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs the GTK main loop for `d`.
pub fn settle(d: Duration) {
    let ctx = glib::MainContext::default();
    let deadline = Instant::now() + d;
    while Instant::now() < deadline {
        while ctx.iteration(false) {}
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the GTK main loop until `cond` holds or `limit` passes; returns whether it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let ctx = glib::MainContext::default();
    let deadline = Instant::now() + limit;
    loop {
        while ctx.iteration(false) {}
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every widget below `root`, depth first.
pub fn descendants(root: &impl IsA<gtk::Widget>) -> Vec<gtk::Widget> {
    let mut out = Vec::new();
    let mut child = root.as_ref().first_child();
    while let Some(c) = child {
        out.push(c.clone());
        out.extend(descendants(&c));
        child = c.next_sibling();
    }
    out
}

/// Widgets below `root` named `name`.
pub fn named(root: &impl IsA<gtk::Widget>, name: &str) -> Vec<gtk::Widget> {
    descendants(root)
        .into_iter()
        .filter(|w| w.widget_name() == name)
        .collect()
}

/// The one widget named `name` below `root`, as `T`; panics when missing.
pub fn one<T: IsA<gtk::Widget>>(root: &impl IsA<gtk::Widget>, name: &str) -> T {
    named(root, name)
        .into_iter()
        .find_map(|w| w.downcast::<T>().ok())
        .unwrap_or_else(|| panic!("no widget named {name}"))
}

/// Text of every label below `root` (as shown, markup removed).
pub fn label_texts(root: &impl IsA<gtk::Widget>) -> Vec<String> {
    descendants(root)
        .into_iter()
        .filter_map(|w| w.downcast::<gtk::Label>().ok())
        .map(|l| l.text().to_string())
        .collect()
}

/// True when some label below `root` (mapped on screen) contains `needle`.
pub fn shows(root: &impl IsA<gtk::Widget>, needle: &str) -> bool {
    descendants(root)
        .into_iter()
        .filter(|w| w.is_mapped())
        .filter_map(|w| w.downcast::<gtk::Label>().ok())
        .any(|l| l.text().contains(needle))
}

/// Shared slot a test hook writes into.
pub type Slot<T> = Arc<Mutex<Vec<T>>>;
