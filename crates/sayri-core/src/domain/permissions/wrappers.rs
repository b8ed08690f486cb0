//! Wrapper programs: commands that run another command given in their arguments.
//!
//! `sudo dd …` runs `dd`; so do `env -i PATH=… dd`, `nice -n 10 dd`, `timeout 60 dd`,
//! `busybox dd`, `xargs dd`, `find … -exec dd {} \;` and many more. [`unwrap`] peels such
//! wrappers one by one (their options, option arguments and positional arguments are skipped per
//! program) and returns every layer, outermost first, so rules are judged against the wrapper
//! **and** the wrapped command. Programs that run a *script* (`bash -c`, `sh -c`, `eval`,
//! `su -c`, `flock -c`, `watch`, `env -S`, `find -exec` lists, here-strings fed to a shell) yield
//! that script text for recursive analysis; if the script is computed at run time the caller gets
//! `None` and treats it as not analysable. Interactive shells (`bash -i`, which load aliases and
//! rc files), `source`/`.` of files and heredoc-fed interpreters are reported as opaque.
//!
//! An unknown wrapper is simply an unknown program: the default applies to it, and the rules
//! that match its own text still apply — adding it never makes a decision weaker than judging
//! its own command line.

use super::shell::{Assignment, Stdin, Word, base_name};

/// `git -c` settings (prefixes, lower case) that make git run a command or load code.
const GIT_EXEC_SETTINGS: &[&str] = &[
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.fsmonitor",
    "core.hookspath",
    "core.gitproxy",
    "core.askpass",
    "alias.",
    "diff.external",
    "credential.helper",
    "gpg.program",
    "sequence.editor",
    "pager.",
    "filter.",
    "uploadpack.",
    "protocol.",
    "init.templatedir",
    "include.",
    "includeif.",
    "merge.",
    "diff.",
    "remote.",
    "url.",
];

/// Limit on wrapper layers peeled from one command.
const MAX_LAYERS: usize = 16;

/// A script found in a command's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The script text when it is literal; `None` when computed at run time.
    pub text: Option<String>,
    /// What runs it (`bash -c`, `eval`, …), for messages.
    pub via: String,
    /// The words that carried it (their substitutions are known via [`Word::inner`]).
    pub carriers: Vec<Word>,
}

/// The result of peeling wrappers off one simple command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unwrapped {
    /// Layers, outermost first; `layers[0]` is the command as written (without assignments).
    pub layers: Vec<Vec<Word>>,
    /// `NAME=value` given to `env`, `sudo`, … (they act like leading assignments).
    pub assignments: Vec<Assignment>,
    /// Scripts to analyse recursively.
    pub scripts: Vec<Script>,
    /// Reasons why this command cannot be analysed statically.
    pub opaque: Vec<String>,
}

/// Where an interpreter takes its program from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgramSource {
    /// Not a shell or interpreter.
    NotInterpreter,
    /// From standard input (`sh`, `bash -s`, `python3 -`, `sh /dev/stdin`).
    Stdin,
    /// From an argument (`sh -c …`, `python3 -c …`, `perl -e …`, `python3 -m mod`).
    Inline,
    /// From a file argument (which may be a process substitution).
    File(Word),
}

/// Whether `name` is a POSIX-like shell.
pub fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "mksh"
            | "ash"
            | "fish"
            | "yash"
            | "posh"
            | "rbash"
    )
}

/// Whether `name` is a shell or a script interpreter.
pub fn is_interpreter(name: &str) -> bool {
    is_shell(name)
        || name.starts_with("python")
        || name.starts_with("perl")
        || name.starts_with("ruby")
        || name.starts_with("php")
        || name.starts_with("lua")
        || matches!(
            name,
            "node" | "nodejs" | "tclsh" | "wish" | "Rscript" | "pypy" | "pypy3"
        )
}

fn is_stdin_path(text: &str) -> bool {
    matches!(text, "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
}

/// Skips options. Returns the index of the first positional argument (after a `--`) and the
/// options seen as `(name, value)`; names are `-x` for short and `--name` for long options.
fn skip_options(
    args: &[Word],
    short_with_arg: &str,
    long_with_arg: &[&str],
) -> (usize, Vec<(String, Option<String>)>) {
    let mut seen = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            return (i + 1, seen);
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if value.is_none() && long_with_arg.contains(&name) {
                seen.push((format!("--{name}"), args.get(i + 1).map(|w| w.text.clone())));
                i += 2;
            } else {
                seen.push((format!("--{name}"), value));
                i += 1;
            }
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let body: Vec<char> = a[1..].chars().collect();
            let mut consumed_next = false;
            for (k, ch) in body.iter().enumerate() {
                if short_with_arg.contains(*ch) {
                    let rest: String = body[k + 1..].iter().collect();
                    if rest.is_empty() {
                        seen.push((format!("-{ch}"), args.get(i + 1).map(|w| w.text.clone())));
                        consumed_next = true;
                    } else {
                        seen.push((format!("-{ch}"), Some(rest)));
                    }
                    break;
                }
                seen.push((format!("-{ch}"), None));
            }
            i += if consumed_next { 2 } else { 1 };
            continue;
        }
        return (i, seen);
    }
    (i, seen)
}

/// For programs whose options may follow positional arguments (GNU `getopt` permutation):
/// the value of `-X VALUE`, `-…X VALUE`, `-XVALUE`, `--long VALUE` or `--long=VALUE` anywhere in
/// `args` before a `--`. Assumes the other short options in a cluster take no value.
fn permuted_option_value(args: &[Word], short: char, long: Option<&str>) -> Option<Word> {
    let mut k = 0;
    while k < args.len() {
        let t = args[k].text.as_str();
        if t == "--" {
            return None;
        }
        if let Some(rest) = t.strip_prefix("--") {
            let Some(long) = long else {
                k += 1;
                continue;
            };
            if rest == long {
                return args.get(k + 1).cloned();
            }
            if let Some(v) = rest.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
                return Some(Word {
                    text: v.to_string(),
                    ..args[k].clone()
                });
            }
        } else if let Some(cluster) = t.strip_prefix('-')
            && let Some(pos) = cluster.find(short)
        {
            let attached = &cluster[pos + short.len_utf8()..];
            if attached.is_empty() {
                return args.get(k + 1).cloned();
            }
            return Some(Word {
                text: attached.to_string(),
                ..args[k].clone()
            });
        }
        k += 1;
    }
    None
}

fn has(seen: &[(String, Option<String>)], names: &[&str]) -> bool {
    seen.iter().any(|(n, _)| names.contains(&n.as_str()))
}

fn value_of<'a>(seen: &'a [(String, Option<String>)], names: &[&str]) -> Option<&'a str> {
    seen.iter()
        .rev()
        .find(|(n, _)| names.contains(&n.as_str()))
        .and_then(|(_, v)| v.as_deref())
}

/// Leading `NAME=value` words (as `env` and `sudo` accept them).
fn take_assignments(args: &[Word], out: &mut Vec<Assignment>) -> usize {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.split_once('=') {
            Some((name, value))
                if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                out.push(Assignment {
                    name: name.to_string(),
                    value: Word {
                        text: value.to_string(),
                        ..w.clone()
                    },
                });
                i += 1;
            }
            _ => break,
        }
    }
    i
}

/// Joins words back into shell text that re-parses to the same words: literal words are
/// single-quoted, dynamic words keep their source text.
pub fn shell_join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| {
            if w.dynamic {
                w.raw.clone()
            } else {
                format!("'{}'", w.text.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn script_from(words: &[Word], via: &str) -> Script {
    let text = if words.iter().any(|w| w.dynamic) {
        None
    } else {
        Some(
            words
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    };
    Script {
        text,
        via: via.to_string(),
        carriers: words.to_vec(),
    }
}

enum Step {
    /// The wrapped command starts at this index of the arguments.
    Inner(usize),
    /// The wrapped command, with words adjusted (e.g. `xargs -I` placeholders made dynamic).
    InnerWords(Vec<Word>),
    /// Stop: nothing (more) is wrapped.
    Done,
}

/// Peels wrappers off `words` (command word first). `stdin` is the command's input source, used
/// for shells fed by a here-string or heredoc.
pub fn unwrap(words: &[Word], stdin: &Stdin) -> Unwrapped {
    let mut out = Unwrapped {
        layers: vec![words.to_vec()],
        ..Unwrapped::default()
    };
    let mut current = words.to_vec();
    for _ in 0..MAX_LAYERS {
        let Some(first) = current.first() else { break };
        if first.dynamic {
            break;
        }
        let name = base_name(&first.text);
        let args = &current[1..];
        let step = step(&name, args, stdin, &mut out);
        match step {
            Step::Inner(start) if start < args.len() => {
                let inner = args[start..].to_vec();
                out.layers.push(inner.clone());
                current = inner;
            }
            Step::InnerWords(inner) if !inner.is_empty() => {
                out.layers.push(inner.clone());
                current = inner;
            }
            _ => break,
        }
    }
    out
}

fn step(name: &str, args: &[Word], stdin: &Stdin, out: &mut Unwrapped) -> Step {
    let after_options = |short: &str, long: &[&str]| skip_options(args, short, long);
    match name {
        "sudo" | "sudoedit" => {
            let (i, seen) = after_options(
                "ughCDpTrtUR",
                &[
                    "user",
                    "group",
                    "chdir",
                    "chroot",
                    "prompt",
                    "role",
                    "type",
                    "other-user",
                    "close-from",
                    "command-timeout",
                    "host",
                ],
            );
            if name == "sudoedit" || has(&seen, &["-e", "--edit", "-l", "--list", "-v", "-k", "-K"])
            {
                return Step::Done;
            }
            Step::Inner(i + take_assignments(&args[i.min(args.len())..], &mut out.assignments))
        }
        "doas" => Step::Inner(after_options("uC", &[]).0),
        "pkexec" => Step::Inner(after_options("", &["user"]).0),
        "run0" => Step::Inner(
            after_options(
                "ugDp",
                &[
                    "user",
                    "group",
                    "nice",
                    "chdir",
                    "setenv",
                    "unit",
                    "property",
                    "description",
                    "slice",
                    "machine",
                    "background",
                ],
            )
            .0,
        ),
        "env" => {
            let (i, seen) = after_options(
                "uCSPa",
                &[
                    "unset",
                    "chdir",
                    "split-string",
                    "argv0",
                    // `--default-signal`, `--ignore-signal` and `--block-signal` take their
                    // signal list only as `=SIG`; the next word is the program.
                ],
            );
            let i = i.min(args.len());
            let n = take_assignments(&args[i..], &mut out.assignments);
            if let Some(split) = value_of(&seen, &["-S", "--split-string"]) {
                let mut carriers = vec![Word::literal(split)];
                carriers.extend(args[i + n..].iter().cloned());
                out.scripts.push(script_from(&carriers, "env -S"));
                return Step::Done;
            }
            Step::Inner(i + n)
        }
        "nice" => Step::Inner(after_options("n", &["adjustment"]).0),
        "ionice" => {
            let (i, seen) = after_options("cnpPu", &["class", "classdata", "pid", "pgid", "uid"]);
            if has(&seen, &["-p", "-P", "-u", "--pid", "--pgid", "--uid"]) {
                return Step::Done;
            }
            Step::Inner(i)
        }
        "timeout" | "gtimeout" => Step::Inner(after_options("sk", &["signal", "kill-after"]).0 + 1),
        "nohup" | "setsid" | "builtin" | "unbuffer" | "fakeroot" | "catchsegv" | "torsocks"
        | "caffeinate" => Step::Inner(after_options("", &[]).0),
        "stdbuf" => Step::Inner(after_options("ioe", &["input", "output", "error"]).0),
        "time" => Step::Inner(after_options("fo", &["format", "output"]).0),
        "command" => {
            let (i, seen) = after_options("", &[]);
            if has(&seen, &["-v", "-V"]) {
                return Step::Done;
            }
            Step::Inner(i)
        }
        "exec" => Step::Inner(after_options("a", &[]).0),
        // `coproc cmd args` runs `cmd` in the background (the grammar has no coproc node).
        "coproc" => Step::Inner(0),
        "busybox" | "toybox" => match args.first() {
            Some(w) if !w.text.starts_with('-') => Step::Inner(0),
            _ => Step::Done,
        },
        "xargs" => {
            let (i, seen) = after_options(
                "EILnPsda",
                &[
                    "arg-file",
                    "delimiter",
                    // `--eof` takes its string only as `--eof=STR`.
                    "max-args",
                    "max-procs",
                    "max-chars",
                    "process-slot-var",
                ],
            );
            // With a replace string, words containing it are filled from input at run time
            // (`xargs -I{} sh -c '{}'` runs whatever the input says).
            let replace = value_of(&seen, &["-I"]).map(String::from).or_else(|| {
                seen.iter()
                    .find(|(n, _)| n == "-i" || n == "--replace")
                    .map(|(_, v)| {
                        v.clone()
                            .filter(|v| !v.is_empty())
                            .unwrap_or_else(|| "{}".into())
                    })
            });
            match replace {
                Some(r) if !r.is_empty() => Step::InnerWords(
                    args[i.min(args.len())..]
                        .iter()
                        .map(|w| Word {
                            dynamic: w.dynamic || w.text.contains(r.as_str()),
                            ..w.clone()
                        })
                        .collect(),
                ),
                _ => Step::Inner(i),
            }
        }
        "find" => {
            find_exec(args, out);
            Step::Done
        }
        "flock" => {
            let (i, seen) =
                after_options("wEc", &["wait", "timeout", "conflict-exit-code", "command"]);
            if let Some(cmd) = seen
                .iter()
                .rev()
                .find(|(n, _)| n == "-c" || n == "--command")
            {
                // `flock -c CMD FILE` is unusual but legal; the command string is what runs.
                let carrier = args
                    .iter()
                    .find(|w| Some(&w.text) == cmd.1.as_ref())
                    .cloned()
                    .unwrap_or_else(|| Word::literal(cmd.1.as_deref().unwrap_or("")));
                out.scripts.push(script_from(&[carrier], "flock -c"));
                return Step::Done;
            }
            let rest = &args[(i + 1).min(args.len())..];
            if let Some(first) = rest.first()
                && (first.text == "-c" || first.text == "--command")
            {
                if let Some(script) = rest.get(1) {
                    out.scripts
                        .push(script_from(std::slice::from_ref(script), "flock -c"));
                }
                return Step::Done;
            }
            Step::Inner(i + 1)
        }
        "chrt" => {
            let (i, seen) =
                after_options("TPD", &["sched-runtime", "sched-period", "sched-deadline"]);
            if has(&seen, &["-p", "--pid", "-m", "--max"]) {
                return Step::Done;
            }
            Step::Inner(i + 1)
        }
        "taskset" => {
            let (i, seen) = after_options("", &[]);
            if has(&seen, &["-p", "--pid"]) {
                return Step::Done;
            }
            Step::Inner(i + 1)
        }
        "systemd-run" => {
            let (i, seen) = after_options(
                "upEMH",
                &[
                    "unit",
                    "property",
                    "description",
                    "slice",
                    "setenv",
                    "machine",
                    "host",
                    "uid",
                    "gid",
                    "nice",
                    "working-directory",
                    "on-active",
                    "on-boot",
                    "on-startup",
                    "on-unit-active",
                    "on-unit-inactive",
                    "on-calendar",
                    "on-clock-change",
                    "on-timezone-change",
                    "path-property",
                    "socket-property",
                    "timer-property",
                    "service-type",
                    "json",
                ],
            );
            if has(&seen, &["-S", "--shell"]) {
                out.opaque
                    .push("`systemd-run --shell` starts an interactive shell".into());
                return Step::Done;
            }
            Step::Inner(i)
        }
        "watch" => {
            let (i, seen) = after_options("nq", &["interval", "equexit"]);
            let rest = &args[i.min(args.len())..];
            if has(&seen, &["-x", "--exec"]) {
                return Step::Inner(i);
            }
            if !rest.is_empty() {
                out.scripts.push(script_from(rest, "watch"));
            }
            Step::Done
        }
        "su" | "runuser" => {
            let (i, seen) = after_options(
                "cgGswu",
                &[
                    "command",
                    "shell",
                    "group",
                    "supp-group",
                    "whitelist-environment",
                    "user",
                ],
            );
            if let Some(cmd) = value_of(&seen, &["-c", "--command"]) {
                let carrier = args
                    .iter()
                    .find(|w| w.text == cmd)
                    .cloned()
                    .unwrap_or_else(|| Word::literal(cmd));
                out.scripts.push(script_from(&[carrier], name));
                return Step::Done;
            }
            // GNU option parsing also takes `-c` after the user name (`su root -c CMD`).
            if let Some(carrier) =
                permuted_option_value(&args[i.min(args.len())..], 'c', Some("command"))
            {
                out.scripts.push(script_from(&[carrier], name));
                return Step::Done;
            }
            if name == "runuser" && has(&seen, &["-u", "--user"]) {
                return Step::Inner(i);
            }
            Step::Done
        }
        "script" => {
            let (_, seen) = after_options(
                "cEIOT",
                &[
                    "command",
                    "echo",
                    "log-in",
                    "log-out",
                    "log-timing",
                    "logging-format",
                ],
            );
            if let Some(cmd) = value_of(&seen, &["-c", "--command"]) {
                let carrier = args
                    .iter()
                    .find(|w| w.text == cmd)
                    .cloned()
                    .unwrap_or_else(|| Word::literal(cmd));
                out.scripts.push(script_from(&[carrier], "script -c"));
            } else if let Some(carrier) = permuted_option_value(args, 'c', Some("command")) {
                // GNU option parsing also takes `-c` after the log file (`script LOG -c CMD`).
                out.scripts.push(script_from(&[carrier], "script -c"));
            }
            Step::Done
        }
        "chroot" => Step::Inner(after_options("", &["userspec", "groups"]).0 + 1),
        "unshare" => Step::Inner(
            after_options(
                "RwSG",
                &[
                    "root",
                    "wd",
                    "setuid",
                    "setgid",
                    "propagation",
                    "setgroups",
                    "map-user",
                    "map-group",
                    "map-users",
                    "map-groups",
                    "monotonic",
                    "boottime",
                ],
            )
            .0,
        ),
        // `-r`/`--root` and `-w`/`--wd` take their directory only when attached.
        "nsenter" => Step::Inner(after_options("tSG", &["target", "setuid", "setgid"]).0),
        "setpriv" => Step::Inner(
            after_options(
                "",
                &[
                    "reuid",
                    "regid",
                    "ruid",
                    "rgid",
                    "euid",
                    "egid",
                    "groups",
                    "inh-caps",
                    "ambient-caps",
                    "bounding-set",
                    "securebits",
                    "pdeathsig",
                    "selinux-label",
                    "apparmor-profile",
                    "landlock-access",
                    "landlock-rule",
                ],
            )
            .0,
        ),
        "prlimit" => Step::Inner(after_options("p", &["pid"]).0),
        "strace" | "ltrace" => {
            let (i, seen) = after_options("eoOpPsuEISXbnA", &[]);
            if has(&seen, &["-p"]) {
                return Step::Done;
            }
            Step::Inner(i)
        }
        "proxychains" | "proxychains4" => Step::Inner(after_options("f", &[]).0),
        "firejail" => Step::Inner(after_options("", &[]).0),
        "eval" => {
            if !args.is_empty() {
                out.scripts.push(script_from(args, "eval"));
            }
            Step::Done
        }
        "trap" => {
            // `trap 'CMD' SIGNAL…` runs CMD later.
            let (i, seen) = after_options("", &[]);
            if !has(&seen, &["-p", "-l"])
                && let Some(action) = args.get(i)
                && args.len() > i + 1
                && action.text != "-"
            {
                out.scripts
                    .push(script_from(std::slice::from_ref(action), "trap"));
            }
            Step::Done
        }
        // Builtins that run a command string later: `mapfile -C CALLBACK` (for every few
        // lines read), `compgen -C CMD` / `complete -C CMD` (to produce completions).
        "mapfile" | "readarray" | "compgen" | "complete" => {
            if let Some(carrier) = permuted_option_value(args, 'C', None) {
                let via = format!("{name} -C");
                out.scripts.push(script_from(&[carrier], &via));
            }
            Step::Done
        }
        // `fc` without `-l` re-runs commands from the history, which the text does not show.
        "fc" if !args
            .iter()
            .any(|w| w.text.starts_with('-') && w.text.contains('l')) =>
        {
            out.opaque
                .push("`fc` runs commands from the shell history".into());
            Step::Done
        }
        "bind"
            if args
                .iter()
                .any(|w| w.text.starts_with('-') && w.text.contains('x')) =>
        {
            out.opaque.push("`bind -x` binds a key to a command".into());
            Step::Done
        }
        "alias" => {
            for w in args {
                if let Some((_, body)) = w.text.split_once('=') {
                    out.opaque.push(
                        "`alias` defines a command whose later uses cannot be tracked".into(),
                    );
                    let carrier = Word {
                        text: body.to_string(),
                        ..w.clone()
                    };
                    out.scripts.push(script_from(&[carrier], "alias"));
                }
            }
            Step::Done
        }
        "hash" if args.iter().any(|w| w.text.starts_with("-p")) => {
            out.opaque
                .push("`hash -p` makes a command name run another file".into());
            Step::Done
        }
        "enable" if args.iter().any(|w| w.text.starts_with("-f")) => {
            out.opaque
                .push("`enable -f` loads a builtin from a shared library".into());
            Step::Done
        }
        "shopt" if args.iter().any(|w| w.text == "expand_aliases") => {
            out.opaque
                .push("`shopt expand_aliases` makes later aliases run".into());
            Step::Done
        }
        "git" => {
            for (k, w) in args.iter().enumerate() {
                let setting = match w.text.as_str() {
                    "-c" => args.get(k + 1).map(|v| v.text.to_ascii_lowercase()),
                    t if t.starts_with("--config-env") => Some(t.to_ascii_lowercase()),
                    _ => None,
                };
                if let Some(setting) = setting
                    && GIT_EXEC_SETTINGS
                        .iter()
                        .any(|p| setting.trim_start_matches("--config-env=").starts_with(p))
                {
                    out.opaque.push(format!(
                        "`git -c {setting}` can make git run another command"
                    ));
                }
            }
            Step::Done
        }
        "source" | "." => {
            out.opaque.push(format!(
                "`{name}` runs the commands of a file whose contents are not known here"
            ));
            Step::Done
        }
        _ if is_shell(name) => {
            shell_invocation(name, args, stdin, out);
            Step::Done
        }
        _ if is_interpreter(name) => {
            if matches!(stdin, Stdin::Heredoc { .. })
                && program_source(name, args) == ProgramSource::Stdin
            {
                out.opaque
                    .push(format!("`{name}` runs a program fed by a heredoc"));
            }
            Step::Done
        }
        _ => Step::Done,
    }
}

fn shell_invocation(name: &str, args: &[Word], stdin: &Stdin, out: &mut Unwrapped) {
    let (i, seen) = skip_options(args, "oO", &["rcfile", "init-file"]);
    let interactive = seen.iter().any(|(n, _)| n == "-i" || n == "--interactive");
    if interactive {
        out.opaque.push(format!(
            "`{name} -i` starts an interactive shell whose aliases and rc files cannot be analysed"
        ));
    }
    if seen.iter().any(|(n, _)| n == "-c") {
        match args.get(i) {
            Some(script) => out.scripts.push(script_from(
                std::slice::from_ref(script),
                &format!("{name} -c"),
            )),
            None => out.opaque.push(format!("`{name} -c` without a script")),
        }
        return;
    }
    match program_source(name, args) {
        ProgramSource::Stdin => match stdin {
            Stdin::HereString(word) => out.scripts.push(script_from(
                std::slice::from_ref(word),
                &format!("{name} <<<"),
            )),
            Stdin::Heredoc { body, literal } => {
                out.opaque
                    .push(format!("`{name}` runs a script fed by a heredoc"));
                if *literal {
                    out.scripts.push(Script {
                        text: Some(body.clone()),
                        via: format!("{name} <<"),
                        carriers: Vec::new(),
                    });
                }
            }
            _ => {}
        },
        ProgramSource::File(word) if word.process_substitution => {
            out.opaque.push(format!(
                "`{name}` runs a script produced by a process substitution"
            ));
        }
        _ => {}
    }
}

/// Where the shell or interpreter `name` takes its program from, given its arguments.
pub fn program_source(name: &str, args: &[Word]) -> ProgramSource {
    let (short, long, inline): (&str, &[&str], &[&str]) = if is_shell(name) {
        ("oO", &["rcfile", "init-file"], &["-c"])
    } else if name.starts_with("python") || name.starts_with("pypy") {
        ("WXQ", &[], &["-c", "-m"])
    } else if name.starts_with("perl") {
        ("", &[], &["-e", "-E"])
    } else if name.starts_with("ruby") {
        ("rIC", &[], &["-e"])
    } else if matches!(name, "node" | "nodejs") {
        (
            "r",
            &["require", "import", "loader"],
            &["-e", "-p", "--eval", "--print"],
        )
    } else if name.starts_with("php") {
        ("fdc", &[], &["-r"])
    } else if name.starts_with("lua") {
        ("l", &[], &["-e"])
    } else if is_interpreter(name) {
        ("", &[], &["-e", "-c"])
    } else {
        return ProgramSource::NotInterpreter;
    };
    let (i, seen) = skip_options(args, short, long);
    if seen.iter().any(|(n, _)| inline.contains(&n.as_str())) {
        return ProgramSource::Inline;
    }
    if name.starts_with("php")
        && let Some(file) = value_of(&seen, &["-f"])
    {
        return if is_stdin_path(file) {
            ProgramSource::Stdin
        } else {
            ProgramSource::File(Word::literal(file))
        };
    }
    if is_shell(name) && seen.iter().any(|(n, _)| n == "-s") {
        return ProgramSource::Stdin;
    }
    // `python3 -` and `sh -` read the program from stdin; `skip_options` stops before `-`.
    match args.get(i) {
        Some(w) if is_stdin_path(&w.text) => ProgramSource::Stdin,
        Some(w) => ProgramSource::File(w.clone()),
        None => {
            // A lone `-` is consumed as an option by `skip_options` only if longer than 1 char,
            // so reaching here means no program argument at all.
            ProgramSource::Stdin
        }
    }
}

/// `find … -exec CMD… ;` / `-execdir` / `-ok` / `-okdir`: each command list becomes a script.
fn find_exec(args: &[Word], out: &mut Unwrapped) {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if matches!(a, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && args[end].text != ";" && args[end].text != "+" {
                end += 1;
            }
            if end > start {
                let words = &args[start..end];
                out.scripts.push(Script {
                    text: Some(shell_join(words)),
                    via: format!("find {a}"),
                    carriers: words.to_vec(),
                });
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
}
