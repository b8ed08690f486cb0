//! Declared background launches: what may outlive a command at levels 3–4 (everything else the
//! command started is killed when it ends; pinned by
//! `orphans_die_at_level3_but_declared_background_launches_survive`).
//!
//! A launch is the user's app (`firefox &`), not a part of the daemon: it also outlives the
//! daemon, by design, whether the daemon stops or crashes. It runs in its own session without a
//! parent-death signal, is not written in the child registry, and is neither stopped nor
//! reattached by the next daemon (pinned by
//! `a_declared_background_launch_outlives_its_launcher_by_design`).

/// Whether `command` is a declared background launch: it ends in a single `&` (not `&&`), or
/// starts with `xdg-open ` or `gtk-launch `. Only levels 3–4 honour it; at levels 1–2 nothing
/// outlives the command.
pub fn is_background_launch(command: &str) -> bool {
    let t = command.trim();
    if t.starts_with("xdg-open ") || t.starts_with("gtk-launch ") {
        return true;
    }
    t.ends_with('&') && !t.ends_with("&&") && !t.ends_with("\\&")
}

/// The command with its single trailing `&` removed (the launcher detaches it itself).
pub fn strip_trailing_ampersand(command: &str) -> String {
    let t = command.trim();
    if t.ends_with('&') && !t.ends_with("&&") {
        t[..t.len() - 1].trim_end().to_string()
    } else {
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_declared_background_launches() {
        assert!(is_background_launch("firefox &"));
        assert!(is_background_launch("sh -c 'sleep 4; touch x' &"));
        assert!(is_background_launch("xdg-open https://example.org"));
        assert!(is_background_launch("gtk-launch org.gnome.Calculator"));
        assert!(!is_background_launch("true && false &&"));
        assert!(!is_background_launch(
            "nohup sh -c 'sleep 4' >/dev/null 2>&1 & echo started"
        ));
        assert!(!is_background_launch("echo \\&"));
        assert!(!is_background_launch("xdg-opener x"));
        assert_eq!(strip_trailing_ampersand("firefox  & "), "firefox");
        assert_eq!(strip_trailing_ampersand("a && b"), "a && b");
    }
}
