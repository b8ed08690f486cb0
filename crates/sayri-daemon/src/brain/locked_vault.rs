//! A command whose agent is allowed secrets, while the vault cannot be opened (no session bus,
//! a locked keyring, a missing key file, a passphrase vault): it never runs with the secrets
//! silently missing.
//!
//! * A command that **names** an allowed secret — the name appears in its text as a word, as in
//!   `$GITHUB_TOKEN`, `${GITHUB_TOKEN:-}`, `printenv GITHUB_TOKEN` or
//!   `os.environ["GITHUB_TOKEN"]` — is refused before it runs, with the vault's reason and what
//!   to do.
//! * Any other command of that agent runs without the secrets (they are not set at all, not set
//!   empty), and its output ends with a note naming the secrets it did not get and why, so a
//!   script that needed one fails visibly instead of quietly.

use sayri_core::ports::{ExecResult, ExecStatus};

/// Exit code of a refused command (the sandbox's "denied").
const EXIT_DENIED: i32 = 126;

/// The allowed secrets `command` names (as whole words), in `allowed`'s order.
pub fn named_in(command: &str, allowed: &[String]) -> Vec<String> {
    allowed
        .iter()
        .filter(|name| mentions(command, name))
        .cloned()
        .collect()
}

/// Whether `name` occurs in `text` with no identifier character right before or after it.
fn mentions(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// What to do about a locked vault, after its reason.
const HOW_TO_UNLOCK: &str = "Unlock the vault (`sayri vault status` shows its key source and what is wrong: unlock the keyring of your desktop session and run the daemon inside it, or restore the key file), then restart the daemon with `sayri quit` and ask again";

/// The refusal of a command that names `names` while the vault is locked for `reason`.
pub fn refusal(names: &[String], reason: &str) -> ExecResult {
    let text = format!(
        "The vault is locked ({reason}), so {} cannot be given to this command; it did not run. {HOW_TO_UNLOCK}.",
        names.join(", ")
    );
    ExecResult::new(ExecStatus::Denied, Some(EXIT_DENIED), text)
}

/// Appends the note about the secrets `missing` (vault locked for `reason`) to `result`'s output.
pub fn add_note(result: &mut ExecResult, missing: &[String], reason: &str) {
    let note = format!(
        "[sayri: the vault is locked ({reason}); this command ran without {}. {HOW_TO_UNLOCK}.]",
        missing.join(", ")
    );
    let end = if result.omitted.is_zero() {
        &mut result.output
    } else {
        &mut result.output_tail
    };
    if !end.is_empty() && !end.ends_with('\n') {
        end.push('\n');
    }
    end.push_str(&note);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_secret_is_named_only_as_a_whole_word() {
        let allowed = names(&["GITHUB_TOKEN", "API_KEY"]);
        for cmd in [
            "curl -H \"Authorization: $GITHUB_TOKEN\" x",
            "echo ${GITHUB_TOKEN:-none}",
            "printenv GITHUB_TOKEN",
            "python3 -c 'import os; os.environ[\"GITHUB_TOKEN\"]'",
        ] {
            assert_eq!(named_in(cmd, &allowed), names(&["GITHUB_TOKEN"]), "{cmd}");
        }
        for cmd in [
            "ls -l",
            "echo $GITHUB_TOKENS",
            "echo $MY_API_KEY_2",
            "echo API_KEYS",
        ] {
            assert!(named_in(cmd, &allowed).is_empty(), "{cmd}");
        }
        assert_eq!(
            named_in("echo $API_KEY $GITHUB_TOKEN", &allowed),
            names(&["GITHUB_TOKEN", "API_KEY"])
        );
    }

    #[test]
    fn the_refusal_names_the_secret_the_reason_and_what_to_do() {
        let r = refusal(
            &names(&["GITHUB_TOKEN"]),
            "OS keyring: no usable Secret Service",
        );
        assert_eq!(r.status, ExecStatus::Denied);
        for part in [
            "GITHUB_TOKEN",
            "no usable Secret Service",
            "did not run",
            "sayri vault status",
        ] {
            assert!(r.output.contains(part), "{part}: {}", r.output);
        }
    }
}
