//! Which commands only read: the classification behind an agent's `read_only` default.
//!
//! An agent whose `sandbox.default_effect` is `read_only` (the built-in default agent) runs the
//! commands of [`READ_ONLY`] without asking and asks before everything else. A row names the
//! programs, the options or subcommands with which they change something or run another program
//! (those forms are not read-only), and, for some, a check of their own. The table is
//! deliberately small and literal: a program that is not in it is not read-only.
//!
//! Each layer of a command is classified on its own (`timeout 5 ls` is `timeout 5 ls` and
//! `ls`), and everything else the analysis finds is judged as its own subject: a command hidden
//! in an argument (`sed '1e CMD'`), a file written (`> out`, `sort -o`), a command word computed
//! at run time. So `sed -n 1p f` is read-only while `sed -i …` and `sed '1e …'` ask.

use super::awk;
use super::options::{Order, Spec, parse};
use super::sed;
use super::shell::{Word, base_name};

/// A row of [`READ_ONLY`].
pub struct ReadOnly {
    /// Program names.
    pub names: &'static [&'static str],
    /// Options that take an argument (so their values are not read as subcommands).
    pub options: Spec<'static>,
    /// Options with which the program writes, deletes, changes settings or runs a program.
    pub unsafe_options: &'static [&'static str],
    /// When set, the first operand must be one of these (a read-only subcommand); an empty
    /// string allows no operand at all.
    pub subcommands: Option<&'static [&'static str]>,
    /// At most this many operands (`uniq IN OUT` writes OUT).
    pub max_operands: Option<usize>,
    /// A check of the arguments of its own, for programs whose language decides.
    pub check: Option<fn(&[Word]) -> bool>,
}

const fn row(names: &'static [&'static str]) -> ReadOnly {
    ReadOnly {
        names,
        options: Spec::NONE,
        unsafe_options: &[],
        subcommands: None,
        max_operands: None,
        check: None,
    }
}

/// The programs that only read (with the forms in which they do not).
pub const READ_ONLY: &[ReadOnly] = &[
    row(&[
        "ls",
        "dir",
        "vdir",
        "cat",
        "tac",
        "head",
        "tail",
        "nl",
        "wc",
        "od",
        "hexdump",
        "strings",
        "base64",
        "base32",
        "md5sum",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "b2sum",
        "cksum",
        "sum",
        "cmp",
        "diff",
        "comm",
        "cut",
        "paste",
        "fold",
        "fmt",
        "expand",
        "unexpand",
        "column",
        "tr",
        "rev",
        "join",
        "look",
        "stat",
        "readlink",
        "realpath",
        "basename",
        "dirname",
        "pwd",
        "echo",
        "printf",
        "true",
        "false",
        "test",
        "[",
        "seq",
        "sleep",
        "cal",
        "ncal",
        "uptime",
        "uname",
        "arch",
        "nproc",
        "whoami",
        "id",
        "groups",
        "who",
        "w",
        "users",
        "last",
        "logname",
        "tty",
        "printenv",
        "locale",
        "getconf",
        "getent",
        "df",
        "du",
        "free",
        "vmstat",
        "iostat",
        "mpstat",
        "lsblk",
        "lscpu",
        "lsusb",
        "lspci",
        "lsmod",
        "lsns",
        "lslocks",
        "lsipc",
        "lsof",
        "lshw",
        "findmnt",
        "ps",
        "pstree",
        "pgrep",
        "pidof",
        "which",
        "type",
        "whereis",
        "whatis",
        "apropos",
        "locate",
        "plocate",
        "namei",
        "getfacl",
        "lsattr",
        "lsb_release",
        "cd",
        "pushd",
        "popd",
        "dirs",
        "netstat",
        "jq",
        "zcat",
        "bzcat",
        "xzcat",
        "zgrep",
        "grep",
        "egrep",
        "fgrep",
        "envsubst",
        "numfmt",
        "dpkg-query",
        "top",
    ]),
    ReadOnly {
        unsafe_options: &["-K", "--kill"],
        ..row(&["ss"])
    },
    ReadOnly {
        unsafe_options: &["-s", "--set"],
        ..row(&["sensors"])
    },
    ReadOnly {
        subcommands: Some(&["q"]),
        ..row(&["xset"])
    },
    ReadOnly {
        subcommands: Some(&[
            "policy", "show", "showpkg", "showsrc", "search", "depends", "rdepends", "madison",
            "pkgnames", "stats", "dump",
        ]),
        ..row(&["apt-cache"])
    },
    ReadOnly {
        unsafe_options: &["-C", "--compile"],
        ..row(&["file"])
    },
    ReadOnly {
        options: Spec::new("bStu", &["before", "set", "time", "user"]),
        unsafe_options: &["-C", "--clear", "-S", "--set"],
        ..row(&["lastlog"])
    },
    ReadOnly {
        options: Spec::new("fsw", &["skip-fields", "skip-chars", "check-chars"]),
        max_operands: Some(1),
        ..row(&["uniq"])
    },
    ReadOnly {
        options: Spec::new("clsgoC", &["cols", "len", "seek", "groupsize", "offset"]),
        max_operands: Some(1),
        ..row(&["xxd"])
    },
    ReadOnly {
        options: Spec::new(
            "koStT",
            &[
                "key",
                "output",
                "field-separator",
                "buffer-size",
                "temporary-directory",
                "compress-program",
                "files0-from",
                "parallel",
                "batch-size",
            ],
        ),
        unsafe_options: &["-o", "--output", "--compress-program"],
        ..row(&["sort"])
    },
    ReadOnly {
        options: Spec::new(
            "eEfmAgjMtT",
            &[
                "regexp",
                "file",
                "max-count",
                "pre",
                "pre-glob",
                "type",
                "glob",
                "iglob",
            ],
        ),
        unsafe_options: &["--pre", "--pre-glob", "--search-zip", "-z"],
        ..row(&["rg"])
    },
    ReadOnly {
        options: Spec::new("LPIo", &["filelimit", "timefmt", "sort", "charset"]),
        unsafe_options: &["-o", "-R"],
        ..row(&["tree"])
    },
    ReadOnly {
        options: Spec::new(
            "bhjkopPtTxyz",
            &["log-file", "LOG-FILE", "lesskey-file", "lesskey-src"],
        ),
        unsafe_options: &[
            "-o",
            "-O",
            "--log-file",
            "--LOG-FILE",
            "-k",
            "--lesskey-file",
            "--lesskey-src",
        ],
        check: Some(no_plus_command),
        ..row(&["less", "more", "most"])
    },
    ReadOnly {
        unsafe_options: &["-s", "--set"],
        options: Spec {
            short_optional_arg: "IR",
            ..Spec::new("dfrs", &["date", "file", "reference", "set"])
        },
        ..row(&["date"])
    },
    ReadOnly {
        unsafe_options: &["-F", "--file", "-b", "--boot"],
        subcommands: Some(&[""]),
        ..row(&["hostname"])
    },
    ReadOnly {
        subcommands: Some(&[
            "",
            "status",
            "show",
            "list-timezones",
            "list-locales",
            "list-keymaps",
            "list-x11-keymap-models",
            "list-x11-keymap-layouts",
            "list-x11-keymap-variants",
            "list-x11-keymap-options",
        ]),
        ..row(&["hostnamectl", "timedatectl", "localectl"])
    },
    ReadOnly {
        options: Spec::new(
            "npPD",
            &[
                "since",
                "until",
                "unit",
                "user-unit",
                "identifier",
                "priority",
                "lines",
                "output",
                "boot",
                "cursor",
                "after-cursor",
                "grep",
                "field",
                "directory",
                "file",
                "machine",
                "namespace",
            ],
        ),
        unsafe_options: &[
            "--vacuum-size",
            "--vacuum-time",
            "--vacuum-files",
            "--rotate",
            "--flush",
            "--sync",
            "--relinquish-var",
            "--smart-relinquish-var",
            "--setup-keys",
            "--update-catalog",
            "--cursor-file",
        ],
        ..row(&["journalctl"])
    },
    ReadOnly {
        unsafe_options: &[
            "-c",
            "-C",
            "--clear",
            "--read-clear",
            "-D",
            "--console-off",
            "-E",
            "--console-on",
            "-n",
            "--console-level",
        ],
        ..row(&["dmesg"])
    },
    ReadOnly {
        options: Spec::new(
            "tpHMnoP",
            &[
                "type", "property", "host", "machine", "lines", "output", "state",
            ],
        ),
        subcommands: Some(&[
            "",
            "status",
            "show",
            "cat",
            "list-units",
            "list-unit-files",
            "list-timers",
            "list-sockets",
            "list-dependencies",
            "list-jobs",
            "list-machines",
            "list-automounts",
            "list-paths",
            "is-active",
            "is-enabled",
            "is-failed",
            "is-system-running",
            "get-default",
            "show-environment",
            "help",
        ]),
        ..row(&["systemctl"])
    },
    ReadOnly {
        subcommands: Some(&[
            "",
            "list-sessions",
            "list-users",
            "list-seats",
            "session-status",
            "user-status",
            "seat-status",
            "show-session",
            "show-user",
            "show-seat",
        ]),
        ..row(&["loginctl"])
    },
    ReadOnly {
        check: Some(ip_shows),
        ..row(&["ip"])
    },
    ReadOnly {
        subcommands: Some(&[""]),
        ..row(&["ifconfig", "iwconfig", "route", "arp"])
    },
    ReadOnly {
        check: Some(|args| args.iter().all(|w| w.text == "-l")),
        ..row(&["mount"])
    },
    ReadOnly {
        check: Some(nmcli_shows),
        options: Spec::new(
            "fgempw",
            &[
                "fields",
                "get-values",
                "escape",
                "mode",
                "pretty",
                "wait",
                "colors",
            ],
        ),
        ..row(&["nmcli"])
    },
    ReadOnly {
        subcommands: Some(&[
            "get",
            "list-schemas",
            "list-relocatable-schemas",
            "list-keys",
            "list-children",
            "list-recursively",
            "range",
            "describe",
            "writable",
        ]),
        ..row(&["gsettings"])
    },
    ReadOnly {
        subcommands: Some(&[
            "info",
            "stat",
            "list",
            "get-default-sink",
            "get-default-source",
            "get-sink-volume",
            "get-sink-mute",
            "get-source-volume",
            "get-source-mute",
        ]),
        ..row(&["pactl"])
    },
    ReadOnly {
        options: Spec::new("cD", &["card", "device"]),
        subcommands: Some(&[
            "",
            "get",
            "sget",
            "scontents",
            "contents",
            "info",
            "scontrols",
            "controls",
        ]),
        ..row(&["amixer"])
    },
    ReadOnly {
        subcommands: Some(&["", "devices", "paired-devices", "show", "info", "list"]),
        ..row(&["bluetoothctl"])
    },
    ReadOnly {
        check: Some(xrandr_queries),
        ..row(&["xrandr"])
    },
    ReadOnly {
        subcommands: Some(&[
            "list", "show", "search", "policy", "madison", "depends", "rdepends", "showsrc",
            "pkgnames",
        ]),
        ..row(&["apt"])
    },
    ReadOnly {
        check: Some(dpkg_queries),
        ..row(&["dpkg"])
    },
    ReadOnly {
        subcommands: Some(&["list", "info", "search", "remote-ls", "history"]),
        ..row(&["flatpak"])
    },
    ReadOnly {
        subcommands: Some(&["list", "info", "find", "connections", "version"]),
        ..row(&["snap"])
    },
    ReadOnly {
        options: Spec {
            short_optional_arg: "H",
            ..Spec::new(
                "CMSLmREPrpes",
                &[
                    "config-file",
                    "manpath",
                    "sections",
                    "locale",
                    "systems",
                    "recode",
                    "encoding",
                    "pager",
                    "prompt",
                    "preprocessor",
                    "extension",
                ],
            )
        },
        unsafe_options: &["-P", "--pager", "-H", "--html", "-p", "--preprocessor"],
        ..row(&["man"])
    },
    ReadOnly {
        check: Some(find_reads),
        ..row(&["find"])
    },
    ReadOnly {
        check: Some(sed_reads),
        ..row(&["sed", "gsed"])
    },
    ReadOnly {
        check: Some(awk_reads),
        ..row(&["awk", "gawk", "mawk", "nawk"])
    },
    ReadOnly {
        check: Some(git_reads),
        ..row(&["git"])
    },
    ReadOnly {
        check: Some(env_reads),
        ..row(&["env"])
    },
    // Wrappers: the command they run is judged as its own layer.
    row(&[
        "time", "nice", "timeout", "stdbuf", "command", "builtin", "ionice", "taskset", "chrt",
        "xargs",
    ]),
];

/// Whether the command layer `words` (program first) only reads.
///
/// ```
/// use sayri_permissions::read_only::is_read_only;
/// use sayri_permissions::shell::Word;
/// let words = |s: &str| s.split(' ').map(Word::literal).collect::<Vec<_>>();
/// assert!(is_read_only(&words("git log --oneline -5")));
/// assert!(!is_read_only(&words("git -c core.pager=less log")));
/// assert!(!is_read_only(&words("sort -o out.txt in.txt")));
/// assert!(!is_read_only(&words("rm -f x")));
/// ```
pub fn is_read_only(words: &[Word]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    if first.dynamic || words.iter().any(|w| !w.text.is_ascii()) {
        return false;
    }
    // `./ls` is whatever file is there; only programs of the system directories are known.
    if let Some((dir, _)) = first.text.rsplit_once('/')
        && !super::evaluate::SYSTEM_DIRS.contains(&dir)
    {
        return false;
    }
    let name = base_name(&first.text);
    let args = &words[1..];
    if version_or_help(&first.text, args) {
        return true;
    }
    let Some(row) = READ_ONLY.iter().find(|r| r.names.contains(&name)) else {
        return false;
    };
    let p = parse(args, row.options, Order::Permute);
    if p.has(row.unsafe_options) {
        return false;
    }
    let operands = p.operand_words(args);
    if row.max_operands.is_some_and(|m| operands.len() > m) {
        return false;
    }
    if let Some(subs) = row.subcommands {
        let sub = operands.first().map_or("", |w| w.text.as_str());
        if !subs.contains(&sub) {
            return false;
        }
    }
    row.check.is_none_or(|check| check(args))
}

/// `PROGRAM --version` or `PROGRAM --help` alone, for a program found on `PATH`.
fn version_or_help(program: &str, args: &[Word]) -> bool {
    !program.contains('/')
        && matches!(args, [only] if matches!(only.text.as_str(), "--version" | "--help"))
}

/// `less +CMD` runs a `less` command at start (`+!CMD` runs a shell command).
fn no_plus_command(args: &[Word]) -> bool {
    !args.iter().any(|w| w.text.starts_with('+'))
}

fn operand_texts<'a>(args: &'a [Word], spec: Spec<'_>) -> Vec<&'a str> {
    let p = parse(args, spec, Order::Permute);
    p.operand_words(args)
        .into_iter()
        .map(|w| w.text.as_str())
        .collect()
}

/// `ip [OPTIONS] OBJECT [show|list|get]`.
fn ip_shows(args: &[Word]) -> bool {
    let ops = operand_texts(args, Spec::new("fbn", &["family", "batch", "netns"]));
    let objects = [
        "a",
        "addr",
        "address",
        "l",
        "link",
        "r",
        "route",
        "n",
        "neigh",
        "neighbour",
        "rule",
        "maddr",
        "maddress",
        "ntable",
        "netconf",
        "tunnel",
        "token",
        "monitor",
    ];
    match ops.as_slice() {
        [] => false,
        [object, rest @ ..] => {
            objects.contains(object)
                && rest.first().is_none_or(|verb| {
                    matches!(*verb, "show" | "list" | "ls" | "lst" | "get" | "dev")
                })
        }
    }
}

/// `nmcli` objects with their read-only verbs.
fn nmcli_shows(args: &[Word]) -> bool {
    let ops = operand_texts(
        args,
        Spec::new(
            "fgempw",
            &[
                "fields",
                "get-values",
                "escape",
                "mode",
                "pretty",
                "wait",
                "colors",
            ],
        ),
    );
    match ops.as_slice() {
        [] => true,
        [object] => matches!(
            *object,
            "g" | "general"
                | "d"
                | "device"
                | "c"
                | "connection"
                | "networking"
                | "n"
                | "radio"
                | "r"
        ),
        [object, verb, ..] => match *object {
            "g" | "general" => matches!(*verb, "status" | "permissions"),
            "d" | "device" | "dev" => {
                matches!(*verb, "status" | "show" | "s" | "sh")
                    || (*verb == "wifi" && ops.get(2).is_none_or(|v| *v == "list"))
            }
            "c" | "connection" | "con" => matches!(*verb, "show" | "s" | "sh"),
            "networking" | "n" => *verb == "connectivity",
            _ => false,
        },
    }
}

/// `xrandr` with only query options.
fn xrandr_queries(args: &[Word]) -> bool {
    args.iter().all(|w| {
        matches!(
            w.text.as_str(),
            "-q" | "--query"
                | "--listmonitors"
                | "--listactivemonitors"
                | "--verbose"
                | "--prop"
                | "--current"
                | "--listproviders"
        )
    })
}

/// `dpkg` with a query action only.
fn dpkg_queries(args: &[Word]) -> bool {
    let actions = [
        "-l",
        "--list",
        "-L",
        "--listfiles",
        "-s",
        "--status",
        "-S",
        "--search",
        "-p",
        "--print-avail",
        "--get-selections",
        "--print-architecture",
        "--print-foreign-architectures",
        "-c",
        "--contents",
        "-I",
        "--info",
        "-W",
        "--show",
        "--version",
        "--help",
    ];
    args.first()
        .is_some_and(|w| actions.contains(&w.text.as_str()))
}

/// `find` without the primaries that run commands or write.
fn find_reads(args: &[Word]) -> bool {
    !args.iter().any(|w| {
        matches!(
            w.text.as_str(),
            "-exec"
                | "-execdir"
                | "-ok"
                | "-okdir"
                | "-delete"
                | "-fprint"
                | "-fprint0"
                | "-fprintf"
                | "-fls"
        )
    })
}

/// `sed` whose script neither runs nor writes anything (and no `-i`, no script file).
fn sed_reads(args: &[Word]) -> bool {
    let mut probe = super::wrappers::Unwrapped::default();
    sed::analyse(args, &mut probe);
    probe.scripts.is_empty()
        && probe.opaque.is_empty()
        && probe
            .targets
            .iter()
            .all(|t| t.action == super::rule::Action::Read)
}

/// `awk` whose program neither runs nor writes anything.
fn awk_reads(args: &[Word]) -> bool {
    let mut probe = super::wrappers::Unwrapped::default();
    awk::analyse("awk", args, &mut probe);
    probe.scripts.is_empty()
        && probe.opaque.is_empty()
        && probe
            .targets
            .iter()
            .all(|t| t.action == super::rule::Action::Read)
}

/// `env` that prints the environment or runs a command (judged as its own layer), without
/// `-S` (a command line in one string, judged as a script).
fn env_reads(args: &[Word]) -> bool {
    !args
        .iter()
        .any(|w| w.text.starts_with("-S") || w.text.starts_with("--split-string"))
}

/// Read-only `git` subcommands, and forms of the ones that can also change things.
const GIT_READS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "cat-file",
    "blame",
    "annotate",
    "describe",
    "shortlog",
    "grep",
    "show-ref",
    "count-objects",
    "whatchanged",
    "rev-list",
    "name-rev",
    "merge-base",
    "for-each-ref",
    "var",
    "version",
    "diff-tree",
    "diff-files",
    "diff-index",
    "check-ignore",
    "check-attr",
    "cherry",
    "range-diff",
    "show-branch",
    "branch",
    "tag",
    "remote",
    "config",
    "stash",
    "reflog",
    "worktree",
    "submodule",
];

/// `git` with a read-only subcommand and no option that runs a program or writes.
fn git_reads(args: &[Word]) -> bool {
    let mut probe = super::wrappers::Unwrapped::default();
    super::git::analyse(args, &mut probe);
    if !(probe.scripts.is_empty()
        && probe.commands.is_empty()
        && probe.opaque.is_empty()
        && probe.targets.is_empty())
    {
        return false;
    }
    let Some(i) = git_subcommand_index(args) else {
        return false;
    };
    let Some(sub) = args.get(i).map(|w| w.text.as_str()) else {
        return false;
    };
    let rest = &args[i + 1..];
    if !GIT_READS.contains(&sub) {
        return false;
    }
    git_subcommand_reads(sub, rest)
}

/// Where the subcommand sits after git's global options; `None` when a global option sets
/// configuration, a pager or the exec path (each can run a program).
fn git_subcommand_index(args: &[Word]) -> Option<usize> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            "-c" | "--config-env" | "-p" | "--paginate" => return None,
            t if t.starts_with("--exec-path") || t.starts_with("--config-env") => return None,
            t if t.starts_with('-') => i += 1,
            _ => break,
        }
    }
    Some(i)
}

/// Whether git's subcommand arguments `rest` run an external diff, a text conversion or a pager,
/// or write an output file.
fn runs_or_writes(rest: &[Word]) -> bool {
    rest.iter().any(|w| {
        matches!(
            w.text.as_str(),
            "--ext-diff" | "--textconv" | "--output" | "-O" | "--open-files-in-pager"
        ) || w.text.starts_with("-O")
            || w.text.starts_with("--output")
    })
}

/// Whether the arguments `rest` of the listed read-only subcommand `sub` only read: no external
/// diff, text conversion, output file or pager, and for the subcommands that also write (branch,
/// tag, remote, config, stash, reflog, worktree, submodule) only their listing forms.
fn git_subcommand_reads(sub: &str, rest: &[Word]) -> bool {
    let has = |names: &[&str]| rest.iter().any(|w| names.contains(&w.text.as_str()));
    let ops: Vec<&str> = rest
        .iter()
        .map(|w| w.text.as_str())
        .filter(|t| !t.starts_with('-'))
        .collect();
    if runs_or_writes(rest) {
        return false;
    }
    match sub {
        "branch" => {
            !has(&[
                "-d",
                "-D",
                "--delete",
                "-m",
                "-M",
                "--move",
                "-c",
                "-C",
                "--copy",
                "-u",
                "--set-upstream-to",
                "--unset-upstream",
                "--edit-description",
                "-f",
                "--force",
                "-t",
                "--track",
            ]) && (ops.is_empty()
                || has(&[
                    "-l",
                    "--list",
                    "--contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                ]))
        }
        "tag" => {
            !has(&[
                "-d",
                "--delete",
                "-a",
                "--annotate",
                "-s",
                "--sign",
                "-f",
                "--force",
                "-m",
                "-F",
                "-u",
                "-e",
            ]) && (ops.is_empty()
                || has(&[
                    "-l",
                    "--list",
                    "--contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "-n",
                ]))
        }
        "remote" => ops.is_empty() || matches!(ops[0], "show" | "get-url"),
        "config" => {
            has(&[
                "--get",
                "--get-all",
                "--get-regexp",
                "-l",
                "--list",
                "--get-urlmatch",
                "--get-color",
            ]) || matches!(ops.first(), Some(&"get" | &"list"))
                || (ops.len() == 1
                    && !has(&[
                        "--unset",
                        "--unset-all",
                        "--add",
                        "--replace-all",
                        "--remove-section",
                        "--rename-section",
                        "-e",
                        "--edit",
                    ]))
        }
        "stash" => matches!(ops.first(), Some(&"list" | &"show")),
        "reflog" => ops.is_empty() || matches!(ops[0], "show"),
        "worktree" => matches!(ops.first(), Some(&"list")),
        "submodule" => matches!(ops.first(), Some(&"status" | &"summary")),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split(' ').map(Word::literal).collect()
    }

    #[test]
    fn each_program_has_one_row() {
        let mut seen = std::collections::HashSet::new();
        for r in READ_ONLY {
            for n in r.names {
                assert!(seen.insert(*n), "{n} listed twice");
            }
        }
    }

    #[test]
    fn subcommands_options_and_operands_decide() {
        for yes in [
            "timedatectl list-timezones",
            "apt-get --version",
            "systemctl --user status x.service",
            "ip -br addr show",
            "nmcli device wifi list",
            "git -C repo log -p -3",
            "git branch -a",
            "git config --get user.name",
            "uniq in.txt",
            "mount",
            "date +%F",
        ] {
            assert!(is_read_only(&words(yes)), "{yes}");
        }
        for no in [
            "systemctl restart x",
            "ip link set eth0 down",
            "git branch -D old",
            "git tag v1",
            "git config user.name x",
            "git diff --output=x",
            "uniq in.txt out.txt",
            "mount -a",
            "date -s 2020-01-01",
            "less +!id f",
            "sed -i s/a/b/ f",
            "awk {system(\"id\")}",
            "find . -delete",
            "./ls --version",
        ] {
            assert!(!is_read_only(&words(no)), "{no}");
        }
    }
}
