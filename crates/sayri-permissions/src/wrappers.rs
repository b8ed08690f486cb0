//! Wrapper programs: commands that run another command given in their arguments.
//!
//! `sudo dd …` runs `dd`; so do `env -i PATH=… dd`, `nice -n 10 dd`, `timeout 60 dd`,
//! `busybox dd`, `xargs dd` and many more. [`unwrap`] peels such
//! wrappers one by one and returns every layer, outermost first, so rules are judged against the
//! wrapper **and** the wrapped command. Most wrappers are one row of a table (`WRAPPERS`): their
//! names, which of their options take an argument, the options with which they run no command,
//! and how many operands come before the command; options are read by the one option reader,
//! [`super::options`]. Only the wrappers that carry a script or reshape the command have code of
//! their own. Programs that run a *script* (`bash -c`, `sh -c`, `eval`,
//! `su -c`, `flock -c`, `watch`, `env -S`, here-strings fed to a shell) yield
//! that script text for recursive analysis; if the script is computed at run time the caller gets
//! `None` and treats it as not analysable. Interactive shells (`bash -i`, which load aliases and
//! rc files), `source`/`.` of files and heredoc-fed interpreters are reported as opaque.
//! Programs that run commands or write files named in their own arguments (`find -exec`, `sed`,
//! `awk`, `git -c`, …) are read by [`super::arg_programs`], which reports into the same
//! [`Unwrapped`].
//!
//! An unknown wrapper is simply an unknown program: the default applies to it, and the rules
//! that match its own text still apply — adding it never makes a decision weaker than judging
//! its own command line.

use super::arg_programs;
use super::options::{Order, Parsed, Spec, parse};
use super::rule::Action;
use super::shell::{Assignment, Stdin, Word, base_name};

/// Limit on wrapper layers peeled from one command.
const MAX_LAYERS: usize = 16;

/// A script found in a command's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// The script text when it is literal; `None` when computed at run time.
    pub text: Option<String>,
    /// What runs it (`bash -c`, `eval`, …), for messages.
    pub via: String,
    /// The words that carried it (their substitutions are known via [`Word::inner`]).
    pub carriers: Vec<Word>,
    /// Strings in the text that the running program replaces with run-time values before the
    /// shell sees it (`{}` of `parallel`); words containing one are judged as run-time values.
    pub placeholders: Vec<String>,
}

impl Script {
    /// A literal script run by `via`.
    pub fn literal(text: &str, via: &str) -> Script {
        Script {
            text: Some(text.to_string()),
            via: via.to_string(),
            ..Script::default()
        }
    }
}

/// A command found in another command's arguments and given there as separate words
/// (`find … -exec rm {} ;`, `git bisect run make test`). It is judged as a simple command of
/// its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedCommand {
    /// Its words; those the outer program fills in at run time (`{}`) are dynamic.
    pub words: Vec<Word>,
    /// What runs it (`find -exec`), for messages.
    pub via: String,
}

/// A file an argument names for reading or writing (`sed -i FILE`, `sed 'w FILE'`,
/// `awk '{print > "FILE"}'`, `find DIR -delete`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgTarget {
    /// [`Action::Read`] or [`Action::Write`].
    pub action: Action,
    /// The path (a word, so run-time parts stay known as such).
    pub word: Word,
    /// What reads or writes it (`sed w`), for messages.
    pub via: String,
}

impl ArgTarget {
    /// A literal path.
    pub fn new(action: Action, path: &str, via: &str) -> ArgTarget {
        ArgTarget::from_word(action, &Word::literal(path), via)
    }

    /// A path given by a word of the command.
    pub fn from_word(action: Action, word: &Word, via: &str) -> ArgTarget {
        ArgTarget {
            action,
            word: word.clone(),
            via: via.to_string(),
        }
    }
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
    /// Commands given as words in the arguments, judged as simple commands of their own.
    pub commands: Vec<NestedCommand>,
    /// Files named by the arguments of programs that read or write what their arguments say.
    pub targets: Vec<ArgTarget>,
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

/// The script a program hands to the shell when it joins `words` with spaces; `None` text when
/// a word is computed at run time.
pub(super) fn script_from(words: &[Word], via: &str) -> Script {
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
        placeholders: Vec::new(),
    }
}

/// What one wrapper layer wraps.
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
        let args = &current[1..];
        match step(base_name(&first.text), args, stdin, &mut out) {
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

/// A program that runs the command given after its own options (and, for some, a fixed number
/// of other arguments). Wrappers that carry a script, or need more than this, have their own
/// arm in [`step`].
struct Wrapper {
    /// Program names.
    names: &'static [&'static str],
    /// Its options: which take an argument. The first operand ends them.
    options: Spec<'static>,
    /// Options with which it runs no command (`sudo -l` lists, `ionice -p PID` changes a
    /// running process, `command -v` looks a name up).
    no_command: &'static [&'static str],
    /// Operands between the options and the command (`timeout DURATION`, `chroot DIR`).
    skip: usize,
    /// Takes `NAME=value` words before the command (they set the command's environment).
    assignments: bool,
}

const fn wrapper(names: &'static [&'static str], options: Spec<'static>) -> Wrapper {
    Wrapper {
        names,
        options,
        no_command: &[],
        skip: 0,
        assignments: false,
    }
}

const fn spec(
    short_with_arg: &'static str,
    long_with_arg: &'static [&'static str],
) -> Spec<'static> {
    Spec::new(short_with_arg, long_with_arg)
}

/// The plain wrappers.
const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        no_command: &["-e", "--edit", "-l", "--list", "-v", "-k", "-K"],
        assignments: true,
        ..wrapper(
            &["sudo"],
            spec(
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
            ),
        )
    },
    wrapper(&["doas"], spec("uC", &[])),
    wrapper(&["pkexec"], spec("", &["user"])),
    wrapper(
        &["run0"],
        spec(
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
        ),
    ),
    wrapper(&["nice"], spec("n", &["adjustment"])),
    Wrapper {
        no_command: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
        ..wrapper(
            &["ionice"],
            spec("cnpPu", &["class", "classdata", "pid", "pgid", "uid"]),
        )
    },
    Wrapper {
        skip: 1,
        ..wrapper(
            &["timeout", "gtimeout"],
            spec("sk", &["signal", "kill-after"]),
        )
    },
    wrapper(
        &[
            "nohup",
            "setsid",
            "builtin",
            "unbuffer",
            "fakeroot",
            "catchsegv",
            "torsocks",
            "caffeinate",
            "firejail",
        ],
        Spec::NONE,
    ),
    wrapper(&["stdbuf"], spec("ioe", &["input", "output", "error"])),
    wrapper(&["time"], spec("fo", &["format", "output"])),
    Wrapper {
        no_command: &["-v", "-V"],
        ..wrapper(&["command"], Spec::NONE)
    },
    wrapper(&["exec"], spec("a", &[])),
    Wrapper {
        no_command: &["-p", "--pid", "-m", "--max"],
        skip: 1,
        ..wrapper(
            &["chrt"],
            spec("TPD", &["sched-runtime", "sched-period", "sched-deadline"]),
        )
    },
    Wrapper {
        no_command: &["-p", "--pid"],
        skip: 1,
        ..wrapper(&["taskset"], Spec::NONE)
    },
    Wrapper {
        skip: 1,
        ..wrapper(&["chroot"], spec("", &["userspec", "groups"]))
    },
    wrapper(
        &["unshare"],
        spec(
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
        ),
    ),
    // `-r`/`--root` and `-w`/`--wd` take their directory only when attached.
    wrapper(&["nsenter"], spec("tSG", &["target", "setuid", "setgid"])),
    wrapper(
        &["setpriv"],
        spec(
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
        ),
    ),
    wrapper(&["prlimit"], spec("p", &["pid"])),
    Wrapper {
        no_command: &["-p"],
        ..wrapper(&["strace", "ltrace"], spec("eoOpPsuEISXbnA", &[]))
    },
    wrapper(&["proxychains", "proxychains4"], spec("f", &[])),
];

/// `env`'s options; `-S` splits its argument into a command line (a script).
const ENV: Spec<'static> = spec(
    "uCSPa",
    &[
        "unset",
        "chdir",
        "split-string",
        "argv0",
        // `--default-signal`, `--ignore-signal` and `--block-signal` take their signal list
        // only as `=SIG`; the next word is the program.
    ],
);

const XARGS: Spec<'static> = spec(
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

const FLOCK: Spec<'static> = spec("wEc", &["wait", "timeout", "conflict-exit-code", "command"]);

const SYSTEMD_RUN: Spec<'static> = spec(
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

const WATCH: Spec<'static> = spec("nq", &["interval", "equexit"]);

const SU: Spec<'static> = spec(
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

const SCRIPT: Spec<'static> = spec(
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

/// `mapfile`/`readarray` and `compgen`/`complete`: options that take an argument.
const MAPFILE: Spec<'static> = spec("dnOsuCc", &[]);
const COMPLETE: Spec<'static> = spec("AGWFCXPSo", &[]);

/// Options of the shells (`-o OPTION`, `--rcfile FILE`).
const SHELL: Spec<'static> = spec("oO", &["rcfile", "init-file"]);

/// One wrapper layer: what `name` (with `args`) wraps, recording scripts it carries and what
/// makes it impossible to analyse in `out`.
fn step(name: &str, args: &[Word], stdin: &Stdin, out: &mut Unwrapped) -> Step {
    if let Some(w) = WRAPPERS.iter().find(|w| w.names.contains(&name)) {
        return plain_wrapper(w, args, out);
    }
    if let Some(program) = arg_programs::lookup(name) {
        program.analyse(name, args, out);
        return Step::Done;
    }
    match name {
        // `coproc cmd args` runs `cmd` in the background (the grammar has no coproc node).
        "coproc" => Step::Inner(0),
        // `busybox dd …` runs its applet; with an option first it runs none.
        "busybox" | "toybox" => match args.first() {
            Some(w) if !w.text.starts_with('-') => Step::Inner(0),
            _ => Step::Done,
        },
        "env" => env(args, out),
        "xargs" => xargs(args),
        "flock" => flock(args, out),
        "systemd-run" => {
            let p = parse(args, SYSTEMD_RUN, Order::InOrder);
            if p.has(&["-S", "--shell"]) {
                out.opaque
                    .push("`systemd-run --shell` starts an interactive shell".into());
                return Step::Done;
            }
            Step::Inner(p.end)
        }
        "watch" => watch(args, out),
        "su" | "runuser" => su(name, args, out),
        "script" => {
            // GNU option parsing also takes `-c` after the log file (`script LOG -c CMD`).
            let p = parse(args, SCRIPT, Order::Permute);
            push_option_script(&p, &["-c", "--command"], args, "script -c", out);
            Step::Done
        }
        "eval" => {
            if !args.is_empty() {
                out.scripts.push(script_from(args, "eval"));
            }
            Step::Done
        }
        "trap" => {
            trap(args, out);
            Step::Done
        }
        // Builtins that run a command string later: `mapfile -C CALLBACK` (for every few
        // lines read), `compgen -C CMD` / `complete -C CMD` (to produce completions).
        "mapfile" | "readarray" | "compgen" | "complete" => {
            let options = if matches!(name, "mapfile" | "readarray") {
                MAPFILE
            } else {
                COMPLETE
            };
            let p = parse(args, options, Order::Permute);
            push_option_script(&p, &["-C"], args, &format!("{name} -C"), out);
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
        _ => {
            if let Some(reason) = untrackable(name, args, out) {
                out.opaque.push(reason);
            }
            Step::Done
        }
    }
}

/// A [`Wrapper`]: its options, then its `NAME=value` words and fixed operands, then the command.
fn plain_wrapper(w: &Wrapper, args: &[Word], out: &mut Unwrapped) -> Step {
    let p = parse(args, w.options, Order::InOrder);
    if p.has(w.no_command) {
        return Step::Done;
    }
    let mut start = p.end;
    if w.assignments {
        start += take_assignments(&args[start..], &mut out.assignments);
    }
    Step::Inner(start + w.skip)
}

/// Records the value of the last option named in `names` as a script run by `via`.
fn push_option_script(p: &Parsed, names: &[&str], args: &[Word], via: &str, out: &mut Unwrapped) {
    if let Some(carrier) = p.last(names).and_then(|o| Parsed::carrier(o, args)) {
        out.scripts.push(script_from(&[carrier], via));
    }
}

/// `env [OPTION]… [NAME=VALUE]… [COMMAND]`; `env -S 'CMD ARGS'` splits its argument into the
/// command line, which is analysed as a script (with the words after it appended).
fn env(args: &[Word], out: &mut Unwrapped) -> Step {
    let p = parse(args, ENV, Order::InOrder);
    let n = take_assignments(&args[p.end..], &mut out.assignments);
    if let Some(split) = p.value(&["-S", "--split-string"]) {
        let mut carriers = vec![Word::literal(split)];
        carriers.extend(args[p.end + n..].iter().cloned());
        out.scripts.push(script_from(&carriers, "env -S"));
        return Step::Done;
    }
    Step::Inner(p.end + n)
}

/// `xargs [OPTION]… COMMAND`. With a replace string, words containing it are filled from the
/// input at run time (`xargs -I{} sh -c '{}'` runs whatever the input says), so they are
/// marked dynamic.
fn xargs(args: &[Word]) -> Step {
    let p = parse(args, XARGS, Order::InOrder);
    let replace = p.value(&["-I"]).map(String::from).or_else(|| {
        p.last(&["-i", "--replace"]).map(|o| {
            o.value
                .clone()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "{}".into())
        })
    });
    match replace {
        Some(r) if !r.is_empty() => Step::InnerWords(
            args[p.end..]
                .iter()
                .map(|w| Word {
                    dynamic: w.dynamic || w.text.contains(r.as_str()),
                    ..w.clone()
                })
                .collect(),
        ),
        _ => Step::Inner(p.end),
    }
}

/// `flock [OPTION]… FILE COMMAND…`, or a command string: `flock [OPTION]… FILE -c CMD` and the
/// unusual but legal `flock -c CMD FILE`.
fn flock(args: &[Word], out: &mut Unwrapped) -> Step {
    let p = parse(args, FLOCK, Order::InOrder);
    if p.has(&["-c", "--command"]) {
        push_option_script(&p, &["-c", "--command"], args, "flock -c", out);
        return Step::Done;
    }
    let rest = &args[(p.end + 1).min(args.len())..];
    if let Some(first) = rest.first()
        && (first.text == "-c" || first.text == "--command")
    {
        if let Some(script) = rest.get(1) {
            out.scripts
                .push(script_from(std::slice::from_ref(script), "flock -c"));
        }
        return Step::Done;
    }
    Step::Inner(p.end + 1)
}

/// `watch CMD…` runs its words joined as a shell command line; `watch -x CMD…` runs them
/// directly.
fn watch(args: &[Word], out: &mut Unwrapped) -> Step {
    let p = parse(args, WATCH, Order::InOrder);
    if p.has(&["-x", "--exec"]) {
        return Step::Inner(p.end);
    }
    let rest = &args[p.end..];
    if !rest.is_empty() {
        out.scripts.push(script_from(rest, "watch"));
    }
    Step::Done
}

/// `su`/`runuser`: `-c CMD` (also after the user name: GNU option parsing) is a script;
/// `runuser -u USER COMMAND…` runs a command directly. Otherwise they run the user's shell with
/// the arguments after the user name (`su root -- -c CMD` runs CMD), reading commands from
/// standard input when there are none (`curl … | su`): that shell is the next layer, `sh`.
fn su(name: &str, args: &[Word], out: &mut Unwrapped) -> Step {
    let p = parse(args, SU, Order::Permute);
    if p.last(&["-c", "--command"])
        .is_some_and(|o| o.value.is_some())
    {
        push_option_script(&p, &["-c", "--command"], args, name, out);
        return Step::Done;
    }
    if name == "runuser" && p.has(&["-u", "--user"]) {
        return Step::Inner(p.operands.first().copied().unwrap_or(args.len()));
    }
    let mut operands = p
        .operand_words(args)
        .into_iter()
        .skip_while(|w| w.text == "-");
    let _user = operands.next();
    let mut shell = vec![Word::literal("sh")];
    shell.extend(operands.cloned());
    Step::InnerWords(shell)
}

/// `trap 'CMD' SIGNAL…` runs CMD later.
fn trap(args: &[Word], out: &mut Unwrapped) {
    let p = parse(args, Spec::NONE, Order::InOrder);
    if !p.has(&["-p", "-l"])
        && let Some(action) = args.get(p.end)
        && args.len() > p.end + 1
        && action.text != "-"
    {
        out.scripts
            .push(script_from(std::slice::from_ref(action), "trap"));
    }
}

/// Builtins and programs that make later commands impossible to track, or run commands the text
/// does not show: the reason, if `name` with `args` is one. An `alias` body is also analysed as
/// a script.
fn untrackable(name: &str, args: &[Word], out: &mut Unwrapped) -> Option<String> {
    let options = |spec: Spec<'_>, order: Order| parse(args, spec, order);
    match name {
        // `fc` without `-l` re-runs commands from the history.
        "fc" if !options(spec("e", &[]), Order::InOrder).has(&["-l"]) => {
            Some("`fc` runs commands from the shell history".into())
        }
        "bind" if options(spec("mqurfx", &[]), Order::Permute).has(&["-x"]) => {
            Some("`bind -x` binds a key to a command".into())
        }
        "alias" => {
            let mut reason = None;
            for w in args {
                if let Some((_, body)) = w.text.split_once('=') {
                    reason =
                        Some("`alias` defines a command whose later uses cannot be tracked".into());
                    let carrier = Word {
                        text: body.to_string(),
                        ..w.clone()
                    };
                    out.scripts.push(script_from(&[carrier], "alias"));
                }
            }
            reason
        }
        "hash" if options(spec("p", &[]), Order::Permute).has(&["-p"]) => {
            Some("`hash -p` makes a command name run another file".into())
        }
        "enable" if options(spec("f", &[]), Order::Permute).has(&["-f"]) => {
            Some("`enable -f` loads a builtin from a shared library".into())
        }
        "shopt" if args.iter().any(|w| w.text == "expand_aliases") => {
            Some("`shopt expand_aliases` makes later aliases run".into())
        }
        "source" | "." => Some(format!(
            "`{name}` runs the commands of a file whose contents are not known here"
        )),
        _ => None,
    }
}

fn shell_invocation(name: &str, args: &[Word], stdin: &Stdin, out: &mut Unwrapped) {
    let p = parse(args, SHELL, Order::InOrder);
    if p.has(&["-i", "--interactive"]) {
        out.opaque.push(format!(
            "`{name} -i` starts an interactive shell whose aliases and rc files cannot be analysed"
        ));
    }
    if p.has(&["-c"]) {
        match args.get(p.end) {
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
                    out.scripts
                        .push(Script::literal(body, &format!("{name} <<")));
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
    let (options, inline): (Spec<'_>, &[&str]) = if is_shell(name) {
        (SHELL, &["-c"])
    } else if name.starts_with("python") || name.starts_with("pypy") {
        (spec("WXQ", &[]), &["-c", "-m"])
    } else if name.starts_with("perl") {
        (Spec::NONE, &["-e", "-E"])
    } else if name.starts_with("ruby") {
        (spec("rIC", &[]), &["-e"])
    } else if matches!(name, "node" | "nodejs") {
        (
            spec("r", &["require", "import", "loader"]),
            &["-e", "-p", "--eval", "--print"],
        )
    } else if name.starts_with("php") {
        (spec("fdc", &[]), &["-r"])
    } else if name.starts_with("lua") {
        (spec("l", &[]), &["-e"])
    } else if is_interpreter(name) {
        (Spec::NONE, &["-e", "-c"])
    } else {
        return ProgramSource::NotInterpreter;
    };
    let p = parse(args, options, Order::InOrder);
    if p.has(inline) {
        return ProgramSource::Inline;
    }
    if name.starts_with("php")
        && let Some(file) = p.value(&["-f"])
    {
        return if is_stdin_path(file) {
            ProgramSource::Stdin
        } else {
            ProgramSource::File(Word::literal(file))
        };
    }
    if is_shell(name) && p.has(&["-s"]) {
        return ProgramSource::Stdin;
    }
    // `python3 -` and `sh -` read the program from stdin (a lone `-` is an operand); no
    // program argument at all means stdin too.
    match args.get(p.end) {
        Some(w) if is_stdin_path(&w.text) => ProgramSource::Stdin,
        Some(w) => ProgramSource::File(w.clone()),
        None => ProgramSource::Stdin,
    }
}
