//! `read`, `write` and `web` targets of a shell command.
//!
//! Targets come from redirections (`>`, `>>`, `>|`, `&>`, `&>>`, `<>` write; `<` reads), from the
//! file arguments of well-known programs (`cat`, `head`, … read; `tee`, `cp`'s destination,
//! `mv`, `rm`, `touch`, `sed -i`, `dd of=`, `curl -o`, … write; `curl -T`/`-d @file` read) and
//! from URLs (every `scheme://` argument, and the arguments of `curl`, `wget`, …). Paths are
//! reported as written (`~` and `$HOME` are not expanded), so rules for them should use `*`.

use super::rule::Action;
use super::shell::{Analysis, Word, base_name};

/// One target of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `read`, `write` or `web`.
    pub action: Action,
    /// The path or URL as written.
    pub value: String,
}

const READERS: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "less",
    "more",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "base64",
    "base32",
    "wc",
    "sort",
    "uniq",
    "cut",
    "paste",
    "diff",
    "cmp",
    "comm",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "file",
    "source",
    ".",
    "bat",
    "view",
    "vim",
    "vi",
    "nano",
    "scp",
    "gpg",
    "zcat",
    "bzcat",
    "xzcat",
];
/// Readers whose first positional argument is a pattern or script, not a file.
const PATTERN_READERS: &[&str] = &["grep", "egrep", "fgrep", "rg", "jq", "awk", "gawk", "sed"];
const WRITERS_ALL: &[&str] = &[
    "tee", "touch", "rm", "rmdir", "mkdir", "shred", "truncate", "unlink", "ln", "mv", "mkfifo",
];
const WRITERS_AFTER_FIRST: &[&str] = &["chmod", "chown", "chgrp", "setfacl"];
const FETCHERS: &[&str] = &[
    "curl", "wget", "fetch", "aria2c", "http", "https", "xh", "axel",
];

fn is_url(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    !rest.is_empty()
        && matches!(
            scheme.to_ascii_lowercase().as_str(),
            "http"
                | "https"
                | "ftp"
                | "ftps"
                | "ws"
                | "wss"
                | "sftp"
                | "scp"
                | "ssh"
                | "git"
                | "rsync"
        )
}

/// Positional arguments, skipping options and the values of options that take one.
fn positionals<'a>(
    args: &'a [Word],
    short_with_arg: &str,
    long_with_arg: &[&str],
) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let t = args[i].text.as_str();
        if only_positional || t == "-" || !t.starts_with('-') {
            out.push(&args[i]);
            i += 1;
            continue;
        }
        if t == "--" {
            only_positional = true;
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            i += if !long.contains('=') && long_with_arg.contains(&long) {
                2
            } else {
                1
            };
            continue;
        }
        let body = &t[1..];
        let takes = body
            .char_indices()
            .find(|(_, c)| short_with_arg.contains(*c))
            .map(|(k, c)| k + c.len_utf8() == body.len());
        i += if takes == Some(true) { 2 } else { 1 };
    }
    out
}

fn option_values(args: &[Word], short: &[&str], long: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if short.contains(&t) || long.contains(&t) {
            if let Some(v) = args.get(i + 1) {
                out.push(v.text.clone());
            }
        } else if let Some((name, v)) = t.split_once('=')
            && long.contains(&name)
        {
            out.push(v.to_string());
        } else {
            for s in short {
                if let Some(v) = t.strip_prefix(s)
                    && !v.is_empty()
                    && !t.starts_with("--")
                {
                    out.push(v.to_string());
                }
            }
        }
    }
    out
}

/// Every target of the analysed command, deduplicated, in discovery order.
pub fn targets(analysis: &Analysis) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    let mut push = |action: Action, value: &str| {
        if value.is_empty() {
            return;
        }
        let t = Target {
            action,
            value: value.to_string(),
        };
        if !out.contains(&t) {
            out.push(t);
        }
    };
    for r in &analysis.redirects {
        let value = r.target.text.as_str();
        match r.op.as_str() {
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => push(Action::Write, value),
            ">&" | "&>|" if !value.chars().all(|c| c.is_ascii_digit()) && value != "-" => {
                push(Action::Write, value)
            }
            "<" => push(Action::Read, value),
            _ => {}
        }
    }
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            let Some(first) = layer.first() else { continue };
            let name = base_name(&first.text);
            let args = &layer[1..];
            for w in args {
                if is_url(&w.text) {
                    push(Action::Web, &w.text);
                }
            }
            match name {
                n if READERS.contains(&n) => {
                    for w in positionals(args, "nc", &["lines", "bytes"]) {
                        push(Action::Read, &w.text);
                    }
                }
                n if PATTERN_READERS.contains(&n) => {
                    let explicit = args
                        .iter()
                        .any(|w| matches!(w.text.as_str(), "-e" | "-f" | "--regexp" | "--file"));
                    let pos = positionals(args, "efABCmd", &["regexp", "file", "max-count"]);
                    let skip = usize::from(!explicit);
                    let in_place = n == "sed"
                        && args
                            .iter()
                            .any(|w| w.text.starts_with("-i") || w.text.starts_with("--in-place"));
                    for w in pos.into_iter().skip(skip) {
                        push(
                            if in_place {
                                Action::Write
                            } else {
                                Action::Read
                            },
                            &w.text,
                        );
                    }
                }
                n if WRITERS_ALL.contains(&n) => {
                    let pos = positionals(args, "tS", &["target-directory", "suffix"]);
                    for w in &pos {
                        push(Action::Write, &w.text);
                    }
                    // `mv a dir/` writes `dir/a`.
                    if let Some((last, rest)) = pos.split_last()
                        && last.text.ends_with('/')
                        && matches!(n, "mv" | "ln")
                    {
                        for w in rest {
                            let base = base_name(w.text.trim_end_matches('/'));
                            push(Action::Write, &format!("{}{base}", last.text));
                        }
                    }
                }
                n if WRITERS_AFTER_FIRST.contains(&n) => {
                    for w in positionals(args, "", &["reference"]).into_iter().skip(1) {
                        push(Action::Write, &w.text);
                    }
                }
                "cp" | "install" | "rsync" => {
                    let pos = positionals(
                        args,
                        "tSmogb",
                        &["target-directory", "suffix", "mode", "owner", "group"],
                    );
                    for d in option_values(args, &["-t"], &["--target-directory"]) {
                        push(Action::Write, &d);
                    }
                    if let Some((last, rest)) = pos.split_last() {
                        for w in rest {
                            push(Action::Read, &w.text);
                        }
                        push(Action::Write, &last.text);
                        // `cp a b dir/` writes `dir/a` and `dir/b`.
                        if last.text.ends_with('/') {
                            for w in rest {
                                let base = base_name(w.text.trim_end_matches('/'));
                                push(Action::Write, &format!("{}{base}", last.text));
                            }
                        }
                    }
                }
                "dd" => {
                    for w in args {
                        if let Some(v) = w.text.strip_prefix("of=") {
                            push(Action::Write, v);
                        } else if let Some(v) = w.text.strip_prefix("if=") {
                            push(Action::Read, v);
                        }
                    }
                }
                n if FETCHERS.contains(&n) => {
                    for v in option_values(args, &["-o", "-O"], &["--output", "--output-document"])
                    {
                        if v != "-" && !(n == "curl" && v.starts_with('-')) {
                            push(Action::Write, &v);
                        }
                    }
                    for v in option_values(args, &["-T"], &["--upload-file"]) {
                        push(Action::Read, &v);
                    }
                    for v in option_values(
                        args,
                        &["-d", "-F"],
                        &[
                            "--data",
                            "--data-binary",
                            "--data-raw",
                            "--data-urlencode",
                            "--form",
                            "--post-file",
                            "--body-file",
                        ],
                    ) {
                        if let Some(file) = v.split_once('@').map(|(_, f)| f) {
                            push(Action::Read, file);
                        }
                    }
                    for v in option_values(args, &[], &["--post-file", "--body-file"]) {
                        push(Action::Read, &v);
                    }
                    for w in positionals(
                        args,
                        "oOHdXuAexTFbcKmwrCEUtPQY",
                        &[
                            "output",
                            "output-document",
                            "header",
                            "data",
                            "request",
                            "user",
                            "user-agent",
                            "referer",
                            "proxy",
                            "upload-file",
                            "form",
                            "cookie",
                            "cookie-jar",
                            "config",
                            "max-time",
                            "connect-timeout",
                            "write-out",
                            "range",
                            "data-binary",
                            "data-raw",
                            "data-urlencode",
                            "post-data",
                            "post-file",
                            "body-file",
                            "method",
                            "tries",
                            "timeout",
                        ],
                    ) {
                        push(Action::Web, &w.text);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Whether `name` downloads from the network.
pub fn is_fetcher(name: &str) -> bool {
    FETCHERS.contains(&name) || matches!(name, "lynx" | "w3m" | "nc" | "ncat" | "netcat" | "socat")
}
