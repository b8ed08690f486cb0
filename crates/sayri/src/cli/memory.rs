//! `sayri memory add|list|show|edit|forget|search|export|import|review` (through the daemon):
//! the short facts a person keeps for Sayri. A fact that holds a vault secret is refused by the
//! daemon and nothing is stored; secrets belong in `sayri vault`. Adding a fact that is already
//! stored for the same agent keeps the one fact. `review` lists facts that contradict an older
//! one and facts not recalled within `memory.ttl_days`; it changes nothing.

use anyhow::Context as _;
use sayri_client::autostart::connect_or_start;
use sayri_client::client::Client;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::ndjson::MAX_LINE_BYTES;
use sayri_protocol::params::{
    MemoryAcceptParams, MemoryAddParams, MemoryEditParams, MemoryExportParams, MemoryForgetParams,
    MemoryGetParams, MemoryImportParams, MemoryListParams, MemoryRejectParams, MemoryReviewParams,
    MemorySearchParams,
};
use sayri_protocol::reply::memory::MemoryFact;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

/// `sayri memory …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum MemoryAction {
    /// Remember a short fact (at most 500 characters): `sayri memory add I prefer metric units`.
    Add {
        /// Only this agent may use it (default: every agent).
        #[arg(long)]
        agent: Option<String>,
        /// The fact.
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// List the facts, oldest first: id, provenance, agent, added and changed (UTC), text.
    List {
        /// Only the facts this agent sees (its own and those for every agent).
        #[arg(long)]
        agent: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one fact.
    Show {
        /// The fact's id (see `sayri memory list`).
        id: i64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replace the text of a fact.
    Edit {
        /// The fact's id.
        id: i64,
        /// Its new text.
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Forget a fact: it is deleted with its search entry.
    Forget {
        /// The fact's id.
        id: i64,
    },
    /// Find the facts holding any of the words, best first.
    Search {
        /// How many (1-100).
        #[arg(long, default_value_t = 10)]
        limit: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The words.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
    },
    /// Write every fact as JSON lines, to FILE (made readable by you only) or to the terminal.
    Export {
        /// Where to write (default: standard output).
        file: Option<PathBuf>,
    },
    /// Add the facts of a JSON-lines file (as `sayri memory export` writes it; `-` reads
    /// standard input). One bad line refuses the whole file, naming the line.
    Import {
        /// The file.
        file: PathBuf,
    },
    /// List what needs your eye: facts contradicting an older one (keep one with `forget`),
    /// facts not recalled within memory.ttl_days, and facts a routine or a chat proposed
    /// (`accept` or `reject` them). Nothing is changed.
    Review {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Accept a proposed fact into memory (`sayri memory review` lists the proposals).
    Accept {
        /// The proposal's id.
        id: i64,
    },
    /// Reject a proposed fact: it is deleted, memory is unchanged.
    Reject {
        /// The proposal's id.
        id: i64,
    },
}

fn remote(e: sayri_client::client::ClientError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Runs `sayri memory …`.
pub(crate) async fn run(
    paths: &Paths,
    allow_start: bool,
    action: MemoryAction,
) -> anyhow::Result<()> {
    let mut c = connect_or_start(paths, allow_start).await?;
    match action {
        MemoryAction::Add { agent, text } => {
            let f = c
                .request_with(&MemoryAddParams {
                    text: text.join(" "),
                    agent,
                })
                .await
                .map_err(remote)?;
            println!("remembered fact {} ({})", f.id, for_whom(&f));
            Ok(())
        }
        MemoryAction::List { agent, json } => list(&mut c, agent, json).await,
        MemoryAction::Show { id, json } => {
            let f = c
                .request_with(&MemoryGetParams { id })
                .await
                .map_err(remote)?;
            if json {
                return crate::cli::print_json(&f);
            }
            print_fact(&f);
            Ok(())
        }
        MemoryAction::Edit { id, text } => {
            let f = c
                .request_with(&MemoryEditParams {
                    id,
                    text: text.join(" "),
                })
                .await
                .map_err(remote)?;
            println!("fact {} now reads: {}", f.id, terminal_safe(&f.text));
            Ok(())
        }
        MemoryAction::Forget { id } => {
            let v = c
                .request_with(&MemoryForgetParams { id })
                .await
                .map_err(remote)?;
            if v.forgotten {
                println!("forgot fact {id}");
                Ok(())
            } else {
                anyhow::bail!("no fact has id {id}; `sayri memory list` shows the ids")
            }
        }
        MemoryAction::Search { limit, json, query } => {
            let found = c
                .request_with(&MemorySearchParams {
                    query: query.join(" "),
                    limit: Some(limit),
                })
                .await
                .map_err(remote)?;
            if json {
                return crate::cli::print_json(&found);
            }
            if found.is_empty() {
                println!("no fact holds any of those words");
            }
            print_table(&found);
            Ok(())
        }
        MemoryAction::Export { file } => export(&mut c, file).await,
        MemoryAction::Import { file } => import(&mut c, &file).await,
        MemoryAction::Review { json } => review(&mut c, json).await,
        MemoryAction::Accept { id } => accept(&mut c, id).await,
        MemoryAction::Reject { id } => reject(&mut c, id).await,
    }
}

async fn accept(c: &mut Client, id: i64) -> anyhow::Result<()> {
    let f = c
        .request_with(&MemoryAcceptParams { id })
        .await
        .map_err(remote)?;
    println!(
        "remembered fact {} ({}): {}",
        f.id,
        for_whom(&f),
        terminal_safe(&f.text)
    );
    Ok(())
}

async fn reject(c: &mut Client, id: i64) -> anyhow::Result<()> {
    let v = c
        .request_with(&MemoryRejectParams { id })
        .await
        .map_err(remote)?;
    if v.rejected {
        println!("rejected proposal {id}; memory is unchanged");
        Ok(())
    } else {
        anyhow::bail!("no proposed fact has id {id}; `sayri memory review` lists the proposals")
    }
}

async fn list(c: &mut Client, agent: Option<String>, json: bool) -> anyhow::Result<()> {
    let facts = c
        .request_with(&MemoryListParams {
            agent: agent.clone(),
        })
        .await
        .map_err(remote)?;
    if json {
        return crate::cli::print_json(&facts);
    }
    if facts.is_empty() {
        match agent {
            Some(a) => println!(
                "no facts for agent {} — add one with: sayri memory add --agent {} \"…\"",
                terminal_safe(&a),
                terminal_safe(&a)
            ),
            None => {
                println!("no facts yet — add one with: sayri memory add \"I prefer metric units\"")
            }
        }
        return Ok(());
    }
    print_table(&facts);
    Ok(())
}

/// One line per fact under a header: id, provenance, agent, added, changed, text.
fn print_table(facts: &[MemoryFact]) {
    if facts.is_empty() {
        return;
    }
    println!(
        "{:>4}  {:<6}  {:<12}  {:<16}  {:<16}  text",
        "id", "source", "agent", "added (UTC)", "changed (UTC)"
    );
    for f in facts {
        println!(
            "{:>4}  {:<6}  {:<12}  {:<16}  {:<16}  {}",
            f.id,
            terminal_safe(&f.source),
            terminal_safe(f.agent.as_deref().unwrap_or("all")),
            date(f.created_at),
            date(f.updated_at),
            terminal_safe(&f.text)
        );
    }
}

fn print_fact(f: &MemoryFact) {
    println!("id:       {}", f.id);
    println!("text:     {}", terminal_safe(&f.text));
    println!("for:      {}", for_whom(f));
    println!("source:   {}", terminal_safe(&f.source));
    println!("added:    {} UTC", date(f.created_at));
    println!("changed:  {} UTC", date(f.updated_at));
    match f.last_recalled_at {
        Some(t) => println!("recalled: {} times, last {} UTC", f.recalled_count, date(t)),
        None => println!("recalled: never"),
    }
}

fn for_whom(f: &MemoryFact) -> String {
    match &f.agent {
        Some(a) => format!("for agent {}", terminal_safe(a)),
        None => "for every agent".into(),
    }
}

/// Unix seconds as `YYYY-MM-DD HH:MM` in UTC.
fn date(secs: f64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp(secs.floor() as i64, 0).map_or_else(
        || format!("{secs}"),
        |d| d.format("%Y-%m-%d %H:%M").to_string(),
    )
}

async fn export(c: &mut Client, file: Option<PathBuf>) -> anyhow::Result<()> {
    let v = c
        .request_with(&MemoryExportParams {})
        .await
        .map_err(remote)?;
    let Some(path) = file else {
        print!("{}", v.lines);
        return Ok(());
    };
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.write_all(v.lines.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("wrote {} fact(s) to {}", v.count, path.display());
    Ok(())
}

async fn import(c: &mut Client, file: &std::path::Path) -> anyhow::Result<()> {
    let mut lines = String::new();
    if file.as_os_str() == "-" {
        std::io::stdin()
            .read_to_string(&mut lines)
            .context("cannot read standard input as text")?;
    } else {
        lines = std::fs::read_to_string(file).with_context(|| {
            format!(
                "cannot read {} as text (give a file `sayri memory export` wrote)",
                file.display()
            )
        })?;
    }
    // The request is one line of at most MAX_LINE_BYTES; leave room for the envelope.
    let size = serde_json::to_string(&lines)?.len();
    if size + 256 > MAX_LINE_BYTES {
        anyhow::bail!(
            "{} is too large to send at once ({size} bytes as JSON, the daemon takes {MAX_LINE_BYTES}): split it into smaller files and import each",
            file.display()
        );
    }
    let v = c
        .request_with(&MemoryImportParams { lines })
        .await
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    println!(
        "imported {} fact(s) from {}; {} already known were skipped",
        v.imported,
        file.display(),
        v.skipped
    );
    Ok(())
}

async fn review(c: &mut Client, json: bool) -> anyhow::Result<()> {
    let r = c
        .request_with(&MemoryReviewParams {})
        .await
        .map_err(remote)?;
    if json {
        return crate::cli::print_json(&r);
    }
    if r.conflicts.is_empty() && r.stale.is_empty() && r.proposed.is_empty() {
        println!(
            "nothing to review: no fact contradicts another, every fact was used within {} days and nothing proposed waits",
            r.ttl_days
        );
        return Ok(());
    }
    for p in &r.proposed {
        println!(
            "proposal {} for agent {} (from session {}, {}):\n  {}\n  keep it: sayri memory accept {}   (or reject {})",
            p.id,
            terminal_safe(&p.agent),
            terminal_safe(&p.session_id),
            date(p.created_at),
            terminal_safe(&p.text),
            p.id,
            p.id
        );
    }
    for c in &r.conflicts {
        println!(
            "fact {} contradicts fact {} about \"{}\":\n  {:>4} (newer): {}\n  {:>4} (older): {}\n  keep one: sayri memory forget {}   (or forget {})",
            c.newer.id,
            c.older.id,
            terminal_safe(&c.subject),
            c.newer.id,
            terminal_safe(&c.newer.text),
            c.older.id,
            terminal_safe(&c.older.text),
            c.older.id,
            c.newer.id
        );
    }
    if !r.stale.is_empty() {
        println!(
            "not recalled in {} days (still kept; forget what is no longer true):",
            r.ttl_days
        );
        print_table(&r.stale);
    }
    Ok(())
}
