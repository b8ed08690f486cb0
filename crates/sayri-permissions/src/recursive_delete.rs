//! Baseline: a recursive delete of the filesystem root, a top-level system directory or the home
//! directory is never allowed, however the command spells it.
//!
//! The baseline's `rm -rf /` patterns match the text as written; this check reads the command
//! instead: `rm` (under any wrapper) with a recursive flag (`-r`, `-R`, `--recursive`, or a short
//! cluster holding `r`/`R`, options in any order) and an operand that is, after lexical
//! resolution (`//`, `/.`, `/usr/../`), `/`, `/*`, a top-level system directory (`/usr`,
//! `/etc`, …), `/home` or `/home/*`, or the home directory (`~`, `~/`, `$HOME`, `${HOME}`, each
//! also with `/*`).

use super::options::{Order, Spec, parse};
use super::pattern::resolve_absolute;
use super::shell::{Analysis, base_name};

/// The baseline rule text named in refusals.
pub const RULE: &str = "rm -r (root, system or home directory)";

const TOP_LEVEL: &[&str] = &[
    "/", "/*", "/bin", "/boot", "/dev", "/etc", "/home", "/home/*", "/lib", "/lib32", "/lib64",
    "/opt", "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var",
];

fn is_home(text: &str) -> bool {
    let t = text.trim_end_matches('/');
    let t = t.strip_suffix("/*").unwrap_or(t).trim_end_matches('/');
    matches!(t, "~" | "$HOME" | "${HOME}")
}

fn is_protected(text: &str) -> bool {
    if is_home(text) {
        return true;
    }
    let resolved = match text.strip_suffix("/*") {
        Some(dir) => resolve_absolute(if dir.is_empty() { "/" } else { dir }).map(|d| {
            if d == "/" {
                "/*".to_string()
            } else {
                format!("{d}/*")
            }
        }),
        None => resolve_absolute(text),
    };
    resolved.is_some_and(|r| TOP_LEVEL.contains(&r.as_str()))
}

/// Descriptions of every recursive delete of a protected directory in `analysis`.
pub fn findings(analysis: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            let Some(first) = layer.first() else { continue };
            if base_name(&first.text) != "rm" {
                continue;
            }
            let args = &layer[1..];
            let p = parse(args, Spec::NONE, Order::Permute);
            if !p.has(&["-r", "-R", "--recursive"]) {
                continue;
            }
            for op in p.operand_words(args) {
                if is_protected(&op.text) {
                    out.push(format!("`rm` deletes `{}` recursively", op.text));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyse;

    #[test]
    fn spellings_of_a_root_or_home_wipe() {
        for cmd in [
            "rm -rf /*",
            "rm -rf //",
            "rm -rf /.",
            "rm --recursive --force /",
            "rm -f -R /usr",
            "rm -rf /usr /etc",
            "rm -rf ${HOME}",
            "rm -rf ~/*",
            "rm -rf /home/*",
            "rm -rf /usr/../",
            "sudo rm -rf -- /",
        ] {
            assert!(!findings(&analyse(cmd)).is_empty(), "{cmd}");
        }
        for cmd in [
            "rm -rf /tmp/build",
            "rm -rf ./target",
            "rm -f /etc",
            "rm -rf ~/project",
            "rm -- -r /",
        ] {
            assert!(findings(&analyse(cmd)).is_empty(), "{cmd}");
        }
    }
}
