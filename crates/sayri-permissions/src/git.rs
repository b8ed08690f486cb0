//! `git`: the options and settings with which git runs another program.
//!
//! Git runs programs named in its configuration (`core.fsmonitor` on `git status`,
//! `diff.external` on `git diff`, `core.pager`, `core.sshCommand`, filters, credential helpers,
//! `!` aliases, …). Such a setting given on the command line (`git -c KEY=VALUE`, `git clone -c`)
//! or written with `git config` is judged by its value: the value is a command, judged as a
//! script of its own. Settings that run programs from elsewhere (`core.hooksPath`,
//! `include.path`, `--config-env`, whose value comes from the environment) are not analysable.
//! Options that name a program (`--upload-pack`, `--receive-pack`, `--exec`, `grep -O`,
//! `difftool -x`, `rebase --exec`, `bisect run`, `submodule foreach`, `filter-branch`
//! filters, `send-email` commands) yield that command; the global `-p`/`--paginate` runs the
//! configured pager, which is not known here. `git config` writing a setting is also a `write`
//! of the config file it changes.

use super::options::{Order, Spec, parse};
use super::rule::Action;
use super::shell::Word;
use super::wrappers::{ArgTarget, NestedCommand, Script, Unwrapped, script_from};

/// What a configuration key does with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// The value is a command (or a program) git runs.
    Command,
    /// The value is a git command line (`alias.NAME`), or a shell command after `!`.
    Alias,
    /// The value names a credential helper: `!CMD`, a path, or `NAME` for
    /// `git credential-NAME`.
    Credential,
    /// The value is a command unless it is a boolean (`core.fsmonitor`, `pager.CMD`).
    CommandOrBool,
    /// A value starting with `!` is a shell command; others are not (`submodule.NAME.update`).
    BangCommand,
    /// The value makes git run or load code from somewhere not known here (hooks, included
    /// config files, templates, transport protocols).
    Elsewhere,
}

/// How git treats the value of `key` (compared case-insensitively), if it can run a program.
pub fn key_kind(key: &str) -> Option<KeyKind> {
    let key = key.to_ascii_lowercase();
    let parts: Vec<&str> = key.split('.').collect();
    let (section, name) = match parts.as_slice() {
        [s, n] => (*s, *n),
        [s, .., n] => (*s, *n),
        _ => return None,
    };
    let sub = parts.len() > 2;
    use KeyKind::*;
    Some(match (section, name, sub) {
        ("core", "fsmonitor", false) => CommandOrBool,
        ("core", "pager" | "editor" | "sshcommand" | "askpass" | "gitproxy", false) => Command,
        ("core", "alternaterefscommand", false) => Command,
        ("core", "hookspath", false) => Elsewhere,
        ("sequence", "editor", false) => Command,
        ("diff", "external", false) => Command,
        ("diff", "textconv" | "command", true) => Command,
        ("merge", "driver", true) => Command,
        ("filter", "clean" | "smudge" | "process", true) => Command,
        ("credential", "helper", _) => Credential,
        ("pager", _, false) => CommandOrBool,
        ("gpg", "program" | "defaultkeycommand", _) => Command,
        ("submodule", "update", true) => BangCommand,
        ("uploadpack", "packobjectshook", false) => Command,
        ("browser" | "difftool" | "mergetool", "cmd" | "path", true) => Command,
        ("sendemail", "tocmd" | "cccmd" | "sendmailcmd" | "headercmd", _) => Command,
        ("remote", "uploadpack" | "receivepack", true) => Command,
        ("remote", "vcs", true) => Elsewhere,
        ("alias", _, false) => Alias,
        ("include", "path", false) | ("includeif", "path", true) => Elsewhere,
        ("init", "templatedir", false) => Elsewhere,
        ("protocol", "allow", _) => Elsewhere,
        _ => return None,
    })
}

/// Global options of `git` that take a separate argument.
const GLOBAL_WITH_ARG: &[&str] = &[
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

/// Analyses a `git` invocation (`args` after the program name) into `out`.
pub fn analyse(args: &[Word], out: &mut Unwrapped) {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        match t {
            "-c" => {
                if let Some(setting) = args.get(i + 1) {
                    setting_given(setting, "git -c", out);
                }
                i += 2;
            }
            "--config-env" => {
                if let Some(v) = args.get(i + 1) {
                    config_env(&v.text, out);
                }
                i += 2;
            }
            "-p" | "--paginate" => {
                out.opaque.push(format!(
                    "`git {t}` sends the output through the pager named by core.pager, GIT_PAGER or PAGER, which is not known here"
                ));
                i += 1;
            }
            _ if GLOBAL_WITH_ARG.contains(&t) => i += 2,
            _ if t.starts_with("--config-env=") => {
                config_env(&t["--config-env=".len()..], out);
                i += 1;
            }
            _ if t.starts_with("--exec-path=") => {
                out.opaque.push(format!(
                    "`git {t}` runs git's commands from a directory whose programs are not known here"
                ));
                i += 1;
            }
            _ if t.starts_with('-') => i += 1,
            _ => {
                subcommand(t, &args[i + 1..], out);
                return;
            }
        }
    }
}

/// `--config-env=KEY=ENVVAR`: the value comes from the environment.
fn config_env(text: &str, out: &mut Unwrapped) {
    let key = text.split_once('=').map_or(text, |(k, _)| k);
    if key_kind(key).is_some() {
        out.opaque.push(format!(
            "`git --config-env={text}` sets `{key}`, which runs a program, from an environment variable whose value is not known here"
        ));
    }
}

/// A `KEY=VALUE` word given to `git -c` or `git clone -c`.
fn setting_given(word: &Word, via: &str, out: &mut Unwrapped) {
    let (key, value) = match word.text.split_once('=') {
        Some((k, v)) => (k, v),
        None => (word.text.as_str(), "true"),
    };
    setting(key, value, word.dynamic, via, out);
}

/// Judges the setting `key = value` as git would use it.
fn setting(key: &str, value: &str, dynamic: bool, via: &str, out: &mut Unwrapped) {
    if dynamic {
        if key_kind(key).is_some() {
            out.opaque.push(format!(
                "`{via}` sets `{key}`, which runs a program, to a value computed at run time"
            ));
        }
        return;
    }
    match command_of_setting(key, value) {
        Ok(Some(command)) => out
            .scripts
            .push(Script::literal(&command, &format!("{via} {key}"))),
        Ok(None) => {}
        Err(reason) => out.opaque.push(reason.to_string()),
    }
}

/// A git setting that runs or loads code from a place the analyser cannot read (a hooks
/// directory, a template); the command is then opaque and needs a person's answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` makes git run or load code from `{value}`, which is not known here")]
pub struct CodeElsewhere {
    /// The setting.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// The shell command git runs because of the setting `key = value`: `Ok(None)` when it runs
/// none, `Err` (why) when it runs or loads code from somewhere not known here.
///
/// ```
/// use sayri_permissions::git::command_of_setting;
/// assert_eq!(command_of_setting("alias.st", "!touch x"), Ok(Some("touch x".into())));
/// assert_eq!(command_of_setting("core.fsmonitor", "true"), Ok(None));
/// assert!(command_of_setting("core.hooksPath", "/tmp/h").is_err());
/// ```
pub fn command_of_setting(key: &str, value: &str) -> Result<Option<String>, CodeElsewhere> {
    let Some(kind) = key_kind(key) else {
        return Ok(None);
    };
    let command = match kind {
        KeyKind::Elsewhere => {
            return Err(CodeElsewhere {
                key: key.to_string(),
                value: value.to_string(),
            });
        }
        KeyKind::CommandOrBool if is_bool(value) => return Ok(None),
        KeyKind::Command | KeyKind::CommandOrBool => value.to_string(),
        KeyKind::Alias => match value.strip_prefix('!') {
            Some(shell) => shell.to_string(),
            None => format!("git {value}"),
        },
        KeyKind::BangCommand => match value.strip_prefix('!') {
            Some(shell) => shell.to_string(),
            None => return Ok(None),
        },
        KeyKind::Credential => match value.strip_prefix('!') {
            Some(shell) => shell.to_string(),
            None if value.is_empty() => return Ok(None),
            None if value.starts_with('/') => value.to_string(),
            None => format!("git credential-{value}"),
        },
    };
    Ok((!command.trim().is_empty()).then_some(command))
}

fn is_bool(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

/// The subcommand `name` with its `args`.
fn subcommand(name: &str, args: &[Word], out: &mut Unwrapped) {
    match name {
        "config" => config(args, out),
        "grep" => grep(args, out),
        "difftool" => option_commands(args, &["-x", "--extcmd"], "git difftool -x", out),
        "rebase" => option_commands(args, &["-x", "--exec"], "git rebase --exec", out),
        "filter-branch" => option_commands(
            args,
            &[
                "--setup",
                "--env-filter",
                "--tree-filter",
                "--index-filter",
                "--parent-filter",
                "--msg-filter",
                "--commit-filter",
                "--tag-name-filter",
            ],
            "git filter-branch",
            out,
        ),
        "send-email" => option_commands(
            args,
            &[
                "--sendmail-cmd",
                "--to-cmd",
                "--cc-cmd",
                "--header-cmd",
                "--smtp-server",
            ],
            "git send-email",
            out,
        ),
        "bisect" if args.first().is_some_and(|w| w.text == "run") && args.len() > 1 => {
            out.commands.push(NestedCommand {
                words: args[1..].to_vec(),
                via: "git bisect run".into(),
            });
        }
        "submodule" => {
            if let Some(k) = args.iter().position(|w| w.text == "foreach") {
                let rest: Vec<Word> = args[k + 1..]
                    .iter()
                    .skip_while(|w| w.text.starts_with("--"))
                    .cloned()
                    .collect();
                if !rest.is_empty() {
                    out.scripts
                        .push(script_from(&rest, "git submodule foreach"));
                }
            }
        }
        _ => {}
    }
    transport_options(name, args, out);
    diff_options(args, out);
}

/// Options whose value is a command, in both `--opt=CMD` and `--opt CMD` forms (and `-x CMD`).
fn option_commands(args: &[Word], names: &[&str], via: &str, out: &mut Unwrapped) {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let found = names.iter().find_map(|n| {
            if t == *n {
                args.get(i + 1).map(|v| (v.clone(), 2))
            } else if let Some(v) = t.strip_prefix(&format!("{n}=")) {
                Some((
                    Word {
                        text: v.to_string(),
                        ..w.clone()
                    },
                    1,
                ))
            } else if n.len() == 2 && !n.starts_with("--") && t.starts_with(n) && t.len() > 2 {
                Some((
                    Word {
                        text: t[2..].to_string(),
                        ..w.clone()
                    },
                    1,
                ))
            } else {
                None
            }
        });
        match found {
            Some((value, used)) => {
                out.scripts
                    .push(script_from(std::slice::from_ref(&value), via));
                i += used;
            }
            None => i += 1,
        }
    }
}

/// `--upload-pack`, `--receive-pack` and `--exec` (and `clone -u`) name the program git runs
/// for the other end of a transfer; `clone -c`/`--config` sets configuration in the new
/// repository; `--template` copies hooks.
fn transport_options(name: &str, args: &[Word], out: &mut Unwrapped) {
    let mut names = vec!["--upload-pack", "--receive-pack", "--exec"];
    if name == "clone" {
        names.push("-u");
    }
    option_commands(args, &names, &format!("git {name}"), out);
    if matches!(name, "clone" | "init") {
        for (i, w) in args.iter().enumerate() {
            let value = if w.text == "-c" || w.text == "--config" {
                args.get(i + 1).cloned()
            } else {
                w.text.strip_prefix("--config=").map(|v| Word {
                    text: v.to_string(),
                    ..w.clone()
                })
            };
            if let Some(v) = value {
                setting_given(&v, &format!("git {name} -c"), out);
            }
            if w.text == "--template" || w.text.starts_with("--template=") {
                out.opaque.push(format!(
                    "`git {name} {}` copies hooks from a template directory whose programs are not known here",
                    w.text
                ));
            }
        }
    }
}

/// `--ext-diff` runs the configured external diff; `--output=FILE` writes a file.
fn diff_options(args: &[Word], out: &mut Unwrapped) {
    for (i, w) in args.iter().enumerate() {
        if w.text == "--" {
            break;
        }
        if w.text == "--ext-diff" {
            out.opaque.push(
                "`--ext-diff` runs the external diff program named in git's configuration, which is not known here"
                    .into(),
            );
        }
        let file = match w.text.strip_prefix("--output=") {
            Some(f) => Some(Word {
                text: f.to_string(),
                ..w.clone()
            }),
            None if w.text == "--output" => args.get(i + 1).cloned(),
            None => None,
        };
        if let Some(f) = file {
            out.targets
                .push(ArgTarget::from_word(Action::Write, &f, "git --output"));
        }
    }
}

/// `git grep -O[CMD]` / `--open-files-in-pager[=CMD]` opens the matching files with CMD (or
/// the configured pager).
fn grep(args: &[Word], out: &mut Unwrapped) {
    let spec = Spec {
        short_optional_arg: "O",
        ..Spec::new(
            "efABCm",
            &[
                "max-count",
                "threads",
                "context",
                "after-context",
                "before-context",
            ],
        )
    };
    let p = parse(args, spec, Order::Permute);
    for o in p
        .options
        .iter()
        .filter(|o| o.name == "-O" || o.name == "--open-files-in-pager")
    {
        match o.value.as_deref() {
            Some(cmd) if !cmd.is_empty() => out
                .scripts
                .push(Script::literal(cmd, "git grep --open-files-in-pager")),
            _ => out.opaque.push(
                "`git grep -O` opens the files with the pager named in git's configuration, which is not known here"
                    .into(),
            ),
        }
    }
}

/// Options of `git config` that take an argument.
const CONFIG_OPTIONS: Spec<'static> = Spec::new(
    "f",
    &["file", "blob", "type", "default", "comment", "value", "url"],
);

/// `git config`: a write of an executing setting is judged by its value, and is a write of the
/// config file; `--edit` runs the configured editor.
fn config(args: &[Word], out: &mut Unwrapped) {
    let p = parse(args, CONFIG_OPTIONS, Order::Permute);
    let mut operands = p.operand_words(args);
    let verb = operands.first().map(|w| w.text.as_str()).filter(|v| {
        matches!(
            *v,
            "set" | "get" | "list" | "unset" | "edit" | "rename-section" | "remove-section"
        )
    });
    if verb.is_some() {
        operands.remove(0);
    }
    if p.has(&["-e", "--edit"]) || verb == Some("edit") {
        out.opaque.push(
            "`git config --edit` opens the editor named by core.editor, GIT_EDITOR or EDITOR, which is not known here"
                .into(),
        );
    }
    let reading = p.has(&[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
        "--get-color",
        "--get-colorbool",
        "--show-origin",
        "--show-scope",
    ]) || matches!(verb, Some("get" | "list"));
    let writes_value = !reading
        && !p.has(&[
            "--unset",
            "--unset-all",
            "--rename-section",
            "--remove-section",
        ])
        && !matches!(verb, Some("unset" | "rename-section" | "remove-section"));
    let changes = !reading && (operands.len() >= 2 || !writes_value);
    if writes_value && let [key, value, ..] = operands.as_slice() {
        setting(&key.text, &value.text, value.dynamic, "git config", out);
    }
    if changes {
        let file = if let Some(f) = p.value(&["-f", "--file"]) {
            f.to_string()
        } else if p.has(&["--global"]) {
            "~/.gitconfig".into()
        } else if p.has(&["--system"]) {
            "/etc/gitconfig".into()
        } else if p.has(&["--worktree"]) {
            ".git/config.worktree".into()
        } else {
            ".git/config".into()
        };
        out.targets
            .push(ArgTarget::new(Action::Write, &file, "git config"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_run_programs() {
        for k in [
            "core.fsmonitor",
            "core.pager",
            "core.editor",
            "core.sshCommand",
            "core.hooksPath",
            "diff.external",
            "diff.pdf.textconv",
            "filter.lfs.smudge",
            "credential.helper",
            "credential.https://x.org.helper",
            "alias.st",
            "pager.log",
            "include.path",
            "includeIf.gitdir:~/w/.path",
            "gpg.ssh.defaultKeyCommand",
            "submodule.lib.update",
        ] {
            assert!(key_kind(k).is_some(), "{k}");
        }
        for k in [
            "user.name",
            "diff.renames",
            "core.autocrlf",
            "alias",
            "filter.lfs.required",
        ] {
            assert!(key_kind(k).is_none(), "{k}");
        }
    }
}
