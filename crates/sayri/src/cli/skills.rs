//! `sayri skills list|search|scan|install|update|remove|read`: the skills directory through the
//! daemon's own loader ([`sayri_daemon::skills::Skills`]) and registry client
//! ([`sayri_daemon::skills::registry`]); no daemon needed (a running one sees the change at its
//! next prompt, as it re-checks skills on every use).
//!
//! `install SOURCE` takes a folder or archive when SOURCE is an existing path or looks like one
//! (it starts with `/`, `./`, `../` or `~`, or ends in `.zip`, `.tar.gz` or `.tgz`); anything
//! else is a slug of the registry set in `skills.registry_url`.
//!
//! Exit codes of `scan` and `install`/`update`: 0 `ALLOW` (or admitted), 3 `WARN` (not
//! confirmed), 4 `BLOCK`, 1 for any other error.

use clap::Subcommand;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_core::domain::skills::{Report, Verdict};
use sayri_daemon::skills::registry::{self, Registry};
use sayri_daemon::skills::{self, Skills, SkillsError};
use std::path::{Path, PathBuf};

/// Exit code for a `WARN` verdict that was not confirmed.
pub(crate) const EXIT_WARN: i32 = 3;
/// Exit code for a `BLOCK` verdict.
pub(crate) const EXIT_BLOCK: i32 = 4;

/// `sayri skills …`.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsAction {
    /// Installed skills and their state (ready, changed, rescan, unscanned).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Scan a folder or archive (not installed), or an installed skill by name (admitted
    /// content is approved again). Exit 0 ALLOW, 3 WARN, 4 BLOCK.
    Scan {
        /// A skill folder, a .zip/.tar.gz archive, or an installed skill's name.
        target: String,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Accept a WARN verdict for an installed skill.
        #[arg(long)]
        accept_warnings: bool,
    },
    /// Search the installed skills and the skills registry (every word must match).
    Search {
        /// Words to look for.
        #[arg(required = true)]
        query: Vec<String>,
        /// Print JSON (`{results, warnings}`).
        #[arg(long)]
        json: bool,
    },
    /// Install a skill from a folder, a .zip/.tar.gz archive, or the skills registry by slug
    /// (scanned first; a download's SHA-256 is printed).
    Install {
        /// The folder, the archive, or a registry slug (`weather-brief`, `@owner/weather-brief`).
        source: String,
        /// Folder name to install as (default: from the skill's name).
        #[arg(long)]
        name: Option<String>,
        /// Accept a WARN verdict (a BLOCK is never accepted).
        #[arg(long)]
        accept_warnings: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replace an installed skill with a new copy (scanned exactly like a first install).
    Update {
        /// The installed skill's name.
        name: String,
        /// The new folder or archive.
        source: PathBuf,
        /// Accept a WARN verdict (a BLOCK is never accepted).
        #[arg(long)]
        accept_warnings: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed skill (by name, never a path).
    Remove {
        /// The installed skill's name.
        name: String,
    },
    /// Print an installed skill's SKILL.md (only while it matches its scan).
    Read {
        /// The installed skill's name.
        name: String,
    },
}

/// Runs `action`; returns the exit code.
///
/// # Errors
/// Unreadable skills directory or a failed write.
pub(crate) fn run(paths: &Paths, action: SkillsAction) -> anyhow::Result<i32> {
    let lib = Skills::new(paths.skills_dir());
    match action {
        SkillsAction::List { json } => list(&lib, json),
        SkillsAction::Scan {
            target,
            json,
            accept_warnings,
        } => scan(&lib, &target, json, accept_warnings),
        SkillsAction::Search { query, json } => search(paths, lib, &query.join(" "), json),
        SkillsAction::Install {
            source,
            name,
            accept_warnings,
            json,
        } => {
            paths.ensure_dirs()?;
            if !looks_like_path(&source) {
                return install_slug(paths, &lib, &source, name.as_deref(), accept_warnings, json);
            }
            let out = skills::install_path(
                &lib,
                &PathBuf::from(source),
                name.as_deref(),
                accept_warnings,
            );
            installed(out, json)
        }
        SkillsAction::Update {
            name,
            source,
            accept_warnings,
            json,
        } => {
            if lib.record(&name).is_none() {
                eprintln!("no skill {name} is installed by Sayri; see `sayri skills list`");
                return Ok(1);
            }
            let out = skills::install_path(&lib, &source, Some(&name), accept_warnings);
            installed(out, json)
        }
        SkillsAction::Remove { name } => match lib.uninstall(&name) {
            Ok(()) => {
                println!("removed {name}");
                Ok(0)
            }
            Err(e) => {
                eprintln!("{e}");
                Ok(1)
            }
        },
        SkillsAction::Read { name } => match lib.read_ready(&name) {
            Ok(text) => {
                print!("{text}");
                Ok(0)
            }
            Err(e) => {
                eprintln!("{e}");
                Ok(1)
            }
        },
    }
}

/// Whether `install SOURCE` means a folder or archive (see the module notes).
fn looks_like_path(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    Path::new(source).exists()
        || ["/", "./", "../", "~"]
            .iter()
            .any(|p| source.starts_with(p))
        || [".zip", ".tar.gz", ".tgz"]
            .iter()
            .any(|x| lower.ends_with(x))
}

/// The registry of the configuration file, and a runtime to ask it on.
fn registry_and_runtime(
    paths: &Paths,
) -> anyhow::Result<(
    Result<Option<Registry>, SkillsError>,
    tokio::runtime::Runtime,
)> {
    let cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let registry = Registry::from_config(&cfg).map_err(SkillsError::from);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok((registry, rt))
}

fn install_slug(
    paths: &Paths,
    lib: &Skills,
    slug: &str,
    name: Option<&str>,
    accept: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let (configured, rt) = registry_and_runtime(paths)?;
    let done = configured
        .and_then(|reg| rt.block_on(registry::install(lib, reg.as_ref(), slug, name, accept)));
    match done {
        Ok(done) => {
            let line = format!(
                "downloaded {} ({} bytes), sha256 {}",
                done.download.url, done.download.bytes, done.download.sha256
            );
            if json {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
            installed(done.outcome, json)
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(1)
        }
    }
}

fn search(paths: &Paths, lib: Skills, query: &str, json: bool) -> anyhow::Result<i32> {
    let (configured, rt) = registry_and_runtime(paths)?;
    let found = match rt.block_on(registry::search_all(lib, configured, query)) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("{e}");
            return Ok(1);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&found)?);
        return Ok(0);
    }
    for why in &found.warnings {
        eprintln!("warning: {why}");
    }
    if found.results.is_empty() {
        println!("no skill matches {query:?}");
    }
    for s in &found.results {
        let origin = match (&s.owner, &s.version) {
            (Some(o), Some(v)) => format!("{} by {o}, {v}", s.source),
            (Some(o), None) => format!("{} by {o}", s.source),
            (None, Some(v)) => format!("{}, {v}", s.source),
            (None, None) => s.source.clone(),
        };
        println!(
            "{:<24} {:<9} [{origin}] {}",
            terminal_safe(&s.slug),
            s.state,
            terminal_safe(&s.description)
        );
    }
    Ok(0)
}

fn list(lib: &Skills, json: bool) -> anyhow::Result<i32> {
    let all = lib.list()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(0);
    }
    if all.is_empty() {
        println!(
            "no skills installed (install one with `sayri skills install FOLDER|ARCHIVE|SLUG`)"
        );
    }
    for s in all {
        let verdict = s.verdict.unwrap_or_else(|| "-".into());
        println!(
            "{:<24} {:<9} {:<5} {}",
            s.slug, s.state, verdict, s.description
        );
    }
    Ok(0)
}

fn exit_for(report: &Report) -> i32 {
    match report.verdict {
        Verdict::Allow => 0,
        Verdict::Warn => EXIT_WARN,
        Verdict::Block => EXIT_BLOCK,
    }
}

fn print_report(report: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    println!(
        "{} (score {}): {}",
        report.verdict, report.score, report.explanation
    );
    for f in &report.findings {
        println!("  [{}] {}:{} {}", f.kind.name(), f.file, f.line, f.detail);
    }
    Ok(())
}

fn scan(lib: &Skills, target: &str, json: bool, accept: bool) -> anyhow::Result<i32> {
    let as_path = PathBuf::from(target);
    if as_path.exists() {
        return match skills::scan_path(&as_path) {
            Ok(r) => {
                print_report(&r, json)?;
                Ok(exit_for(&r))
            }
            Err(e) => {
                eprintln!("{e}");
                Ok(1)
            }
        };
    }
    match lib.rescan(target, accept, &skills::now()) {
        Ok(done) => {
            print_report(&done.report, json)?;
            if !json {
                println!("{target} matches its scan again and is offered to the model");
            }
            Ok(0)
        }
        Err(SkillsError::Refused { report, message }) => {
            print_report(&report, json)?;
            eprintln!("{message}");
            Ok(exit_for(&report))
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(1)
        }
    }
}

fn installed(out: Result<skills::Installed, SkillsError>, json: bool) -> anyhow::Result<i32> {
    match out {
        Ok(done) => {
            print_report(&done.report, json)?;
            if !json {
                let how = if done.replaced {
                    "updated"
                } else {
                    "installed"
                };
                println!("{how} {}", done.slug);
            }
            Ok(0)
        }
        Err(SkillsError::Refused { report, message }) => {
            print_report(&report, json)?;
            eprintln!("{message}");
            Ok(exit_for(&report))
        }
        Err(e) => {
            eprintln!("{e}");
            Ok(1)
        }
    }
}
