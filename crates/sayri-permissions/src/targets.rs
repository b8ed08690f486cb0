//! `read`, `write` and `web` targets of a shell command.
//!
//! Targets come from redirections (`>`, `>>`, `>|`, `&>`, `&>>`, `<>` write; `<` reads), from the
//! file arguments of well-known programs (`cat`, `head`, … read; `tee`, `cp`'s destination,
//! `mv`, `rm`, `touch`, `dd of=`, `curl -o`, … write; `curl -T`/`-d @file` read), from the
//! files that programs which read or write what their arguments say report
//! ([`super::arg_programs`]: `sed -i`, `sed 'w FILE'`, `awk 'print > FILE'`, `find -delete`, …)
//! and from URLs (every `scheme://` argument, and the arguments of `curl`, `wget`, …). Paths are
//! reported as written (`~` and `$HOME` are not expanded), so rules for them should use `*`; a
//! path with a part known only at run time also carries its shape (that part as `*`).

use super::options::{Order, Spec, parse};
use super::rule::Action;
use super::shell::{Analysis, Word, base_name};

/// One target of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `read`, `write` or `web`.
    pub action: Action,
    /// The path or URL as written.
    pub value: String,
    /// When part of the path is known only at run time: the path as a glob with that part as
    /// `*` (see [`Word::shape`]).
    pub shape: Option<String>,
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
    "hexdump",
    "strings",
    "base64",
    "base32",
    "wc",
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
const PATTERN_READERS: &[&str] = &["grep", "egrep", "fgrep", "rg", "jq"];
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

/// Options that take an argument, per kind of program.
const READ_OPTIONS: Spec<'static> = Spec {
    short_with_arg: "nc",
    long_with_arg: &["lines", "bytes"],
    short_optional_arg: "",
};
const PATTERN_OPTIONS: Spec<'static> = Spec {
    short_with_arg: "efABCmd",
    long_with_arg: &["regexp", "file", "max-count"],
    short_optional_arg: "",
};
const WRITE_OPTIONS: Spec<'static> = Spec {
    short_with_arg: "tS",
    long_with_arg: &["target-directory", "suffix"],
    short_optional_arg: "",
};
const MODE_OPTIONS: Spec<'static> = Spec {
    short_with_arg: "",
    long_with_arg: &["reference"],
    short_optional_arg: "",
};
const COPY_OPTIONS: Spec<'static> = Spec {
    short_with_arg: "tSmogb",
    long_with_arg: &["target-directory", "suffix", "mode", "owner", "group"],
    short_optional_arg: "",
};
/// Options of `curl`, `wget` and the other fetchers that take an argument.
pub(super) const FETCH_OPTIONS: Spec<'static> = Spec {
    short_with_arg: "oOHdXuAexTFbcKmwrCEUtPQY",
    long_with_arg: &[
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
    short_optional_arg: "",
};

/// Targets found so far, without duplicates, in discovery order.
#[derive(Default)]
struct Found(Vec<Target>);

impl Found {
    fn push(&mut self, action: Action, value: &str) {
        self.add(action, value, None);
    }

    /// A target given by a word: its text, and its shape when part of it is a run-time value.
    fn push_word(&mut self, action: Action, word: &Word) {
        self.add(action, &word.text, word.shape.clone());
    }

    fn add(&mut self, action: Action, value: &str, shape: Option<String>) {
        if value.is_empty() {
            return;
        }
        let t = Target {
            action,
            value: value.to_string(),
            shape,
        };
        if !self.0.contains(&t) {
            self.0.push(t);
        }
    }
}

/// Every target of the analysed command, deduplicated, in discovery order.
pub fn targets(analysis: &Analysis) -> Vec<Target> {
    let mut found = Found::default();
    for r in &analysis.redirects {
        let value = r.target.text.as_str();
        match r.op.as_str() {
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => found.push_word(Action::Write, &r.target),
            ">&" | "&>|" if !value.chars().all(|c| c.is_ascii_digit()) && value != "-" => {
                found.push_word(Action::Write, &r.target)
            }
            "<" => found.push_word(Action::Read, &r.target),
            _ => {}
        }
    }
    for cmd in &analysis.commands {
        for layer in &cmd.unwrapped.layers {
            if let Some(first) = layer.first() {
                command_targets(base_name(&first.text), &layer[1..], &mut found);
            }
        }
        for t in &cmd.unwrapped.targets {
            found.push_word(t.action, &t.word);
        }
    }
    found.0
}

/// The targets of one command layer: every URL argument, and the files and URLs of the
/// programs this module knows.
fn command_targets(name: &str, args: &[Word], found: &mut Found) {
    for w in args {
        if is_url(&w.text) {
            found.push(Action::Web, &w.text);
        }
    }
    let operands = |spec: Spec<'_>| parse(args, spec, Order::Permute);
    match name {
        n if READERS.contains(&n) => {
            let p = operands(READ_OPTIONS);
            for w in p.operand_words(args) {
                found.push_word(Action::Read, w);
            }
        }
        // `uniq [IN [OUT]]` and `xxd [IN [OUT]]`: the second operand is written.
        "uniq" | "xxd" => {
            let p = operands(Spec::new(
                "fsw",
                &["skip-fields", "skip-chars", "check-chars"],
            ));
            let pos = p.operand_words(args);
            if let Some(w) = pos.first() {
                found.push_word(Action::Read, w);
            }
            if let Some(w) = pos.get(1) {
                found.push_word(Action::Write, w);
            }
        }
        n if PATTERN_READERS.contains(&n) => pattern_reader_targets(args, found),
        n if WRITERS_ALL.contains(&n) => {
            let pos = operands(WRITE_OPTIONS).operand_words(args);
            for w in &pos {
                found.push_word(Action::Write, w);
            }
            // `mv a dir/` writes `dir/a`.
            if let Some((last, rest)) = pos.split_last()
                && last.text.ends_with('/')
                && matches!(n, "mv" | "ln")
            {
                into_directory(last, rest, found);
            }
        }
        n if WRITERS_AFTER_FIRST.contains(&n) => {
            for w in operands(MODE_OPTIONS)
                .operand_words(args)
                .into_iter()
                .skip(1)
            {
                found.push_word(Action::Write, w);
            }
        }
        "cp" | "install" | "rsync" => copy_targets(args, found),
        "dd" => {
            for w in args {
                if let Some(v) = w.text.strip_prefix("of=") {
                    found.push(Action::Write, v);
                } else if let Some(v) = w.text.strip_prefix("if=") {
                    found.push(Action::Read, v);
                }
            }
        }
        n if FETCHERS.contains(&n) => fetch_targets(n, args, found),
        _ => {}
    }
}

/// `grep`/`rg`/`jq`: the first operand is the pattern unless `-e`/`-f` gave it; the other
/// operands are read.
fn pattern_reader_targets(args: &[Word], found: &mut Found) {
    let p = parse(args, PATTERN_OPTIONS, Order::Permute);
    let explicit = p.has(&["-e", "-f", "--regexp", "--file"]);
    for w in p
        .operand_words(args)
        .into_iter()
        .skip(usize::from(!explicit))
    {
        found.push_word(Action::Read, w);
    }
}

/// `cp`/`install`/`rsync`: the sources are read, the last operand (or `-t DIR`) is written.
fn copy_targets(args: &[Word], found: &mut Found) {
    let p = parse(args, COPY_OPTIONS, Order::Permute);
    for d in p.values(&["-t", "--target-directory"]) {
        found.push(Action::Write, d);
    }
    let pos = p.operand_words(args);
    if let Some((last, rest)) = pos.split_last() {
        for w in rest {
            found.push_word(Action::Read, w);
        }
        found.push_word(Action::Write, last);
        // `cp a b dir/` writes `dir/a` and `dir/b`.
        if last.text.ends_with('/') {
            into_directory(last, rest, found);
        }
    }
}

/// `dir/NAME` for each of `sources` (a move or copy into a directory).
fn into_directory(dir: &Word, sources: &[&Word], found: &mut Found) {
    for w in sources {
        let base = base_name(w.text.trim_end_matches('/'));
        found.push(Action::Write, &format!("{}{base}", dir.text));
    }
}

/// `curl`/`wget`/…: `-o FILE` is written, `-T FILE` and `-d @FILE` are read, operands are URLs.
fn fetch_targets(name: &str, args: &[Word], found: &mut Found) {
    let p = parse(args, FETCH_OPTIONS, Order::Permute);
    for v in p.values(&["-o", "-O", "--output", "--output-document"]) {
        if v != "-" && !(name == "curl" && v.starts_with('-')) {
            found.push(Action::Write, v);
        }
    }
    for v in p.values(&["-T", "--upload-file"]) {
        found.push(Action::Read, v);
    }
    let data = [
        "-d",
        "-F",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--form",
        "--post-file",
        "--body-file",
    ];
    for v in p.values(&data) {
        if let Some(file) = v.split_once('@').map(|(_, f)| f) {
            found.push(Action::Read, file);
        }
    }
    for v in p.values(&["--post-file", "--body-file"]) {
        found.push(Action::Read, v);
    }
    for w in p.operand_words(args) {
        found.push(Action::Web, &w.text);
    }
}

/// Whether `name` downloads from the network.
pub fn is_fetcher(name: &str) -> bool {
    FETCHERS.contains(&name) || matches!(name, "lynx" | "w3m" | "nc" | "ncat" | "netcat" | "socat")
}
