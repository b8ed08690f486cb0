//! Remote-script execution: running what was just downloaded, in any spelling.
//!
//! Part of the compiled-in baseline (it cannot be allowed by any rule or approval). Denied forms:
//! * a pipeline stage whose shell or interpreter reads its program from standard input
//!   (`sh`, `sudo bash -s --`, `python3 -`, `sh /dev/stdin`) while an earlier stage downloads
//!   (`curl`, `wget`, `fetch`, `aria2c`, `nc`, a `/dev/tcp/…` redirect) — also through
//!   `tee`/`cat` or any other filter — or decodes a payload (`base64 -d`, `xxd -r`, `gunzip`, …);
//! * a shell or interpreter running a process substitution, here-string or `<` input that
//!   downloads: `bash <(curl …)`, `source <(curl …)`, `bash < <(wget …)`, `bash <<< "$(curl …)"`;
//! * a script computed from a download: `sh -c "$(curl …)"`, `eval "$(wget -qO- …)"`, or a
//!   command word that is itself `$(curl …)`;
//! * download-then-run in one command: `curl -o x … && sh x`, `wget URL; bash file`,
//!   `curl … > i.sh; chmod +x i.sh; ./i.sh`.
//!
//! Additionally, a shell or interpreter that reads its program from a pipe fed by anything else
//! (`echo … | sh`, `tr … | bash`) is not analysable and so at least `ask`.

use super::options::{Order, Spec, parse};
use super::shell::{Analysis, SimpleCommand, Stdin, Word, base_name};
use super::targets::{FETCH_OPTIONS, is_fetcher};
use super::wrappers::{ProgramSource, is_interpreter, program_source};

/// Findings for one command string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Remote-script executions (baseline deny), described for the user.
    pub denied: Vec<String>,
    /// Not analysable (at least ask).
    pub opaque: Vec<String>,
}

const DECODERS: &[&str] = &[
    "base64", "base32", "basenc", "xxd", "openssl", "gunzip", "zcat", "gzip", "bzip2", "bunzip2",
    "xz", "unxz", "uudecode", "zstd", "unzstd",
];

fn downloads(cmd: &SimpleCommand) -> bool {
    cmd.programs().iter().any(|p| is_fetcher(p))
        || cmd.redirects.iter().any(|r| {
            r.target.text.starts_with("/dev/tcp/") || r.target.text.starts_with("/dev/udp/")
        })
}

fn decodes(cmd: &SimpleCommand) -> bool {
    cmd.unwrapped.layers.iter().any(|layer| {
        let Some(first) = layer.first() else {
            return false;
        };
        let name = base_name(&first.text);
        DECODERS.contains(&name)
            && (matches!(
                name,
                "gunzip" | "zcat" | "bunzip2" | "unxz" | "uudecode" | "unzstd"
            ) || parse(&layer[1..], Spec::NONE, Order::Permute)
                .has(&["-d", "--decode", "-D", "-r"]))
    })
}

fn word_downloads(a: &Analysis, w: &Word) -> bool {
    w.inner
        .iter()
        .filter_map(|i| a.commands.get(*i))
        .any(downloads)
}

/// The interpreter layer of a command and where it takes its program from.
fn interpreter(cmd: &SimpleCommand) -> Option<(String, ProgramSource)> {
    cmd.unwrapped.layers.iter().rev().find_map(|layer| {
        let first = layer.first()?;
        let name = base_name(&first.text).to_string();
        if name == "source" || name == "." {
            return Some((
                name,
                layer
                    .get(1)
                    .map(|w| ProgramSource::File(w.clone()))
                    .unwrap_or(ProgramSource::Stdin),
            ));
        }
        is_interpreter(&name).then(|| {
            let src = program_source(&name, &layer[1..]);
            (name, src)
        })
    })
}

/// Files a downloading command writes to (`-o F`, `-O F`, `> F`, wget's remote name).
fn download_outputs(cmd: &SimpleCommand) -> Vec<String> {
    let mut out = Vec::new();
    for layer in &cmd.unwrapped.layers {
        let Some(first) = layer.first() else { continue };
        let name = base_name(&first.text);
        if !is_fetcher(name) {
            continue;
        }
        let args = &layer[1..];
        let p = parse(args, FETCH_OPTIONS, Order::Permute);
        let mut outputs: Vec<String> = p
            .values(&["-o", "--output", "--output-document"])
            .map(String::from)
            .collect();
        let remote_name = if name == "wget" {
            outputs.extend(p.values(&["-O"]).map(String::from));
            p.has(&["--remote-name"])
        } else {
            // curl's `-O`: the file is named after the URL.
            p.has(&["-O", "--remote-name"])
        };
        if remote_name {
            outputs.extend(
                args.iter()
                    .find(|u| u.text.contains("://"))
                    .map(|u| base_name(u.text.trim_end_matches('/')).to_string()),
            );
        }
        outputs.retain(|v| v != "-");
        let explicit = remote_name || !outputs.is_empty();
        out.extend(outputs);
        if name == "wget" && !explicit {
            for u in args.iter().filter(|u| u.text.contains("://")) {
                out.push(base_name(u.text.trim_end_matches('/')).to_string());
            }
        }
    }
    for r in &cmd.redirects {
        if matches!(r.op.as_str(), ">" | ">>" | ">|" | "&>") {
            out.push(r.target.text.clone());
        }
    }
    out.retain(|f| !f.is_empty());
    out
}

/// What `name` (an interpreter reading its program from standard input) runs when `cmd` sits
/// in pipelines: a refusal for each stage whose upstream downloads or decodes, else a note that
/// the piped program cannot be analysed. Gives (refusals, notes).
fn piped_program(a: &Analysis, cmd: &SimpleCommand, name: &str) -> (Vec<String>, Vec<String>) {
    let (mut denied, mut opaque) = (Vec::new(), Vec::new());
    for &(pipeline, stage) in &cmd.pipes {
        if stage == 0 {
            continue;
        }
        let upstream: Vec<&SimpleCommand> = a
            .commands
            .iter()
            .filter(|c| c.pipes.iter().any(|&(p, s)| p == pipeline && s < stage))
            .collect();
        if upstream.iter().any(|c| downloads(c)) {
            denied.push(format!(
                "remote script execution: downloaded content is piped into `{name}` in `{}`",
                cmd.text
            ));
        } else if upstream.iter().any(|c| decodes(c)) {
            denied.push(format!(
                "a decoded payload is piped into `{name}` in `{}`",
                cmd.text
            ));
        } else {
            opaque.push(format!(
                "`{name}` runs a program read from a pipe, which cannot be analysed"
            ));
        }
    }
    (denied, opaque)
}

/// Looks for remote-script execution in an analysed command.
pub fn findings(a: &Analysis) -> Findings {
    let mut f = Findings::default();
    let mut deny = |msg: String| {
        if !f.denied.contains(&msg) {
            f.denied.push(msg);
        }
    };
    let mut opaque = Vec::new();
    let downloaded: Vec<String> = a
        .commands
        .iter()
        .filter(|c| downloads(c))
        .flat_map(download_outputs)
        .collect();

    for cmd in &a.commands {
        if let Some(first) = cmd.words.first()
            && first.dynamic
            && word_downloads(a, first)
        {
            deny(format!("`{}` runs downloaded text as a command", cmd.text));
        }
        for script in &cmd.unwrapped.scripts {
            if script.text.is_none() && script.carriers.iter().any(|w| word_downloads(a, w)) {
                deny(format!(
                    "`{}` runs a downloaded script via {}",
                    cmd.text, script.via
                ));
            }
        }
        let Some((name, source)) = interpreter(cmd) else {
            continue;
        };
        match &source {
            ProgramSource::File(w) => {
                if w.process_substitution && word_downloads(a, w) {
                    deny(format!(
                        "`{}` runs a downloaded script through {name}",
                        cmd.text
                    ));
                }
                if downloaded
                    .iter()
                    .any(|d| base_name(d) == base_name(&w.text))
                {
                    deny(format!(
                        "`{}` runs `{}`, which this command downloads",
                        cmd.text, w.text
                    ));
                }
            }
            ProgramSource::Stdin => match &cmd.stdin {
                Stdin::File(w) | Stdin::HereString(w) if word_downloads(a, w) => {
                    deny(format!("`{}` feeds a download to {name}", cmd.text));
                }
                Stdin::File(w)
                    if w.text.starts_with("/dev/tcp/") || w.text.starts_with("/dev/udp/") =>
                {
                    deny(format!("`{}` feeds a network stream to {name}", cmd.text));
                }
                Stdin::Inherited => {
                    let (denied, unknown) = piped_program(a, cmd, &name);
                    denied.into_iter().for_each(&mut deny);
                    opaque.extend(unknown);
                }
                _ => {}
            },
            _ => {}
        }
        // A downloaded file run directly: `./i.sh`, `/tmp/i.sh`.
    }
    for cmd in &a.commands {
        if let Some(first) = cmd.words.first()
            && first.text.contains('/')
            && downloaded
                .iter()
                .any(|d| base_name(d) == base_name(&first.text))
        {
            deny(format!("`{}` runs a file this command downloads", cmd.text));
        }
    }
    f.opaque = opaque;
    f
}
