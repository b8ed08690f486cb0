//! `sayri skills list|scan|install|update|remove|read`: the skills directory through the
//! daemon's own loader ([`sayri_daemon::skills::Skills`]); no daemon needed (a running one sees the
//! change at its next prompt, as it re-checks skills on every use).
//!
//! Exit codes of `scan` and `install`/`update`: 0 `ALLOW` (or admitted), 3 `WARN` (not
//! confirmed), 4 `BLOCK`, 1 for any other error.

use clap::Subcommand;
use sayri_client::paths::Paths;
use sayri_core::domain::skills::{Report, Verdict};
use sayri_daemon::skills::{self, Skills, SkillsError};
use std::path::PathBuf;

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
    /// Install a skill from a folder or a .zip/.tar.gz archive (scanned first).
    Install {
        /// The folder or archive.
        source: PathBuf,
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
        SkillsAction::Install {
            source,
            name,
            accept_warnings,
            json,
        } => {
            paths.ensure_dirs()?;
            let out = skills::install_path(&lib, &source, name.as_deref(), accept_warnings);
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

fn list(lib: &Skills, json: bool) -> anyhow::Result<i32> {
    let all = lib.list()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(0);
    }
    if all.is_empty() {
        println!("no skills installed (install one with `sayri skills install FOLDER|ARCHIVE`)");
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
