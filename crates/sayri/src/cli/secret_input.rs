//! Reading a secret a person hands to a `sayri` command: a hidden prompt on a terminal, else
//! everything piped to stdin. Never an argument: every user of the machine can read a process's
//! arguments (`ps`, `/proc/PID/cmdline`), and the shell keeps them in its history.

use std::io::{IsTerminal, Read};
use zeroize::Zeroizing;

/// Reads `what` from stdin or a hidden prompt, trimmed. `pipe_example` is the command shown
/// when nothing was given. With `spaces_allowed` false, a value holding whitespace is refused
/// (a token is one word; a pasted line with two is a mistake).
///
/// # Errors
/// Nothing was given, the terminal or stdin cannot be read, or the value holds whitespace
/// where none is allowed.
pub(crate) fn read_secret(
    what: &str,
    pipe_example: &str,
    spaces_allowed: bool,
) -> anyhow::Result<Zeroizing<String>> {
    let value = Zeroizing::new(if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("{what} (input hidden): "))?
    } else {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    });
    let value = Zeroizing::new(value.trim().to_string());
    if value.is_empty() {
        anyhow::bail!(
            "no {what} given: pipe it in (e.g. `{pipe_example}`) or run on a terminal to be asked"
        );
    }
    if !spaces_allowed && value.contains(char::is_whitespace) {
        anyhow::bail!("the {what} cannot contain spaces or line breaks; paste just the token");
    }
    Ok(value)
}
