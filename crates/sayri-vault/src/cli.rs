//! `sayri vault …` as library code: a clap [`VaultCommand`] the binary nests, and [`run`].
//!
//! Values never come from argv: `set` reads the value from stdin (a pipe) or a hidden terminal
//! prompt. `get` prints the masked value; `get --reveal` prints the plaintext only when stdout is a
//! terminal (never into a pipe or file, and there is no IPC equivalent).

use std::io::{BufRead, IsTerminal, Write};

use zeroize::Zeroizing;

use crate::{KeySource, KeySourceKind, Passphrase, Vault, VaultError, VaultPaths};

/// Environment variable that may hold the passphrase of a passphrase-sealed vault (for scripts).
pub const PASSPHRASE_ENV: &str = "SAYRI_VAULT_PASSPHRASE";

/// The `sayri vault` subcommands. Nest it with `#[command(subcommand)] vault: VaultCommand`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum VaultCommand {
    /// Create the vault if needed and say which key source protects it, and why.
    Init {
        /// Derive the key from a passphrase (Argon2id) instead of the keyring or key file.
        #[arg(long)]
        passphrase: bool,
    },
    /// Show the vault file, key source and reason, and the number of secrets.
    Status,
    /// List secrets with masked values.
    List {
        /// Print JSON (`[{key, masked, description, updated_at}]`).
        #[arg(long)]
        json: bool,
    },
    /// Store a secret; the value is read from stdin or a hidden prompt, never from the command line.
    Set {
        /// Secret name (becomes the environment variable name, e.g. GITHUB_TOKEN).
        key: String,
        /// Free-text description shown by `list`.
        #[arg(long, short, default_value = "")]
        description: String,
    },
    /// Delete a secret.
    Delete {
        /// Secret name.
        key: String,
    },
    /// Show a secret masked; `--reveal` prints the plaintext, on a terminal only.
    Get {
        /// Secret name.
        key: String,
        /// Print the plaintext (refused unless stdout is a terminal).
        #[arg(long)]
        reveal: bool,
    },
    /// Start over with an empty vault: the old vault file (and its key file) is moved aside
    /// with a timestamp, never deleted. Asks first.
    Reset {
        /// Do not ask (for scripts).
        #[arg(long)]
        yes: bool,
        /// Seal the new vault with a passphrase instead of the keyring or key file.
        #[arg(long)]
        passphrase: bool,
    },
    /// Move the vault's data key into the OS keyring or into the key file.
    #[command(group(clap::ArgGroup::new("place").required(true).args(["to_keyring", "to_file"])))]
    Key {
        /// Keep the key in the OS keyring (Secret Service); the key file is removed.
        #[arg(long)]
        to_keyring: bool,
        /// Keep the key in a 0600 key file apart from the vault.
        #[arg(long)]
        to_file: bool,
    },
}

/// The terminal a command talks to (real in [`run`], in memory in tests).
pub struct Terminal<'a> {
    /// Standard input.
    pub stdin: &'a mut dyn BufRead,
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Whether stdin is a terminal (then values are prompted for, hidden).
    pub stdin_is_tty: bool,
    /// Whether stdout is a terminal (required by `get --reveal`).
    pub stdout_is_tty: bool,
    /// Reads a line without echo after showing the prompt (rpassword on a real terminal).
    pub hidden_prompt: &'a mut dyn FnMut(&str) -> std::io::Result<String>,
    /// The passphrase from [`PASSPHRASE_ENV`], if set.
    pub env_passphrase: Option<Zeroizing<String>>,
}

/// Runs `cmd` on the process's real terminal. Returns the vault when the command changed its
/// secrets (`set`, `delete`), so the caller can follow up (rewrite stored rows, tell a daemon).
///
/// # Errors
/// Any [`VaultError`]; its `Display` is the message to show.
pub fn run(cmd: &VaultCommand, paths: &VaultPaths) -> Result<Option<Vault>, VaultError> {
    let stdin = std::io::stdin();
    let mut stdin_lock = stdin.lock();
    let mut stdout = std::io::stdout();
    let mut prompt = |p: &str| rpassword::prompt_password(p);
    let mut term = Terminal {
        stdin_is_tty: std::io::stdin().is_terminal(),
        stdout_is_tty: std::io::stdout().is_terminal(),
        stdin: &mut stdin_lock,
        stdout: &mut stdout,
        hidden_prompt: &mut prompt,
        env_passphrase: std::env::var(PASSPHRASE_ENV).ok().map(Zeroizing::new),
    };
    run_with(cmd, paths, &mut term)
}

fn out_err(e: std::io::Error) -> VaultError {
    VaultError::io("writing to", "stdout", e)
}

fn passphrase(term: &mut Terminal<'_>, confirm: bool) -> Result<Zeroizing<String>, VaultError> {
    if let Some(p) = term.env_passphrase.clone() {
        return Ok(p);
    }
    if !term.stdin_is_tty {
        return Err(VaultError::Usage(format!(
            "a passphrase is needed but stdin is not a terminal; set {PASSPHRASE_ENV} or run on a terminal"
        )));
    }
    let p = Zeroizing::new(
        (term.hidden_prompt)("Vault passphrase: ")
            .map_err(|e| VaultError::io("reading", "the terminal", e))?,
    );
    if confirm {
        let again = Zeroizing::new(
            (term.hidden_prompt)("Repeat passphrase: ")
                .map_err(|e| VaultError::io("reading", "the terminal", e))?,
        );
        if *again != *p {
            return Err(VaultError::Usage(
                "the passphrases differ; nothing was created".into(),
            ));
        }
    }
    Ok(p)
}

/// Opens with the recorded source, asking for the passphrase only when the vault needs one.
/// Opens the vault (asking for its passphrase when it has one). A vault this call created is
/// announced first, with the key source that seals it and why.
fn open(paths: &VaultPaths, term: &mut Terminal<'_>) -> Result<Vault, VaultError> {
    let v = open_quietly(paths, term)?;
    if let Some(note) = v.status().creation_note() {
        writeln!(term.stdout, "{note}").map_err(out_err)?;
    }
    Ok(v)
}

/// As [`open`] without the announcement (for the commands that print the whole status).
fn open_quietly(paths: &VaultPaths, term: &mut Terminal<'_>) -> Result<Vault, VaultError> {
    match Vault::open(paths.clone(), KeySource::Auto) {
        Err(VaultError::PassphraseRequired { .. }) => {
            let p = passphrase(term, false)?;
            Vault::open(paths.clone(), KeySource::Passphrase(Passphrase::new(p)))
        }
        other => other,
    }
}

/// Runs `cmd` against `term`; returns the vault when its secrets changed (as [`run`]).
///
/// # Errors
/// Any [`VaultError`]; its `Display` is the message to show.
pub fn run_with(
    cmd: &VaultCommand,
    paths: &VaultPaths,
    term: &mut Terminal<'_>,
) -> Result<Option<Vault>, VaultError> {
    let unchanged = |r: Result<(), VaultError>| r.map(|()| None);
    match cmd {
        VaultCommand::Init { passphrase: true } if !paths.vault_file.exists() => {
            let p = passphrase(term, true)?;
            let v = Vault::open(paths.clone(), KeySource::Passphrase(Passphrase::new(p)))?;
            unchanged(writeln!(term.stdout, "{}", v.status()).map_err(out_err))
        }
        VaultCommand::Init { .. } | VaultCommand::Status => {
            let v = open_quietly(paths, term)?;
            unchanged(writeln!(term.stdout, "{}", v.status()).map_err(out_err))
        }
        VaultCommand::List { json } => unchanged({
            let v = open(paths, term)?;
            let list = v.list();
            if *json {
                let text = serde_json::to_string_pretty(&list)
                    .map_err(|e| VaultError::Crypto(format!("cannot encode the list ({e})")))?;
                writeln!(term.stdout, "{text}").map_err(out_err)
            } else if list.is_empty() {
                writeln!(
                    term.stdout,
                    "no secrets; add one with `sayri vault set NAME`"
                )
                .map_err(out_err)
            } else {
                for i in list {
                    writeln!(term.stdout, "{}\t{}\t{}", i.key, i.masked, i.description)
                        .map_err(out_err)?;
                }
                Ok(())
            }
        }),
        VaultCommand::Set { key, description } => {
            let name = crate::normalize_key(key)?;
            let value = if term.stdin_is_tty {
                Zeroizing::new(
                    (term.hidden_prompt)(&format!("Value for {name} (input hidden): "))
                        .map_err(|e| VaultError::io("reading", "the terminal", e))?,
                )
            } else {
                let mut s = Zeroizing::new(String::new());
                term.stdin
                    .read_to_string(&mut s)
                    .map_err(|e| VaultError::io("reading", "stdin", e))?;
                s
            };
            if value.trim().is_empty() {
                return Err(VaultError::Usage(format!(
                    "no value given for {name}: pipe it in (e.g. `printf %s \"$TOKEN\" | sayri vault set {name}`) or run on a terminal to be prompted"
                )));
            }
            let mut v = open(paths, term)?;
            let name = v.set(&name, &value, description)?;
            // The confirmation shows no part of the value (not even a masked head and tail):
            // a terminal's scrollback or a screen share must not narrow a secret down.
            writeln!(term.stdout, "stored {name} (value not shown)").map_err(out_err)?;
            Ok(Some(v))
        }
        VaultCommand::Delete { key } => {
            let mut v = open(paths, term)?;
            let name = crate::normalize_key(key)?;
            if v.delete(&name)? {
                writeln!(term.stdout, "deleted {name}").map_err(out_err)?;
                Ok(Some(v))
            } else {
                Err(VaultError::Usage(format!(
                    "there is no secret {name}; see `sayri vault list`"
                )))
            }
        }
        VaultCommand::Reset { yes, passphrase } => reset(paths, term, *yes, *passphrase),
        VaultCommand::Key { to_keyring, .. } => move_key(paths, term, *to_keyring),
        VaultCommand::Get { key, reveal } => unchanged({
            if *reveal && !term.stdout_is_tty {
                return Err(VaultError::Usage(
                    "refusing to print a secret into a pipe or file: `--reveal` works only on a terminal. Commands get secrets as environment variables through their agent's allowed_secrets".into(),
                ));
            }
            let v = open(paths, term)?;
            let name = crate::normalize_key(key)?;
            let value = v.get(&name).ok_or_else(|| {
                VaultError::Usage(format!("there is no secret {name}; see `sayri vault list`"))
            })?;
            if *reveal {
                writeln!(term.stdout, "{}", value.as_str()).map_err(out_err)
            } else {
                writeln!(term.stdout, "{name}\t{}", crate::mask(&value)).map_err(out_err)
            }
        }),
    }
}

/// `key`: moves the data key into the keyring (`to_keyring`) or into the key file.
fn move_key(
    paths: &VaultPaths,
    term: &mut Terminal<'_>,
    to_keyring: bool,
) -> Result<Option<Vault>, VaultError> {
    let mut v = open(paths, term)?;
    let to = if to_keyring {
        KeySourceKind::Keyring
    } else {
        KeySourceKind::KeyFile
    };
    let said = v.move_key(to)?;
    writeln!(term.stdout, "{said}").map_err(out_err)?;
    Ok(Some(v))
}

/// `reset`: asks (unless `yes`), moves the old files aside, creates the new vault and says
/// which key source it uses and how to go back.
fn reset(
    paths: &VaultPaths,
    term: &mut Terminal<'_>,
    yes: bool,
    with_passphrase: bool,
) -> Result<Option<Vault>, VaultError> {
    if !yes {
        if !term.stdin_is_tty {
            return Err(VaultError::Usage(
                "`sayri vault reset` asks before it starts over, and stdin is not a terminal; run it on a terminal or pass --yes".into(),
            ));
        }
        write!(
            term.stdout,
            "Start over with an empty vault? {} (and its key file) will be moved aside, not deleted. [y/N] ",
            paths.vault_file.display()
        )
        .and_then(|()| term.stdout.flush())
        .map_err(out_err)?;
        let mut answer = String::new();
        term.stdin
            .read_line(&mut answer)
            .map_err(|e| VaultError::io("reading", "the terminal", e))?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            return Err(VaultError::Usage("nothing changed".into()));
        }
    }
    let source = if with_passphrase {
        KeySource::Passphrase(Passphrase::new(passphrase(term, true)?))
    } else {
        KeySource::Auto
    };
    let (v, moved) = Vault::reset(paths.clone(), source)?;
    for (from, to) in &moved {
        writeln!(term.stdout, "moved {} to {}", from.display(), to.display()).map_err(out_err)?;
    }
    writeln!(term.stdout, "{}", v.status()).map_err(out_err)?;
    let back: Vec<String> = moved
        .iter()
        .map(|(from, to)| format!("mv {} {}", to.display(), from.display()))
        .collect();
    writeln!(
        term.stdout,
        "to go back to the old vault: stop the daemon (`sayri quit`), then `{}`",
        back.join(" && ")
    )
    .map_err(out_err)?;
    Ok(Some(v))
}
