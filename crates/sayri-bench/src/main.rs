//! `sayri-bench`: runs every benchmark of Sayri against a scripted model on loopback and writes
//! `BENCHMARKS.md` (machine, date, the exact command, medians with min and max, reference
//! figures). Run it with `./scripts/bench` (builds everything in release mode first).
//!
//! `sayri-bench [--out FILE] [--command TEXT] [--only SECTION]`: `--out` is where the report
//! goes (default `BENCHMARKS.md`); `--command` is the command line printed in the report
//! (default `./scripts/bench`); `--only` runs one section (`tokens`, `footprint`, `spawn`,
//! `voice`, `models`) for a quick look — the report then says which; `--update` with `--only`
//! replaces that section in the existing report and keeps the rest. Progress goes to stderr. Every process the harness
//! starts is stopped before it exits (and dies with it if it is killed), and a run that leaves a
//! process behind fails naming it (see `procs`).
//!
//! Sections are listed in `run`; a new figure (a routine run, a prompt with many skills) is a
//! function returning a [`report::Section`] added there.

mod broadcast;
mod conversation;
mod latency;
mod model;
mod models;
mod procs;
mod report;
mod spawn;
mod stats;
mod voice;

use report::{Machine, Section};
use sayri_core::domain::tokens::exact::ExactTokenizer;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

struct Args {
    out: PathBuf,
    command: String,
    /// Run only this section.
    only: Option<String>,
    /// With `only`: replace that section in the existing report instead of writing a new one.
    update: bool,
}

/// Section names for `--only`.
const SECTIONS: [&str; 5] = ["tokens", "footprint", "spawn", "voice", "models"];

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        out: PathBuf::from("BENCHMARKS.md"),
        command: "./scripts/bench".into(),
        only: None,
        update: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => args.out = it.next().ok_or("--out needs a file name")?.into(),
            "--command" => args.command = it.next().ok_or("--command needs a text")?,
            "--only" => {
                let name = it.next().ok_or("--only needs a section name")?;
                if !SECTIONS.contains(&name.as_str()) {
                    return Err(format!("unknown section {name:?}; one of {SECTIONS:?}"));
                }
                args.only = Some(name);
            }
            "--update" => args.update = true,
            "-h" | "--help" => {
                return Err(
                    "usage: sayri-bench [--out FILE] [--command TEXT] [--only tokens|footprint|spawn|voice|models [--update]]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    if args.update && args.only.is_none() {
        return Err("--update needs --only SECTION (the section to replace in the report)".into());
    }
    Ok(args)
}

fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// A 60,000-line, 1,380,000-byte log for the large-output turn.
fn big_log(dir: &std::path::Path) -> Result<PathBuf, String> {
    let path = dir.join("big.log");
    let text: String = (1..=60_000)
        .map(|i| format!("line {i:06}: status=ok\n"))
        .collect();
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Reports progress on stderr.
pub(crate) fn progress(what: &str) {
    eprintln!("sayri-bench: {what}…");
}

fn run(args: &Args) -> Result<(), String> {
    let machine = Machine::detect();
    let bin = procs::sayri_binary()?;
    let wanted = |name: &str| args.only.as_deref().is_none_or(|o| o == name);
    let mut sections = Vec::new();
    let mut smaps = Vec::new();
    if wanted("tokens") || wanted("footprint") {
        let (tokens, footprint, rollups) = conversations_and_footprint(&bin, wanted("footprint"))?;
        if wanted("tokens") {
            sections.push(tokens);
        }
        if let Some(f) = footprint {
            sections.push(f);
        }
        smaps = rollups;
    }
    if wanted("spawn") {
        progress("sandbox spawn overhead");
        sections.push(Section {
            title: "Sandbox spawn overhead".into(),
            method: "`true` through the daemon's sandbox adapter and the `sayri-exec` helper, in \
                     pairs with a bare fork + exec of `true`; the overhead is the per-pair \
                     difference. The CPU time is what one run costs the machine (helper, sandbox \
                     setup and `bash -c true`, from `getrusage`), steadier than wall time on a \
                     busy machine."
                .into(),
            rows: spawn::run(&bin.with_file_name("sayri-exec"))?,
            extra: String::new(),
        });
    }
    if wanted("voice") {
        let model =
            model::Model::start(Arc::new(ExactTokenizer::load().map_err(|e| e.to_string())?))?;
        sections.push(voice::run(&bin, &model.server.base_url())?);
    }
    if wanted("models") {
        progress("the bundled model's answers");
        sections.push(models::run(&bin)?);
    }
    let command = match &args.only {
        Some(o) => format!("{} --only {o}", args.command),
        None => args.command.clone(),
    };
    if args.update {
        return update_report(&args.out, &machine, &command, &sections);
    }
    let mut md = report::render(&machine, &date(), &command, &sections);
    if !smaps.is_empty() {
        md.push_str("\n## Daemon `smaps_rollup`\n");
        for (when, text) in &smaps {
            md.push_str(&format!("\n{when}:\n\n```\n{text}```\n"));
        }
    }
    std::fs::write(&args.out, md)
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    eprintln!("sayri-bench: wrote {}", args.out.display());
    Ok(())
}

/// What the conversation runs produce: the token economy section, the footprint section (when
/// asked for), and the daemon's `smaps_rollup` snapshots (when, text).
type Measured = (Section, Option<Section>, Vec<(String, String)>);

/// Replaces `sections` in the report at `out`, each saying which run measured it (the rest of
/// the report keeps the run that wrote it).
fn update_report(
    out: &std::path::Path,
    machine: &Machine,
    command: &str,
    sections: &[Section],
) -> Result<(), String> {
    let mut md = std::fs::read_to_string(out).map_err(|e| {
        format!(
            "cannot read {} to update it ({e}); run without --update to write a new report",
            out.display()
        )
    })?;
    let provenance = format!(
        "Measured separately from the rest of this report: {}, `{command}`, load average at \
         start {}.",
        date(),
        machine.load
    );
    for s in sections {
        md = report::replace_section(&md, &s.title, &report::render_section(s, &provenance));
    }
    std::fs::write(out, md).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    eprintln!("sayri-bench: updated {}", out.display());
    Ok(())
}

/// The token economy section, the footprint section (when `footprint`), and the daemon's
/// `smaps_rollup` snapshots.
fn conversations_and_footprint(bin: &std::path::Path, footprint: bool) -> Result<Measured, String> {
    let tokenizer = Arc::new(ExactTokenizer::load().map_err(|e| e.to_string())?);
    let model = model::Model::start(tokenizer.clone())?;
    let base_url = model.server.base_url();
    let logs = tempfile::tempdir_in("/var/tmp").map_err(|e| e.to_string())?;
    let log = big_log(logs.path())?;
    progress("conversations (token economy, memory after 20 turns)");
    let install = procs::Install::new(bin, &base_url, "")?;
    let conv = conversation::run(&install, &model, &tokenizer, &log)?;
    let tokens = Section {
        title: "Token economy".into(),
        method: "Real `sayri ask` turns through the daemon with the default agent, against the \
                 scripted model. Request bytes are the HTTP bodies the server received; prompt \
                 tokens are what a server whose model uses `o200k_base` reports as \
                 `usage.prompt_tokens` (content tokens + 4 per message + 3). Peers' figures use \
                 request bytes ÷ 4 for a fixed prompt of \"Say hi\"."
            .into(),
        rows: conv.economy,
        extra: String::new(),
    };
    if !footprint {
        return Ok((tokens, None, conv.smaps));
    }
    progress("start-up, idle memory, ask wall time, ping");
    let mut rows = latency::run(&procs::Install::new(bin, &base_url, "")?)?;
    rows.extend(conv.footprint);
    progress("broadcast to 64 clients");
    rows.push(broadcast::run()?);
    let footprint = Section {
        title: "Footprint and latency".into(),
        method: "Release build; the daemon under an isolated config and state directory; memory \
                 from `/proc/PID/status` (MB = MiB). Idle figures are of a daemon whose state \
                 already exists (the first start of an installation creates the vault and the \
                 database and is not counted)."
            .into(),
        rows,
        extra: String::new(),
    };
    Ok((tokens, Some(footprint), conv.smaps))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("sayri-bench: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sayri-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
