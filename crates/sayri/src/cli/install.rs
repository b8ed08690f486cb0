//! `sayri install --user` / `sayri uninstall --user [--purge]`: puts Sayri into the user's
//! desktop the way an installed Linux application is, and takes it out again.
//!
//! Written (each replaced atomically; running it again changes nothing; a unit that differs
//! from the one written now is first kept as `sayri.service.bak`, and a drop-in suggested):
//! * `$XDG_CONFIG_HOME/systemd/user/sayri.service`: the daemon as a systemd user service
//!   (`Type=notify`: the daemon reports readiness with `sd_notify` once its socket accepts).
//! * `$XDG_DATA_HOME/applications/sayri.desktop`: a launcher in the application menu (the orb
//!   when `sayri-orb` lies next to `sayri`, else the web bubble).
//! * `$XDG_DATA_HOME/icons/hicolor/scalable/apps/sayri.svg`: its icon.
//! * `$XDG_DATA_HOME/man/man1/sayri*.1`: the man pages the units name (`man:sayri(1)`).
//! * With `--socket-activation`: `$XDG_CONFIG_HOME/systemd/user/sayri.socket` and
//!   `sayri-legacy.socket`, enabled (`sockets.target.wants/`): systemd listens on the daemon's
//!   control socket (`%t/sayri/sayri-daemon.sock`) and on the legacy gateway socket
//!   (`%t/sayri/sayri.sock`), both mode 0600 in a 0700 directory, from login, and starts
//!   `sayri.service` on the first connection to either; the daemon takes both over, matched by
//!   their `FileDescriptorName=` (one name per unit is all systemd allows, hence two units).
//!   `--no-socket-activation` removes them; without either, installed socket units are kept (and
//!   rewritten when they differ).
//! * What starts at login, from `ui.autostart` and `ui.autostart_mode`: `ui` enables the unit
//!   (`default.target.wants/sayri.service`) and writes the launcher to
//!   `$XDG_CONFIG_HOME/autostart/sayri.desktop`; `daemon` enables the unit only; `off` (or
//!   `ui.autostart = false`) removes both, so nothing starts at login.
//!
//! `$XDG_CONFIG_HOME` defaults to `~/.config`, `$XDG_DATA_HOME` to `~/.local/share`.
//! Uninstalling removes exactly these files; the settings, agents, vault and conversations stay
//! unless `--purge` is given: then the entries Sayri creates in the config and state
//! directories go, and each directory too when that leaves it empty (never `/`, the home
//! directory or an ancestor of it, nor a directory holding none of Sayri's files).

use anyhow::Context;
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The unit's file name.
pub(crate) const UNIT_NAME: &str = "sayri.service";
/// The socket unit's file name (socket activation).
pub(crate) const SOCKET_UNIT_NAME: &str = "sayri.socket";
/// The legacy gateway socket's unit (socket activation).
pub(crate) const LEGACY_SOCKET_UNIT_NAME: &str = "sayri-legacy.socket";
/// The launcher's and the autostart entry's file name.
pub(crate) const DESKTOP_NAME: &str = "sayri.desktop";
/// The icon's name in the icon theme (`Icon=` of the launcher).
pub(crate) const ICON_NAME: &str = "sayri";

/// The icon (the orb's), scalable.
const ICON_SVG: &[u8] = include_bytes!("../../data/sayri.svg");

/// Options of `sayri install` / `sayri uninstall`.
#[derive(Debug, clap::Args)]
pub(crate) struct InstallArgs {
    /// For the current user (the only mode: system-wide installs come from the .deb package).
    #[arg(long, required = true)]
    pub user: bool,
    /// Also write and enable sayri.socket: systemd holds the daemon's socket from login and
    /// starts the daemon on the first connection (socket activation).
    #[arg(long, conflicts_with = "no_socket_activation")]
    pub socket_activation: bool,
    /// Remove sayri.socket again (the daemon binds its socket itself).
    #[arg(long)]
    pub no_socket_activation: bool,
}

/// Options of `sayri uninstall`.
#[derive(Debug, clap::Args)]
pub(crate) struct UninstallArgs {
    /// For the current user.
    #[arg(long, required = true)]
    pub user: bool,
    /// Also delete the settings, agents, vault, conversations and models (asks nothing).
    #[arg(long)]
    pub purge: bool,
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn xdg(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home().map(|h| h.join(fallback)))
}

/// `$XDG_CONFIG_HOME` or `~/.config`.
pub(crate) fn config_home() -> Option<PathBuf> {
    xdg("XDG_CONFIG_HOME", ".config")
}

/// `$XDG_DATA_HOME` or `~/.local/share`.
pub(crate) fn data_home() -> Option<PathBuf> {
    xdg("XDG_DATA_HOME", ".local/share")
}

/// Where the user unit goes (`None` without a home directory).
pub(crate) fn unit_path() -> Option<PathBuf> {
    config_home().map(|c| c.join("systemd/user").join(UNIT_NAME))
}

/// Every file `install --user` manages.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The unit.
    pub unit: PathBuf,
    /// The link that enables it at login.
    pub wants_link: PathBuf,
    /// The application-menu launcher.
    pub launcher: PathBuf,
    /// The autostart entry.
    pub autostart: PathBuf,
    /// The icon.
    pub icon: PathBuf,
    /// The socket unit (socket activation).
    pub socket: PathBuf,
    /// The link that enables the socket unit at login.
    pub socket_wants_link: PathBuf,
    /// Where the man pages go.
    pub man_dir: PathBuf,
    /// The legacy socket's unit (socket activation).
    pub legacy_socket: PathBuf,
    /// The link that enables it at login.
    pub legacy_socket_wants_link: PathBuf,
}

impl Layout {
    /// The layout under the XDG directories of this environment.
    ///
    /// # Errors
    /// Neither `HOME` nor the XDG variables are set.
    pub(crate) fn from_env() -> anyhow::Result<Layout> {
        let no_home = || anyhow::anyhow!("cannot find your home directory; set HOME");
        let config = config_home().ok_or_else(no_home)?;
        let data = data_home().ok_or_else(no_home)?;
        let units = config.join("systemd/user");
        Ok(Layout {
            unit: units.join(UNIT_NAME),
            wants_link: units.join("default.target.wants").join(UNIT_NAME),
            launcher: data.join("applications").join(DESKTOP_NAME),
            autostart: config.join("autostart").join(DESKTOP_NAME),
            icon: data
                .join("icons/hicolor/scalable/apps")
                .join(format!("{ICON_NAME}.svg")),
            socket: units.join(SOCKET_UNIT_NAME),
            socket_wants_link: units.join("sockets.target.wants").join(SOCKET_UNIT_NAME),
            man_dir: data.join("man/man1"),
            legacy_socket: units.join(LEGACY_SOCKET_UNIT_NAME),
            legacy_socket_wants_link: units
                .join("sockets.target.wants")
                .join(LEGACY_SOCKET_UNIT_NAME),
        })
    }
}

/// Quotes a path for an `Exec=`/`ExecStart=` line when it needs it (spaces, quotes).
fn exec_quote(p: &Path) -> String {
    let s = p.display().to_string();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        s
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// The systemd user unit running `sayri daemon` from `exe`.
pub(crate) fn unit_text(exe: &Path) -> String {
    format!(
        "# Sayri's daemon as a systemd user service (written by `sayri install --user`, or the .deb).\n\
[Unit]\n\
Description=Sayri assistant daemon\n\
Documentation=man:sayri(1)\n\
# A daemon that keeps failing is given up after 5 starts within 60 s (RestartSec=2 lets that\n\
# happen); `systemctl --user reset-failed sayri` allows new starts.\n\
StartLimitIntervalSec=60\n\
StartLimitBurst=5\n\
\n\
[Service]\n\
# The daemon says READY=1 (sd_notify) once its socket accepts clients.\n\
Type=notify\n\
NotifyAccess=main\n\
ExecStart={exe} daemon\n\
Restart=on-failure\n\
RestartSec=2\n\
# 78 (EX_CONFIG): sayri.toml is invalid; restarting cannot help until it is fixed.\n\
RestartPreventExitStatus=78\n\
TimeoutStopSec=20\n\
# Only the daemon is signalled: it stops the commands and programs it supervises itself, and\n\
# apps the assistant launched for you in the background (levels 3-4) are yours and keep running.\n\
KillMode=process\n\
UMask=0077\n\
# No NoNewPrivileges= nor the seccomp-based options (in a user unit they imply it): level 4\n\
# elevates through pkexec, a setuid program, and levels 1-2 build their own sandbox (user\n\
# namespaces, Landlock, seccomp) for every command.\n\
\n\
[Install]\n\
WantedBy=default.target\n",
        exe = exec_quote(exe)
    )
}

/// The systemd user socket unit for socket activation: systemd listens on the daemon's socket
/// path (`$XDG_RUNTIME_DIR/sayri/sayri-daemon.sock`, `%t` in a user unit), 0600 in a 0700
/// directory, and starts `sayri.service` on the first connection; the descriptor is named
/// `sayri-daemon.sock`.
pub(crate) fn socket_text() -> String {
    "# Sayri's control socket, for socket activation (written by `sayri install --user --socket-activation`,\n\
# or the .deb). systemd listens from login; the first client starts sayri.service, which takes\n\
# the socket over by its name (and still serves only your uid).\n\
[Unit]\n\
Description=Sayri assistant daemon socket\n\
Documentation=man:sayri(1)\n\
\n\
[Socket]\n\
ListenStream=%t/sayri/sayri-daemon.sock\n\
FileDescriptorName=sayri-daemon.sock\n\
Service=sayri.service\n\
SocketMode=0600\n\
DirectoryMode=0700\n\
\n\
[Install]\n\
WantedBy=sockets.target\n"
        .to_string()
}

/// The socket unit of the legacy gateway socket (`%t/sayri/sayri.sock`), named `sayri.sock`,
/// starting the same `sayri.service`.
pub(crate) fn legacy_socket_text() -> String {
    "# Sayri's legacy gateway socket, for socket activation (written by `sayri install --user\n\
# --socket-activation`, or the .deb). The original Sayri's gateways connect here; the first\n\
# connection starts sayri.service, which takes the socket over by its name.\n\
[Unit]\n\
Description=Sayri assistant legacy gateway socket\n\
Documentation=man:sayri(1)\n\
\n\
[Socket]\n\
ListenStream=%t/sayri/sayri.sock\n\
FileDescriptorName=sayri.sock\n\
Service=sayri.service\n\
SocketMode=0600\n\
DirectoryMode=0700\n\
\n\
[Install]\n\
WantedBy=sockets.target\n"
        .to_string()
}

/// What the launcher runs: the orb when `sayri-orb` is installed next to `exe`, else the web
/// bubble in the browser.
pub(crate) fn launcher_exec(exe: &Path, orb_installed: bool) -> String {
    if orb_installed {
        exec_quote(&exe.with_file_name("sayri-orb"))
    } else {
        format!("{} web --open", exec_quote(exe))
    }
}

/// The desktop entry running `exec` (the launcher; with `autostart`, the login entry).
pub(crate) fn desktop_text(exec: &str, autostart: bool) -> String {
    let mut s = format!(
        "[Desktop Entry]\n\
Type=Application\n\
Name=Sayri\n\
GenericName=Desktop assistant\n\
Comment=Ask Sayri, your local assistant; approve the commands it wants to run\n\
Exec={exec}\n\
Icon={ICON_NAME}\n\
Terminal=false\n\
Categories=Utility;\n\
Keywords=assistant;AI;voice;\n\
StartupNotify=false\n"
    );
    if autostart {
        s.push_str("X-GNOME-Autostart-enabled=true\n");
    }
    s
}

/// Writes `bytes` to `path` through a temporary file (replaced atomically); `false` when the
/// file already held exactly these bytes (nothing written).
fn write_if_changed(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.persist(path)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(true)
}

/// Removes `path` if it exists; `true` when something was removed.
fn remove(path: &Path) -> anyhow::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
}

/// Makes `link` a symlink to `target` (relative), unless it already is one.
fn ensure_link(link: &Path, target: &Path) -> anyhow::Result<bool> {
    if std::fs::read_link(link).is_ok_and(|t| t == target) {
        return Ok(false);
    }
    if let Some(dir) = link.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    remove(link)?;
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("cannot create the link {}", link.display()))?;
    Ok(true)
}

/// What starts at login, from the settings: `(unit enabled, autostart entry written)`.
pub(crate) fn login_start(cfg: &Config) -> (bool, bool) {
    if !cfg.ui.autostart {
        return (false, false);
    }
    match cfg.ui.autostart_mode.as_str() {
        "ui" => (true, true),
        "daemon" => (true, false),
        _ => (false, false),
    }
}

/// Tells a running systemd user manager to re-read its units (ignored when none runs).
fn reload_systemd() {
    let _ = std::process::Command::new("systemctl")
        .args(["--user", "daemon-reload"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// Stops `unit` in a running systemd user manager (ignored when none runs).
fn systemctl_stop(unit: &str) {
    let _ = std::process::Command::new("systemctl")
        .args(["--user", "stop", unit])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// Collects the lines saying what an install step changed.
#[derive(Default)]
struct Changes(Vec<String>);

impl Changes {
    fn note(&mut self, did: bool, what: impl FnOnce() -> String) {
        if did {
            self.0.push(what());
        }
    }
}

/// Makes what starts at login match the settings: the unit's `default.target.wants` link and
/// the autostart entry running `exec`. Returns `(unit enabled, autostart entry written)`.
fn apply_login_start(
    layout: &Layout,
    cfg: &Config,
    exec: &str,
    changes: &mut Changes,
) -> anyhow::Result<(bool, bool)> {
    let (enable, entry) = login_start(cfg);
    if enable {
        let did = ensure_link(&layout.wants_link, Path::new(&format!("../{UNIT_NAME}")))?;
        changes.note(did, || format!("enabled {UNIT_NAME} at login"));
    } else {
        let did = remove(&layout.wants_link)?;
        changes.note(did, || format!("disabled {UNIT_NAME} at login"));
    }
    if entry {
        let did = write_if_changed(
            &layout.autostart,
            desktop_text(exec, true).as_bytes(),
            0o644,
        )?;
        changes.note(did, || format!("wrote {}", layout.autostart.display()));
    } else {
        let did = remove(&layout.autostart)?;
        changes.note(did, || format!("removed {}", layout.autostart.display()));
    }
    Ok((enable, entry))
}

/// What the launcher and the autostart entry run for the `sayri` running now.
fn current_exec() -> anyhow::Result<(PathBuf, String, bool)> {
    let exe = std::env::current_exe().context("cannot find the sayri executable")?;
    let orb = exe.with_file_name("sayri-orb").is_file();
    let exec = launcher_exec(&exe, orb);
    Ok((exe, exec, orb))
}

/// After `config set ui.autostart…`: applies the new setting to what starts at login at once,
/// when `install --user` installed Sayri (else says what makes it take effect).
///
/// # Errors
/// The settings cannot be read, or the files cannot be written.
pub(crate) fn autostart_changed(paths: &Paths) -> anyhow::Result<()> {
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let layout = Layout::from_env()?;
    if !layout.unit.exists() {
        if login_start(&cfg) != (false, false) {
            println!("this takes effect at login once Sayri is installed: `sayri install --user`");
        }
        return Ok(());
    }
    let (_, exec, orb) = current_exec()?;
    let mut changes = Changes::default();
    let (enable, entry) = apply_login_start(&layout, &cfg, &exec, &mut changes)?;
    for c in &changes.0 {
        println!("{c}");
    }
    if !changes.0.is_empty() {
        reload_systemd();
    }
    println!("{}", at_login(enable, entry, orb));
    Ok(())
}

/// The sentence saying what starts at login.
fn at_login(enable: bool, entry: bool, orb: bool) -> &'static str {
    match (enable, entry, orb) {
        (true, true, true) => "the daemon and the desktop orb start at login",
        (true, true, false) => {
            "the daemon starts at login and opens the web bubble in your browser (sayri-orb, the desktop orb, is not installed next to sayri)"
        }
        (true, false, _) => "the daemon starts at login (ui.autostart_mode = daemon)",
        _ => {
            "nothing starts at login (ui.autostart / ui.autostart_mode); clients start the daemon when needed"
        }
    }
}

/// The first free name for a backup of `path` (`NAME.bak`, then `NAME.bak.1`, …), or an
/// existing backup already holding `bytes`.
fn backup_name(path: &Path, bytes: &[u8]) -> PathBuf {
    let base = path.with_file_name(format!(
        "{}.bak",
        path.file_name()
            .map_or_else(|| "unit".into(), |n| n.to_string_lossy())
    ));
    let mut candidate = base.clone();
    for n in 1.. {
        match std::fs::read(&candidate) {
            Ok(old) if old == bytes => return candidate,
            Ok(_) => candidate = PathBuf::from(format!("{}.{n}", base.display())),
            Err(_) => return candidate,
        }
    }
    candidate
}

/// Writes the unit; a unit that differs from the one written now (edited by hand, or written
/// by another version) is first kept as a backup, and the user is told where and how to
/// change the unit so that an install keeps it (a drop-in).
fn write_unit(layout: &Layout, exe: &Path, changes: &mut Changes) -> anyhow::Result<()> {
    let text = unit_text(exe);
    if let Ok(old) = std::fs::read(&layout.unit)
        && old != text.as_bytes()
    {
        let bak = backup_name(&layout.unit, &old);
        std::fs::write(&bak, &old)
            .with_context(|| format!("cannot keep a backup of {}", layout.unit.display()))?;
        println!(
            "{} differed from the unit this sayri writes (edited by hand?); it is kept as {}. To change the unit so that installing keeps your change, use a drop-in: `systemctl --user edit {UNIT_NAME}` (it writes {UNIT_NAME}.d/override.conf, which install never touches)",
            layout.unit.display(),
            bak.display()
        );
    }
    let did = write_if_changed(&layout.unit, text.as_bytes(), 0o644)?;
    changes.note(did, || format!("wrote {}", layout.unit.display()));
    Ok(())
}

/// Writes the man pages the units name (`man:sayri(1)`, one page per command) into
/// `$XDG_DATA_HOME/man/man1`, where `man` finds them when `~/.local/bin` is on `PATH`.
fn write_man_pages(layout: &Layout, changes: &mut Changes) -> anyhow::Result<()> {
    let pages = crate::cli::generate::man_pages()?;
    let mut wrote = 0;
    for (name, bytes) in &pages {
        if write_if_changed(&layout.man_dir.join(name), bytes, 0o644)? {
            wrote += 1;
        }
    }
    changes.note(wrote > 0, || {
        format!("wrote {wrote} man pages into {}", layout.man_dir.display())
    });
    Ok(())
}

/// Writes and enables both socket units (`on`), or stops and removes them, noting each change.
fn socket_units(layout: &Layout, on: bool, changes: &mut Changes) -> anyhow::Result<()> {
    let units = [
        (
            &layout.socket,
            &layout.socket_wants_link,
            SOCKET_UNIT_NAME,
            socket_text(),
        ),
        (
            &layout.legacy_socket,
            &layout.legacy_socket_wants_link,
            LEGACY_SOCKET_UNIT_NAME,
            legacy_socket_text(),
        ),
    ];
    for (unit, link, name, text) in units {
        if on {
            let did = write_if_changed(unit, text.as_bytes(), 0o644)?;
            changes.note(did, || format!("wrote {}", unit.display()));
            let did = ensure_link(link, Path::new(&format!("../{name}")))?;
            changes.note(did, || {
                format!("enabled {name} (socket activation) at login")
            });
        } else {
            if unit.exists() {
                systemctl_stop(name);
            }
            let did = remove(link)?;
            changes.note(did, || format!("disabled {name} at login"));
            let did = remove(unit)?;
            changes.note(did, || format!("removed {}", unit.display()));
        }
    }
    Ok(())
}

/// Runs `sayri install --user`.
///
/// `socket`: `Some(true)` writes and enables the socket units, `Some(false)` removes them, `None`
/// keeps them as installed (rewritten when present).
pub(crate) fn install(paths: &Paths, socket: Option<bool>) -> anyhow::Result<()> {
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let layout = Layout::from_env()?;
    let (exe, exec, orb) = current_exec()?;
    let mut changes = Changes::default();
    write_unit(&layout, &exe, &mut changes)?;
    write_man_pages(&layout, &mut changes)?;
    let did = write_if_changed(&layout.icon, ICON_SVG, 0o644)?;
    changes.note(did, || format!("wrote {}", layout.icon.display()));
    let did = write_if_changed(
        &layout.launcher,
        desktop_text(&exec, false).as_bytes(),
        0o644,
    )?;
    changes.note(did, || format!("wrote {}", layout.launcher.display()));
    let socket = socket.unwrap_or_else(|| layout.socket.exists());
    socket_units(&layout, socket, &mut changes)?;
    let (enable, entry) = apply_login_start(&layout, &cfg, &exec, &mut changes)?;
    if changes.0.is_empty() {
        println!("already installed; nothing changed");
    } else {
        for c in &changes.0 {
            println!("{c}");
        }
        reload_systemd();
    }
    println!("{}", at_login(enable, entry, orb));
    if socket {
        println!(
            "socket activation is on: systemd holds {} from login and starts the daemon on the first connection; activate it now with `systemctl --user start {SOCKET_UNIT_NAME}` (stop a daemon already running first: `sayri quit`)",
            paths.socket().display()
        );
    } else {
        println!(
            "start it now with `systemctl --user start {UNIT_NAME}` (or let any `sayri` command start it)"
        );
    }
    Ok(())
}

/// The entries Sayri creates in its config and state directories (the runtime directory is the
/// state directory without `XDG_RUNTIME_DIR`). `--purge` deletes only these.
pub(crate) const SAYRI_ENTRIES: &[&str] = &[
    // config
    "sayri.toml",
    ".sayri.toml.lock",
    "agents",
    "skills",
    "vault.enc",
    "vault.key",
    "routines.json",
    "triggers",
    "policies",
    // state
    "sessions.db",
    "sessions.db-wal",
    "sessions.db-shm",
    "sessions.db-journal",
    "daemon.log",
    "logs",
    "children",
    "models",
    "llm-server",
    "sandboxes",
    "tmp",
    "autostart.lock",
    "sayri-web.url",
    "sayri-web-open.html",
    // runtime
    sayri_client::paths::DAEMON_SOCKET,
    sayri_client::paths::DAEMON_LOCK,
    sayri_client::paths::LEGACY_SOCKET,
];

/// Entries only Sayri creates: a directory holding one of these (or named `sayri`) is Sayri's.
const SAYRI_MARKERS: &[&str] = &[
    "sayri.toml",
    "sessions.db",
    "vault.enc",
    "daemon.log",
    sayri_client::paths::DAEMON_LOCK,
];

/// Why `dir` must never be purged: `/`, the home directory or one of its ancestors, or a
/// directory that does not look like Sayri's. `None` when it may be purged.
fn purge_refusal(dir: &Path) -> Option<String> {
    if !dir.is_absolute() {
        return Some("it is not an absolute path".into());
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if dir.parent().is_none() {
        return Some("it is the root directory".into());
    }
    if let Some(home) = home() {
        let home = std::fs::canonicalize(&home).unwrap_or(home);
        if home.starts_with(&dir) {
            return Some(format!(
                "it is your home directory {} or holds it",
                home.display()
            ));
        }
    }
    let named_sayri = dir.file_name().is_some_and(|n| n == "sayri");
    if !named_sayri && !SAYRI_MARKERS.iter().any(|m| dir.join(m).exists()) {
        return Some(format!(
            "it holds none of Sayri's files ({})",
            SAYRI_MARKERS.join(", ")
        ));
    }
    None
}

/// Deletes Sayri's entries in `dir` ([`SAYRI_ENTRIES`]), then `dir` itself when that left it
/// empty. Prints what was deleted and what was kept, and why.
fn purge_dir(dir: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    if let Some(why) = purge_refusal(dir) {
        println!(
            "kept {} untouched: {why}; delete Sayri's files there yourself if you mean to",
            dir.display()
        );
        return Ok(());
    }
    let mut deleted = 0;
    for name in SAYRI_ENTRIES {
        let p = dir.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let r = if meta.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        r.with_context(|| format!("cannot delete {}", p.display()))?;
        deleted += 1;
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => println!("deleted {}", dir.display()),
        Err(_) => {
            let mut others: Vec<String> = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            others.sort();
            println!(
                "deleted Sayri's {deleted} entries in {}; kept the directory and what Sayri did not create there: {}",
                dir.display(),
                others.join(", ")
            );
        }
    }
    Ok(())
}

/// Runs `sayri uninstall --user [--purge]`.
pub(crate) fn uninstall(paths: &Paths, purge: bool) -> anyhow::Result<()> {
    let layout = Layout::from_env()?;
    // A listening socket and a running service are stopped before their units go (the socket
    // first, so that it does not start the service again), and before `--purge` looks for a
    // running daemon: the socket unit's socket answers connections even with no daemon.
    if layout.socket.exists() {
        systemctl_stop(SOCKET_UNIT_NAME);
    }
    if layout.legacy_socket.exists() {
        systemctl_stop(LEGACY_SOCKET_UNIT_NAME);
    }
    if layout.unit.exists() {
        systemctl_stop(UNIT_NAME);
    }
    if purge && std::os::unix::net::UnixStream::connect(paths.socket()).is_ok() {
        if layout.socket.exists() {
            anyhow::bail!(
                "{} still answers: socket activation ({SOCKET_UNIT_NAME}) holds it or a daemon runs; run `systemctl --user disable --now {SOCKET_UNIT_NAME} {UNIT_NAME}` and `sayri quit`, then purge again; nothing was removed",
                paths.socket().display()
            );
        }
        anyhow::bail!(
            "the daemon is running; stop it first (`sayri quit`, or `systemctl --user stop {UNIT_NAME}`), then purge; nothing was removed"
        );
    }
    let mut removed = Vec::new();
    for p in [
        &layout.socket_wants_link,
        &layout.socket,
        &layout.legacy_socket_wants_link,
        &layout.legacy_socket,
        &layout.wants_link,
        &layout.autostart,
        &layout.launcher,
        &layout.icon,
        &layout.unit,
    ] {
        if remove(p)? {
            removed.push(p.display().to_string());
        }
    }
    let mut man_removed = 0;
    for (name, _) in crate::cli::generate::man_pages()? {
        if remove(&layout.man_dir.join(name))? {
            man_removed += 1;
        }
    }
    if man_removed > 0 {
        removed.push(format!(
            "{man_removed} man pages in {}",
            layout.man_dir.display()
        ));
    }
    if removed.is_empty() {
        println!("nothing was installed");
    } else {
        for r in &removed {
            println!("removed {r}");
        }
        reload_systemd();
    }
    if purge {
        let mut dirs = vec![&paths.config_dir, &paths.state_dir];
        if paths.runtime_dir != paths.state_dir {
            dirs.push(&paths.runtime_dir);
        }
        dirs.dedup();
        for dir in dirs {
            purge_dir(dir)?;
        }
    } else {
        println!(
            "your settings, agents, vault and conversations are kept in {} and {} (`--purge` deletes them)",
            paths.config_dir.display(),
            paths.state_dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The .deb ships these files as they are; they must be what `install --user` writes for
    /// `/usr/bin/sayri`.
    #[test]
    fn the_packaged_unit_and_launcher_are_the_generated_ones() {
        let exe = Path::new("/usr/bin/sayri");
        assert_eq!(include_str!("../../data/sayri.service"), unit_text(exe));
        assert_eq!(include_str!("../../data/sayri.socket"), socket_text());
        assert_eq!(
            include_str!("../../data/sayri-legacy.socket"),
            legacy_socket_text()
        );
        assert_eq!(
            include_str!("../../data/sayri.desktop"),
            // The package holds the orb, so its launcher starts the orb.
            desktop_text(&launcher_exec(exe, true), false)
        );
    }

    #[test]
    fn exec_lines_quote_paths_with_spaces() {
        assert_eq!(
            launcher_exec(Path::new("/opt/my apps/sayri"), false),
            "\"/opt/my apps/sayri\" web --open"
        );
        assert_eq!(
            launcher_exec(Path::new("/usr/bin/sayri"), true),
            "/usr/bin/sayri-orb"
        );
    }
}
