//! Starting processes outside the daemon's reach, and gaining root where the level forbids it.
//!
//! At levels 3–4 a command runs on the host. Sayri stops what it started when a turn ends or is
//! interrupted, but some commands hand work to something else that keeps running: a systemd
//! unit (`systemd-run`, `systemctl start`, a D-Bus call that starts a unit), the `at`/`batch`
//! queue, a crontab, a new session (`setsid`, `nohup … &`, `disown`, `screen -dm`,
//! `tmux new -d`, `daemonize`), user lingering, or a file that the session runs at the next
//! login (autostart entries, systemd user units, shell rc files — see [`PERSISTENCE_PATHS`]).
//! The baseline asks before each of them, whatever the agent's rules say ([`findings`]).
//!
//! Level 3 runs commands as the user with `no_new_privs`, so `sudo`, `sudoedit`, `doas` and
//! `pkexec` cannot gain root there; they are refused with a pointer to level 4
//! ([`root_at_level_3`]).

use super::options::{Order, Spec, parse};
use super::shell::{Analysis, Word, base_name};

/// The pseudo-rule shown for an ask raised by [`findings`].
pub const RULE: &str = "<starts a process that outlives the turn>";

/// The pseudo-rule shown for a refusal raised by [`root_at_level_3`].
pub const ROOT_RULE: &str = "<root at level 3>";

/// Programs that gain root.
const ROOT_PROGRAMS: &[&str] = &["sudo", "sudoedit", "doas", "pkexec"];

/// Files and directories the session runs or loads at the next login or shell start (asked
/// before writing at levels 3–4). Each `NAME` is matched as `*/NAME` and, for a path relative
/// to the home directory, as `NAME`; a trailing `/*` means everything under the directory.
pub const PERSISTENCE_PATHS: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    ".config/autostart",
    ".config/autostart/*",
    ".config/systemd",
    ".config/systemd/*",
    ".local/share/systemd",
    ".local/share/systemd/*",
    ".config/environment.d",
    ".config/environment.d/*",
    ".config/fish/*",
    ".config/plasma-workspace/env/*",
    ".config/plasma-workspace/shutdown/*",
    ".kde/Autostart/*",
    ".config/upstart/*",
];

/// System-wide places of the same kind (matched as written).
pub const SYSTEM_PERSISTENCE_PATHS: &[&str] = &[
    "/etc/xdg/autostart/*",
    "/etc/systemd/*",
    "/usr/lib/systemd/*",
    "/lib/systemd/*",
    "/etc/profile",
    "/etc/profile.d/*",
    "/etc/bash.bashrc",
    "/etc/zsh/*",
    "/etc/environment",
    "/etc/cron*",
    "/var/spool/cron/*",
    "/etc/rc.local",
    "/etc/init.d/*",
];

/// `systemctl` verbs that start something.
const SYSTEMCTL_STARTS: &[&str] = &[
    "start",
    "restart",
    "try-restart",
    "reload-or-restart",
    "try-reload-or-restart",
    "isolate",
    "default",
    "rescue",
    "emergency",
];

/// D-Bus methods that start units or services.
const DBUS_STARTS: &[&str] = &[
    "StartUnit",
    "StartUnitReplace",
    "StartTransientUnit",
    "RestartUnit",
    "TryRestartUnit",
    "ReloadOrRestartUnit",
    "ReloadOrTryRestartUnit",
    "EnqueueUnitJob",
    "EnableUnitFiles",
    "LinkUnitFiles",
    "StartServiceByName",
    "StartAuxiliaryScope",
];

/// Descriptions of each way `analysis` starts a process that outlives the turn.
pub fn findings(analysis: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            let Some(first) = layer.first() else { continue };
            let name = base_name(&first.text);
            if let Some(d) = detaches(name, &layer[1..], cmd.background)
                && !out.contains(&d)
            {
                out.push(d);
            }
        }
    }
    out
}

/// The programs of `analysis` that try to gain root (refused at level 3).
pub fn root_at_level_3(analysis: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            let Some(first) = layer.first() else { continue };
            let name = base_name(&first.text);
            if ROOT_PROGRAMS.contains(&name) && !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

fn has(args: &[Word], spec: Spec<'_>, names: &[&str]) -> bool {
    parse(args, spec, Order::Permute).has(names)
}

fn operands(args: &[Word]) -> Vec<&str> {
    args.iter()
        .map(|w| w.text.as_str())
        .filter(|t| !t.starts_with('-'))
        .collect()
}

/// Why `name args` starts something that keeps running after the turn, if it does.
fn detaches(name: &str, args: &[Word], background: bool) -> Option<String> {
    let info = |args: &[Word]| has(args, Spec::NONE, &["-h", "--help", "--version", "-V"]);
    let why = match name {
        "systemd-run" if !info(args) => {
            "`systemd-run` starts a unit that systemd keeps running outside Sayri's control"
        }
        "at" | "batch"
            if !has(
                args,
                Spec::new("fqt", &[]),
                &["-l", "-c", "-d", "-r", "-V", "-h"],
            ) =>
        {
            "`at`/`batch` queue a command that runs later, outside Sayri's control"
        }
        "crontab" if !has(args, Spec::new("u", &[]), &["-l", "-r", "-h"]) => {
            "`crontab` installs jobs that cron runs later, outside Sayri's control"
        }
        "nohup" if background => "`nohup … &` starts a process that keeps running after the turn",
        "setsid" => "`setsid` starts a process in a new session that keeps running after the turn",
        "disown" => "`disown` lets a background job keep running after the turn",
        "daemonize" | "start-stop-daemon" => "it starts a daemon that keeps running after the turn",
        "screen" if has(args, Spec::new("cehpSTtxX", &[]), &["-d", "-D"]) => {
            "`screen -d -m` starts a detached session that keeps running after the turn"
        }
        "tmux" if tmux_detached(args) => {
            "`tmux … -d` starts a detached session that keeps running after the turn"
        }
        "systemctl" if systemctl_starts(args) => {
            "`systemctl` starts a unit that systemd keeps running outside Sayri's control"
        }
        "service"
            if operands(args)
                .get(1)
                .is_some_and(|v| matches!(*v, "start" | "restart")) =>
        {
            "`service … start` starts a daemon that keeps running outside Sayri's control"
        }
        "loginctl" if operands(args).first() == Some(&"enable-linger") => {
            "`loginctl enable-linger` keeps the user's services running after logout"
        }
        "dbus-send" | "gdbus" | "busctl" | "qdbus" | "dbus-send-session"
            if args
                .iter()
                .any(|w| DBUS_STARTS.iter().any(|m| w.text.contains(m))) =>
        {
            "a D-Bus call that starts a unit or service, which keeps running outside Sayri's control"
        }
        _ => return None,
    };
    Some(why.to_string())
}

fn tmux_detached(args: &[Word]) -> bool {
    let ops = operands(args);
    ops.first()
        .is_some_and(|v| matches!(*v, "new-session" | "new" | "new-window" | "neww"))
        && args
            .iter()
            .any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('d'))
}

fn systemctl_starts(args: &[Word]) -> bool {
    let spec = Spec::new(
        "tpHMnoP",
        &["type", "property", "host", "machine", "lines", "output"],
    );
    let p = parse(args, spec, Order::Permute);
    let ops = p.operand_words(args);
    let verb = ops.first().map(|w| w.text.as_str()).unwrap_or("");
    SYSTEMCTL_STARTS.contains(&verb)
        || (matches!(verb, "enable" | "reenable" | "unmask") && p.has(&["--now"]))
}
