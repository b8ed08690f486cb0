//! Environment policy: nothing is inherited unless allow-listed. Secrets reach a command only
//! through the request's explicit `env` additions.

use sayri_protocol::SandboxLevel;

/// Variables every level inherits from the launcher's environment.
pub const BASE_ALLOW: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TZ", "SHELL",
];

/// Extra variables inherited at levels 3–4 so desktop apps can open windows and reach the session bus.
pub const DESKTOP_ALLOW: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_CURRENT_DESKTOP",
    "XDG_SESSION_TYPE",
];

/// Fallback `PATH` when the launcher has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// Whether `name` may be inherited at `level`: [`BASE_ALLOW`], any `LC_*`, and at levels 3–4 also
/// [`DESKTOP_ALLOW`].
pub fn inherits(level: SandboxLevel, name: &str) -> bool {
    BASE_ALLOW.contains(&name)
        || name.starts_with("LC_")
        || (level >= SandboxLevel::HostUser && DESKTOP_ALLOW.contains(&name))
}

/// The command's environment: allow-listed variables from `parent`, then `HOME` = `home` when
/// given (the launcher gives the real home at level 1 — read-only there — and the workspace at
/// level 2, so a command always has one even when the daemon's own environment lacks it), then
/// level-1/2 scratch settings (`XDG_CACHE_HOME=/tmp/.cache`, `TMPDIR=/tmp`), then `additions`
/// (which win).
pub fn build_env(
    level: SandboxLevel,
    parent: impl IntoIterator<Item = (String, String)>,
    home: Option<&str>,
    additions: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = parent
        .into_iter()
        .filter(|(k, _)| inherits(level, k))
        .collect();
    let mut set = |k: &str, v: &str| {
        env.retain(|(ek, _)| ek != k);
        env.push((k.to_string(), v.to_string()));
    };
    if let Some(h) = home.filter(|h| !h.is_empty()) {
        set("HOME", h);
    }
    if level <= SandboxLevel::IsolatedDev {
        set("XDG_CACHE_HOME", "/tmp/.cache");
        set("TMPDIR", "/tmp");
    }
    for (k, v) in additions {
        set(k, v);
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    env.sort();
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(String, String)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("LC_ALL", "C"),
            ("DISPLAY", ":0"),
            ("LD_PRELOAD", "/evil.so"),
            ("SSH_AUTH_SOCK", "/run/ssh"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    #[test]
    fn secrets_and_loader_variables_are_not_inherited() {
        for level in [SandboxLevel::ReadOnly, SandboxLevel::HostUser] {
            let env = build_env(level, parent(), None, &[]);
            let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
            assert!(!keys.contains(&"OPENAI_API_KEY"));
            assert!(!keys.contains(&"LD_PRELOAD"));
            assert!(!keys.contains(&"SSH_AUTH_SOCK"));
            assert!(keys.contains(&"LC_ALL"));
        }
    }

    #[test]
    fn desktop_variables_only_on_the_host_levels() {
        let l1 = build_env(SandboxLevel::ReadOnly, parent(), None, &[]);
        assert!(!l1.iter().any(|(k, _)| k == "DISPLAY"));
        let l3 = build_env(SandboxLevel::HostUser, parent(), None, &[]);
        assert!(l3.iter().any(|(k, v)| k == "DISPLAY" && v == ":0"));
    }

    #[test]
    fn additions_win() {
        let env = build_env(
            SandboxLevel::IsolatedDev,
            parent(),
            Some("/ws"),
            &[
                ("API_TOKEN".into(), "t".into()),
                ("HOME".into(), "/x".into()),
            ],
        );
        assert!(env.contains(&("API_TOKEN".into(), "t".into())));
        assert!(env.contains(&("HOME".into(), "/x".into())));
        assert!(env.contains(&("TMPDIR".into(), "/tmp".into())));
    }

    #[test]
    fn the_given_home_replaces_the_inherited_or_missing_one() {
        let no_home: Vec<(String, String)> =
            parent().into_iter().filter(|(k, _)| k != "HOME").collect();
        let env = build_env(SandboxLevel::ReadOnly, no_home, Some("/home/u"), &[]);
        assert!(env.contains(&("HOME".into(), "/home/u".into())));
        let env = build_env(SandboxLevel::IsolatedDev, parent(), Some("/ws/a"), &[]);
        assert!(env.contains(&("HOME".into(), "/ws/a".into())));
        assert_eq!(env.iter().filter(|(k, _)| k == "HOME").count(), 1);
    }
}
