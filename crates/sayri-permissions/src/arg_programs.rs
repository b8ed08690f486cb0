//! Programs that execute (or write) what their arguments say.
//!
//! A program is not trusted by its name: `sed`, `awk`, `find`, `git`, `tar`, … can each run
//! another program or write a file named in their arguments. [`ARG_PROGRAMS`] is the table of
//! such programs; each row reads the arguments the way the program does and reports, into the
//! command's [`Unwrapped`]:
//! * **commands** found in the arguments — a script (`sed '1e CMD'`, `awk 'BEGIN{system("CMD")}'`,
//!   `git -c core.pager=CMD`) or words (`find -exec CMD {} ;`). Each is judged as a command of
//!   its own, so the user sees (and the rules meet) what really runs;
//! * **targets**: files written (`sed -i`, `sed 'w FILE'`, `awk '{print > "FILE"}'`,
//!   `find DIR -delete`, `find -fprint FILE`, `sort -o FILE`) or read (`sed 'r FILE'`);
//! * **not analysable** forms — a program read from a file (`sed -f`, `awk -f`), data run as a
//!   program (`awk '{print | "sh"}'`), a command computed at run time — which make the decision
//!   at least `ask` whatever the rules say.
//!
//! The table grows by adding a row: the names and a function reading the arguments.

use super::options::{Order, Parsed, Spec, parse};
use super::rule::Action;
use super::shell::{self, Word, base_name};
use super::wrappers::{
    ArgTarget, NestedCommand, ProgramSource, Unwrapped, is_interpreter, program_source, script_from,
};
use super::{awk, git, sed};

/// One row of [`ARG_PROGRAMS`].
pub struct ArgProgram {
    /// Program names (base names of the command word).
    pub names: &'static [&'static str],
    /// The argument forms that run a program or touch a file, as documentation.
    pub forms: &'static str,
    analyse: fn(&str, &[Word], &mut Unwrapped),
}

impl ArgProgram {
    /// Reads `args` (the words after the program `name`) into `out`.
    pub fn analyse(&self, name: &str, args: &[Word], out: &mut Unwrapped) {
        (self.analyse)(name, args, out);
    }
}

/// The programs whose arguments are analysed for commands and files.
pub const ARG_PROGRAMS: &[ArgProgram] = &[
    ArgProgram {
        names: &["sed", "gsed"],
        forms: "`e CMD`, `s///e`, `w`/`W FILE`, `s///w FILE`, `r`/`R FILE`, `-i`; `-f FILE` not analysable",
        analyse: |_, args, out| sed::analyse(args, out),
    },
    ArgProgram {
        names: &["awk", "gawk", "mawk", "nawk", "original-awk"],
        forms: "`system(CMD)`, `CMD | getline`, `print | CMD`, `|&`, `print > FILE`, `getline < FILE`, `-d`/`-o`/`-p` files; `-f FILE`, `@load`, `@include`, `/inet/…` not analysable",
        analyse: awk::analyse,
    },
    ArgProgram {
        names: &["find"],
        forms: "`-exec`/`-execdir`/`-ok`/`-okdir CMD … ;` and `… {} +`, `-delete`, `-fprint`/`-fprint0`/`-fprintf`/`-fls FILE`",
        analyse: |_, args, out| find(args, out),
    },
    ArgProgram {
        names: &["git"],
        forms: "`-c`/`--config-env` program settings, `git config` writing them, `-p`/`--paginate`, `grep -O`, `--upload-pack`/`--receive-pack`/`--exec`, `difftool -x`, `rebase --exec`, `bisect run`, `submodule foreach`, `filter-branch` filters, `send-email` commands, `--ext-diff`, `--output`",
        analyse: |_, args, out| git::analyse(args, out),
    },
    ArgProgram {
        names: &["parallel", "sem"],
        forms: "the command template (run through the shell, `{}` filled at run time); `:::` arguments run as commands when no template is given; commands read from input not analysable",
        analyse: parallel,
    },
    ArgProgram {
        names: &["tar", "gtar", "bsdtar"],
        forms: "`--to-command`, `-I`/`--use-compress-program`, `--checkpoint-action=exec=`, `-F`/`--info-script`/`--new-volume-script`, `--rsh-command`",
        analyse: |_, args, out| tar(args, out),
    },
    ArgProgram {
        names: &["rsync"],
        forms: "`-e`/`--rsh CMD`",
        analyse: |_, args, out| {
            named_options(args, &["-e", "--rsh"], "rsync -e", out);
        },
    },
    ArgProgram {
        names: &["ssh", "scp", "sftp", "autossh"],
        forms: "`-o ProxyCommand=`/`LocalCommand=`/`KnownHostsCommand=`, `-S PROGRAM` (scp, sftp), `-D PROGRAM` (sftp); `-F FILE` not analysable",
        analyse: ssh,
    },
    ArgProgram {
        names: &["sort"],
        forms: "`--compress-program PROGRAM`, `-o`/`--output FILE` (written)",
        analyse: |_, args, out| sort(args, out),
    },
    ArgProgram {
        names: &["zip"],
        forms: "`-TT`/`--unzip-command CMD`",
        analyse: |_, args, out| {
            named_options(args, &["-TT", "--unzip-command"], "zip -TT", out);
        },
    },
    ArgProgram {
        names: &["man"],
        forms: "`-P`/`--pager PAGER`, `-H`/`--html=BROWSER`",
        analyse: |_, args, out| {
            named_options(args, &["-P", "--pager", "--html"], "man -P", out);
        },
    },
    ArgProgram {
        names: &["vi", "vim", "nvim", "ex", "view", "gvim", "evim", "vimdiff"],
        forms: "`-c CMD`, `+CMD`, `--cmd CMD`, `-S FILE`, `-s FILE`, `-u FILE` not analysable (editor commands can run programs)",
        analyse: editor,
    },
    ArgProgram {
        names: &["entr"],
        forms: "the command; `-s CMD` runs through the shell",
        analyse: |_, args, out| entr(args, out),
    },
    ArgProgram {
        names: &["sg"],
        forms: "`sg GROUP [-c] CMD` runs CMD through the shell",
        analyse: |_, args, out| {
            let rest: Vec<Word> = args
                .iter()
                .skip_while(|w| w.text == "-")
                .skip(1)
                .skip_while(|w| w.text == "-c")
                .cloned()
                .collect();
            if !rest.is_empty() {
                out.scripts.push(script_from(&rest, "sg"));
            }
        },
    },
];

/// The row for the program `name`, if its arguments are analysed.
pub fn lookup(name: &str) -> Option<&'static ArgProgram> {
    ARG_PROGRAMS.iter().find(|p| p.names.contains(&name))
}

/// Why the command line `command` runs the data on its standard input as a program (`sh`,
/// `python3 -`, `bash -s`), if it does: the data fed to it cannot be analysed.
pub fn runs_its_input(command: &str) -> Option<String> {
    let analysis = shell::analyse(command);
    let first = analysis
        .commands
        .iter()
        .find(|c| c.depth == 0 && c.pipes.iter().all(|(_, stage)| *stage == 0))?;
    let layer = first.innermost();
    let name = base_name(&layer.first()?.text).to_string();
    (is_interpreter(&name) && program_source(&name, &layer[1..]) == ProgramSource::Stdin)
        .then(|| format!("`{name}`, which runs that data as a program"))
}

/// Values of the options `names` (`-x V`, `-xV`, `--name V`, `--name=V`), in order; each is
/// the carrier word (so what is known about it stays known).
fn option_values(args: &[Word], names: &[&str]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let mut used = 1;
        for n in names {
            let attached = if n.starts_with("--") {
                t.strip_prefix(n).and_then(|r| r.strip_prefix('='))
            } else {
                t.strip_prefix(n).filter(|r| !r.is_empty())
            };
            if t == *n {
                if let Some(v) = args.get(i + 1) {
                    out.push(v.clone());
                }
                used = 2;
                break;
            }
            if let Some(v) = attached {
                out.push(Word {
                    text: v.to_string(),
                    ..w.clone()
                });
                break;
            }
        }
        i += used;
    }
    out
}

/// Each value of the options `names` is a command run through the shell.
fn named_options(args: &[Word], names: &[&str], via: &str, out: &mut Unwrapped) {
    for v in option_values(args, names) {
        out.scripts.push(script_from(std::slice::from_ref(&v), via));
    }
}

/// `find`'s primaries that take one argument (two for `-fprintf`); the rest take none.
const FIND_ONE_ARG: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-perm",
    "-size",
    "-mtime",
    "-atime",
    "-ctime",
    "-mmin",
    "-amin",
    "-cmin",
    "-newer",
    "-anewer",
    "-cnewer",
    "-inum",
    "-links",
    "-samefile",
    "-used",
    "-fstype",
    "-context",
    "-maxdepth",
    "-mindepth",
    "-printf",
    "-regextype",
    "-files0-from",
    "-fprint",
    "-fprint0",
    "-fls",
];

/// `find [-H|-L|-P] [-D X] [-Ox] START… EXPRESSION`: `-exec`-family commands (with `{}` the
/// found path, known only at run time), `-delete` (a write of everything under each start),
/// `-fprint*`/`-fls` files written, `-files0-from` read.
fn find(args: &[Word], out: &mut Unwrapped) {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            t if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let is_expression =
        |w: &Word| w.text.starts_with('-') || matches!(w.text.as_str(), "(" | ")" | "!" | ",");
    let starts: Vec<Word> = args[i.min(args.len())..]
        .iter()
        .take_while(|w| !is_expression(w))
        .cloned()
        .collect();
    i += starts.len();
    let starts = if starts.is_empty() {
        vec![Word::literal(".")]
    } else {
        starts
    };
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        match t {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                i = find_exec(t, args, i + 1, out);
                continue;
            }
            "-delete" => {
                for s in &starts {
                    out.targets
                        .push(ArgTarget::from_word(Action::Write, s, "find -delete"));
                    out.targets.push(ArgTarget::from_word(
                        Action::Write,
                        &under(s),
                        "find -delete",
                    ));
                }
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                if let Some(f) = args.get(i + 1) {
                    out.targets
                        .push(ArgTarget::from_word(Action::Write, f, &format!("find {t}")));
                }
                if t == "-fprintf" {
                    i += 1;
                }
            }
            "-files0-from" => {
                if let Some(f) = args.get(i + 1) {
                    out.targets
                        .push(ArgTarget::from_word(Action::Read, f, "find -files0-from"));
                }
            }
            _ => {}
        }
        i += if FIND_ONE_ARG.contains(&t) { 2 } else { 1 };
    }
}

/// Every path under the start point `start`: `START/*` (a glob; a run-time start stays one).
fn under(start: &Word) -> Word {
    let base = start.text.trim_end_matches('/');
    let mut w = Word {
        text: format!("{base}/*"),
        glob: true,
        dynamic: true,
        ..start.clone()
    };
    if let Some(shape) = &start.shape {
        w.shape = Some(format!("{}/*", shape.trim_end_matches('/')));
    }
    w
}

/// The command of one `-exec`-family primary starting at `from`; returns the index after its
/// terminator (`;`, or `+` right after a `{}`).
fn find_exec(primary: &str, args: &[Word], from: usize, out: &mut Unwrapped) -> usize {
    let mut end = from;
    while let Some(w) = args.get(end) {
        if w.text == ";" || (w.text == "+" && end > from && args[end - 1].text == "{}") {
            break;
        }
        end += 1;
    }
    if end > from {
        out.commands.push(NestedCommand {
            words: args[from..end]
                .iter()
                .map(|w| placeholder(w, "{}"))
                .collect(),
            via: format!("find {primary}"),
        });
    }
    end + 1
}

/// `word` with each `mark` in it standing for a value filled in at run time.
fn placeholder(word: &Word, mark: &str) -> Word {
    if !word.text.contains(mark) {
        return word.clone();
    }
    let shape = word.shape.clone().unwrap_or_else(|| word.text.clone());
    Word {
        dynamic: true,
        shape: Some(shape.replace(mark, "*")),
        ..word.clone()
    }
}

/// GNU `parallel`'s options that take an argument.
const PARALLEL_WITH_ARG: &[&str] = &[
    "-a",
    "--arg-file",
    "--arg-file-sep",
    "--arg-sep",
    "--block",
    "--block-size",
    "-C",
    "--colsep",
    "-d",
    "--delimiter",
    "-E",
    "--env",
    "--header",
    "-I",
    "-j",
    "--jobs",
    "-P",
    "--max-procs",
    "--joblog",
    "--load",
    "--memfree",
    "--nice",
    "--results",
    "--res",
    "--retries",
    "--return",
    "--rpl",
    "--sshdelay",
    "-S",
    "--sshlogin",
    "--sshloginfile",
    "--slf",
    "--tagstring",
    "--tmpdir",
    "--timeout",
    "--transferfile",
    "--tf",
    "--workdir",
    "--wd",
    "-n",
    "--max-args",
    "-N",
    "-s",
    "--max-chars",
    "-L",
    "--max-lines",
    "--basefile",
    "--bf",
    "--delay",
    "--termseq",
    "--limit",
    "--sqlmaster",
    "--sqlworker",
    "--sqlandworker",
    "--shebang-wrap",
];

/// GNU `parallel`'s options that take none.
const PARALLEL_FLAGS: &[&str] = &[
    "-k",
    "--keep-order",
    "-u",
    "--ungroup",
    "--group",
    "--line-buffer",
    "--lb",
    "-v",
    "--verbose",
    "-t",
    "--dry-run",
    "--dryrun",
    "-q",
    "--quote",
    "-X",
    "-m",
    "--xargs",
    "--pipe",
    "--spreadstdin",
    "--pipepart",
    "--bar",
    "--progress",
    "--eta",
    "--halt-on-error",
    "-0",
    "--null",
    "-r",
    "--no-run-if-empty",
    "--tag",
    "--will-cite",
    "--citation",
    "--keep",
    "--nonall",
    "--onall",
    "--ungroup",
    "--group-by",
    "--shuf",
    "--silent",
    "--plain",
    "--tty",
    "--fg",
    "--bg",
    "--semaphore",
    "--no-notice",
    "--files",
    "--round-robin",
    "--round",
    "--cat",
    "--fifo",
    "--compress",
    "--linebuffer",
    "--colsep-regexp",
    "--trim",
    "--xapply",
    "--link",
    "--joblog-append",
];

/// `parallel [OPTIONS] [COMMAND…] [::: ARGS…]`: the command is run through the shell with
/// `{}`-style placeholders filled at run time (the input is appended when no placeholder is
/// written). Without a command, the arguments themselves are the commands; commands read from
/// standard input or a file are not analysable.
fn parallel(name: &str, args: &[Word], out: &mut Unwrapped) {
    let mut i = 0;
    let mut replace = vec!["{}".to_string()];
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') || t.starts_with(":::") {
            break;
        }
        let (opt, attached) = match t.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_string())),
            _ => (t, None),
        };
        if PARALLEL_WITH_ARG.contains(&opt) {
            let value = attached.or_else(|| args.get(i + 1).map(|v| v.text.clone()));
            if matches!(opt, "-I") {
                replace.extend(value);
            }
            i += if t.contains('=') { 1 } else { 2 };
        } else if PARALLEL_FLAGS.contains(&opt) || t == "-i" {
            i += 1;
        } else if opt.len() > 2 && !opt.starts_with("--") && PARALLEL_WITH_ARG.contains(&&opt[..2])
        {
            if &opt[..2] == "-I" {
                replace.push(opt[2..].to_string());
            }
            i += 1;
        } else {
            out.opaque.push(format!(
                "`{name} {t}` is an option this analysis does not know, so the command it runs cannot be found"
            ));
            return;
        }
    }
    let rest = &args[i.min(args.len())..];
    let sep = rest
        .iter()
        .position(|w| w.text.starts_with(":::"))
        .unwrap_or(rest.len());
    let (command, inputs) = rest.split_at(sep);
    if command.is_empty() {
        let literal_inputs = inputs.first().is_some_and(|w| w.text == ":::")
            && !inputs[1..].iter().any(|w| w.text.starts_with(":::"));
        if literal_inputs {
            for c in &inputs[1..] {
                out.scripts
                    .push(script_from(std::slice::from_ref(c), &format!("{name} :::")));
            }
        } else {
            out.opaque.push(format!(
                "`{name}` runs commands read from its input, which are not known here"
            ));
        }
        return;
    }
    let mut words = command.to_vec();
    let marks: Vec<String> = replace
        .iter()
        .flat_map(|r| {
            let stem = r.trim_end_matches('}').to_string();
            [
                r.clone(),
                format!("{stem}.}}"),
                format!("{stem}/}}"),
                format!("{stem}//}}"),
                format!("{stem}/.}}"),
                format!("{stem}#}}"),
                format!("{stem}%}}"),
            ]
        })
        .collect();
    if !words
        .iter()
        .any(|w| marks.iter().any(|m| w.text.contains(m.as_str())))
    {
        words.push(Word::literal("{}"));
    }
    let mut script = script_from(&words, name);
    script.placeholders = marks;
    out.scripts.push(script);
}

/// `tar`'s options that run a program.
fn tar(args: &[Word], out: &mut Unwrapped) {
    for v in option_values(args, &["--to-command"]) {
        if let Some(reason) = runs_its_input(&v.text) {
            out.opaque
                .push(format!("`tar --to-command` feeds each file to {reason}"));
        }
        out.scripts
            .push(script_from(std::slice::from_ref(&v), "tar --to-command"));
    }
    named_options(
        args,
        &[
            "--use-compress-program",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
        ],
        "tar",
        out,
    );
    let short = Spec::new("fbCFgIKLNTVXH", &[]);
    let p = parse(args, short, Order::Permute);
    for o in p
        .options
        .iter()
        .filter(|o| o.name == "-I" || o.name == "-F")
    {
        if let Some(v) = Parsed::carrier(o, args) {
            out.scripts.push(script_from(
                std::slice::from_ref(&v),
                &format!("tar {}", o.name),
            ));
        }
    }
    for v in option_values(args, &["--checkpoint-action"]) {
        if let Some(cmd) = v.text.strip_prefix("exec=") {
            let w = Word {
                text: cmd.to_string(),
                ..v.clone()
            };
            out.scripts.push(script_from(
                std::slice::from_ref(&w),
                "tar --checkpoint-action=exec",
            ));
        }
    }
}

/// `ssh`/`scp`/`sftp`: `-o` settings that run a local command, the program options of
/// `scp`/`sftp`, and a configuration file (`-F`) whose settings are not known here.
fn ssh(name: &str, args: &[Word], out: &mut Unwrapped) {
    for v in option_values(args, &["-o"]) {
        let (key, value) = match v.text.split_once(['=', ' ']) {
            Some((k, v)) => (k.trim(), v.trim_start_matches(['=', ' '])),
            None => continue,
        };
        if matches!(
            key.to_ascii_lowercase().as_str(),
            "proxycommand" | "localcommand" | "knownhostscommand"
        ) && !value.eq_ignore_ascii_case("none")
        {
            let w = Word {
                text: value.to_string(),
                ..v.clone()
            };
            out.scripts.push(script_from(
                std::slice::from_ref(&w),
                &format!("{name} -o {key}"),
            ));
        }
    }
    if name != "ssh" && name != "autossh" {
        let programs: &[&str] = if name == "sftp" {
            &["-S", "-D"]
        } else {
            &["-S"]
        };
        named_options(args, programs, &format!("{name} -S"), out);
    }
    for f in option_values(args, &["-F"]) {
        out.opaque.push(format!(
            "`{name} -F {}` reads settings (which may run commands) from a file not known here",
            f.text
        ));
    }
}

/// `sort`: files read, `-o` written, `--compress-program` run.
fn sort(args: &[Word], out: &mut Unwrapped) {
    let spec = Spec::new(
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
            "random-source",
            "batch-size",
        ],
    );
    let p = parse(args, spec, Order::Permute);
    for f in p.values(&["-o", "--output"]) {
        out.targets
            .push(ArgTarget::new(Action::Write, f, "sort -o"));
    }
    for f in p.values(&["--files0-from", "--random-source"]) {
        out.targets.push(ArgTarget::new(Action::Read, f, "sort"));
    }
    for w in p.operand_words(args) {
        if w.text != "-" {
            out.targets
                .push(ArgTarget::from_word(Action::Read, w, "sort"));
        }
    }
    named_options(
        args,
        &["--compress-program"],
        "sort --compress-program",
        out,
    );
}

/// Editors run their own commands from `-c`, `+CMD`, `--cmd` and script files, and those can
/// run programs (`:!CMD`).
fn editor(name: &str, args: &[Word], out: &mut Unwrapped) {
    for (i, w) in args.iter().enumerate() {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let runs = match t {
            "-c" | "--cmd" | "-S" | "-s" | "-u" => {
                args.get(i + 1).map(|v| format!("{t} {}", v.text))
            }
            _ if t.starts_with('+') => {
                let body = &t[1..];
                let harmless = body.is_empty()
                    || body.chars().all(|c| c.is_ascii_digit())
                    || (body.starts_with('/') && !body.contains('|'));
                (!harmless).then(|| t.to_string())
            }
            _ => None,
        };
        if let Some(r) = runs {
            out.opaque.push(format!(
                "`{name} {r}` runs editor commands, which can run programs"
            ));
        }
    }
}

/// `entr [-acdnprsz] CMD…`: runs CMD when files change; with `-s` the first word is a shell
/// command line.
fn entr(args: &[Word], out: &mut Unwrapped) {
    let p = parse(args, Spec::NONE, Order::InOrder);
    let rest = &args[p.end.min(args.len())..];
    if rest.is_empty() {
        return;
    }
    if p.has(&["-s"]) {
        out.scripts
            .push(script_from(std::slice::from_ref(&rest[0]), "entr -s"));
    } else {
        out.commands.push(NestedCommand {
            words: rest.iter().map(|w| placeholder(w, "/_")).collect(),
            via: "entr".into(),
        });
    }
}
