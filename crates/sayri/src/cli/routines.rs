//! `sayri routines list|add|edit|run|enable|disable|delete|next`.
//!
//! Every command goes through the daemon (the one scheduler owns the routines): `list` shows
//! the routines and then the trigger files (an invalid file with its error), `add` prints the
//! new routine's id, `next` prints the next fire instants exactly as the scheduler computes them
//! (`--now` replaces the clock for that preview only).

use sayri_client::autostart::connect_or_start;
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::params::{
    RoutineDeleteParams, RoutineNextParams, RoutineSaveParams, RoutineSetEnabledParams,
    RoutinesListParams, RoutinesRunParams, TriggersListParams,
};
use sayri_protocol::reply::routines::{ListedRoutine, ListedTrigger, Routine, RoutineNextReply};

/// `sayri routines …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RoutinesAction {
    /// List the routines (and the trigger files of `$CONFIG/triggers/`, invalid ones with why).
    List {
        /// Print JSON: `{"routines": […], "triggers": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Add a routine; prints its id.
    Add {
        /// Display name.
        #[arg(long)]
        name: String,
        /// The text the agent runs.
        #[arg(long)]
        prompt: String,
        /// When it runs.
        #[command(flatten)]
        when: When,
        /// The other fields.
        #[command(flatten)]
        fields: Fields,
    },
    /// Change a routine; fields not given stay as they are (its last run too).
    Edit {
        /// Routine id.
        id: String,
        /// New display name.
        #[arg(long)]
        name: Option<String>,
        /// New prompt.
        #[arg(long)]
        prompt: Option<String>,
        /// New schedule (at most one).
        #[command(flatten)]
        when: EditWhen,
        /// The other fields.
        #[command(flatten)]
        fields: Fields,
    },
    /// Run a routine now (in the background; enabled or not). Refused while it is running.
    Run {
        /// Routine id.
        id: String,
    },
    /// Let its schedule run it again (a slot missed while it was off is not caught up).
    Enable {
        /// Routine id.
        id: String,
    },
    /// Stop its schedule (it can still be run by hand).
    Disable {
        /// Routine id.
        id: String,
    },
    /// Delete a routine (a run in progress stops).
    Delete {
        /// Routine id.
        id: String,
    },
    /// The next fire instants, as the scheduler computes them from the routine's stored state.
    Next {
        /// Routine id.
        id: String,
        /// How many (1–1000).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
        count: u32,
        /// Preview from this instant (RFC 3339 with offset) instead of now.
        #[arg(long, value_name = "RFC3339")]
        now: Option<String>,
        /// Print a JSON list of RFC 3339 strings.
        #[arg(long)]
        json: bool,
    },
}

/// The schedule of a new routine: exactly one.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct When {
    /// Every day at this local time.
    #[arg(long, value_name = "HH:MM")]
    pub daily_at: Option<String>,
    /// Every N hours.
    #[arg(long, value_name = "N")]
    pub every_hours: Option<String>,
    /// A 5- or 6-field cron pattern ("30 7 * * mon-fri").
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,
    /// At the first daemon start of each login session.
    #[arg(long)]
    pub on_login: bool,
}

/// A new schedule for an existing routine: at most one.
#[derive(Debug, clap::Args)]
#[group(required = false, multiple = false)]
pub(crate) struct EditWhen {
    /// Every day at this local time.
    #[arg(long, value_name = "HH:MM")]
    pub daily_at: Option<String>,
    /// Every N hours.
    #[arg(long, value_name = "N")]
    pub every_hours: Option<String>,
    /// A 5- or 6-field cron pattern.
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,
    /// At the first daemon start of each login session.
    #[arg(long)]
    pub on_login: bool,
}

/// Routine fields besides name, prompt and schedule.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Fields {
    /// IANA zone ("Europe/Berlin"); "" follows the system zone (the default).
    #[arg(long, value_name = "IANA")]
    pub zone: Option<String>,
    /// The agent that runs it (default: `default`).
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// Free text.
    #[arg(long)]
    pub description: Option<String>,
    /// A slot missed (daemon stopped, machine asleep): run_once or skip.
    #[arg(long, value_name = "run_once|skip")]
    pub catch_up: Option<String>,
    /// How late (minutes) a missed slot may be and still run once.
    #[arg(long, value_name = "MINUTES")]
    pub grace_minutes: Option<u32>,
    /// Show the result as a desktop notification.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub notify: Option<bool>,
    /// Speak the result when voice is available.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub speak: Option<bool>,
    /// Whether its schedule runs it.
    #[arg(long, value_name = "yes|no", value_parser = clap::builder::BoolishValueParser::new())]
    pub enabled: Option<bool>,
}

/// `(trigger, time_spec)` of the schedule flags, if one was given.
fn schedule(
    daily_at: Option<String>,
    every_hours: Option<String>,
    cron: Option<String>,
    on_login: bool,
) -> Option<(&'static str, Option<String>)> {
    match (daily_at, every_hours, cron, on_login) {
        (Some(t), ..) => Some(("daily_at", Some(t))),
        (_, Some(n), ..) => Some(("hourly", Some(n))),
        (_, _, Some(c), _) => Some(("cron", Some(c))),
        (.., true) => Some(("on_login", None)),
        _ => None,
    }
}

/// The `routine_save` params of a new routine or an edit.
fn save_params(
    id: Option<String>,
    name: Option<String>,
    prompt: Option<String>,
    when: Option<(&'static str, Option<String>)>,
    f: Fields,
) -> RoutineSaveParams {
    let (trigger, time_spec) = match when {
        Some((t, spec)) => (Some(t.to_string()), spec),
        None => (None, None),
    };
    RoutineSaveParams {
        id,
        name,
        description: f.description,
        trigger,
        time_spec,
        zone: f.zone,
        prompt,
        agent_id: f.agent,
        speak_tts: f.speak,
        notify_desktop: f.notify,
        enabled: f.enabled,
        catch_up: f.catch_up,
        grace_minutes: f.grace_minutes,
    }
}

/// Runs `sayri routines …`; returns the exit code.
pub(crate) async fn run(
    paths: &Paths,
    allow_start: bool,
    action: RoutinesAction,
) -> anyhow::Result<i32> {
    let mut c = connect_or_start(paths, allow_start).await?;
    let remote = |e: sayri_client::client::ClientError| anyhow::anyhow!("{e}");
    match action {
        RoutinesAction::List { json } => list(&mut c, json).await?,
        RoutinesAction::Add {
            name,
            prompt,
            when,
            fields,
        } => {
            let when = schedule(when.daily_at, when.every_hours, when.cron, when.on_login);
            let p = save_params(None, Some(name), Some(prompt), when, fields);
            let v = c.request_with(&p).await.map_err(remote)?;
            println!("{}", v.id);
        }
        RoutinesAction::Edit {
            id,
            name,
            prompt,
            when,
            fields,
        } => {
            let when = schedule(when.daily_at, when.every_hours, when.cron, when.on_login);
            let p = save_params(Some(id), name, prompt, when, fields);
            let v = c.request_with(&p).await.map_err(remote)?;
            println!(
                "saved routine {} (next run: {})",
                terminal_safe(&v.id),
                next_text(v.next_run_at.as_deref())
            );
        }
        RoutinesAction::Run { id } => {
            let v = c
                .request_with(&RoutinesRunParams { routine_id: id })
                .await
                .map_err(remote)?;
            println!(
                "started routine {} ({}); its result goes to session routine-{}",
                terminal_safe(&v.routine_id),
                terminal_safe(&v.name),
                terminal_safe(&v.routine_id),
            );
        }
        RoutinesAction::Enable { id } => set_enabled(&mut c, id, true).await?,
        RoutinesAction::Disable { id } => set_enabled(&mut c, id, false).await?,
        RoutinesAction::Delete { id } => {
            c.request_with(&RoutineDeleteParams {
                routine_id: id.clone(),
            })
            .await
            .map_err(remote)?;
            println!("deleted routine {}", terminal_safe(&id));
        }
        RoutinesAction::Next {
            id,
            count,
            now,
            json,
        } => {
            let v = c
                .request_with(&RoutineNextParams {
                    routine_id: id,
                    count: Some(count),
                    now,
                })
                .await
                .map_err(remote)?;
            if json {
                println!("{}", serde_json::to_string(&v.next)?);
            } else if v.next.is_empty() {
                println!("{}", no_next_reason(&v));
            } else {
                for t in &v.next {
                    println!("{t}");
                }
            }
        }
    }
    Ok(0)
}

/// `sayri routines list [--json]`: the routines, then the trigger files.
async fn list(c: &mut sayri_client::client::Client, json: bool) -> anyhow::Result<()> {
    let remote = |e: sayri_client::client::ClientError| anyhow::anyhow!("{e}");
    let routines = c
        .request_with(&RoutinesListParams {})
        .await
        .map_err(remote)?;
    let triggers = c
        .request_with(&TriggersListParams {})
        .await
        .map_err(remote)?;
    if json {
        println!(
            "{}",
            serde_json::json!({"routines": routines, "triggers": triggers})
        );
    } else {
        print_list(&routines, &triggers);
    }
    Ok(())
}

async fn set_enabled(
    c: &mut sayri_client::client::Client,
    id: String,
    enabled: bool,
) -> anyhow::Result<()> {
    let v = c
        .request_with(&RoutineSetEnabledParams {
            routine_id: id.clone(),
            enabled: Some(enabled),
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let state = if enabled { "enabled" } else { "disabled" };
    println!(
        "routine {} {state} (next run: {})",
        terminal_safe(&id),
        next_text(v.next_run_at.as_deref())
    );
    Ok(())
}

/// `next_run_at`, or "none".
fn next_text(next_run_at: Option<&str>) -> String {
    next_run_at.map_or_else(|| "none".to_string(), |s| terminal_safe(s).into_owned())
}

/// Why `routine_next` listed nothing.
fn no_next_reason(v: &RoutineNextReply) -> &'static str {
    if !v.enabled {
        "no scheduled runs: the routine is disabled (`sayri routines enable ID`)"
    } else if v.trigger == "on_login" {
        "no scheduled runs: it runs at the first daemon start of each login session"
    } else {
        "no scheduled runs"
    }
}

fn print_list(routines: &[ListedRoutine], triggers: &[ListedTrigger]) {
    let t = |v: &str| terminal_safe(v).into_owned();
    if routines.is_empty() {
        println!("no routines (add one with `sayri routines add`)");
    }
    for r in routines {
        let r = match r {
            ListedRoutine::Broken(b) => {
                println!("{}  INVALID: {}", t(&b.id), t(&b.error));
                continue;
            }
            ListedRoutine::Routine(r) => r,
        };
        if let Some(e) = &r.error {
            println!("{}  INVALID: {}", t(&r.id), t(e));
            continue;
        }
        println!("{}", routine_line(r));
    }
    for tr in triggers {
        let e = &tr.entry;
        let file = e.file.display().to_string();
        match &e.error {
            Some(error) => println!("trigger {}  INVALID ({}): {}", t(&e.id), t(&file), t(error)),
            None => println!(
                "trigger {}  {}  [{}; {}]",
                t(&e.id),
                t(e.name().unwrap_or_default()),
                t(e.event_type().unwrap_or_default()),
                if e.enabled() { "enabled" } else { "disabled" }
            ),
        }
    }
}

/// One routine of `sayri routines list`.
fn routine_line(r: &Routine) -> String {
    let t = |v: &str| terminal_safe(v).into_owned();
    let when = match r.trigger.as_str() {
        "daily_at" => format!("daily at {}", t(&r.time_spec)),
        "hourly" => format!("every {} h", t(&r.time_spec)),
        "cron" => format!("cron {}", t(&r.time_spec)),
        _ => "on login".to_string(),
    };
    let zone = r
        .zone
        .as_deref()
        .map(|z| format!(" ({z})"))
        .unwrap_or_default();
    let state = if r.running {
        "running"
    } else if !r.enabled {
        "disabled"
    } else {
        "enabled"
    };
    let last = r
        .last_outcome
        .as_ref()
        .map_or("never run", |o| o.status.as_str());
    format!(
        "{}  {}  [{when}{}; {state}; agent {}] next: {}; last: {last}",
        t(&r.id),
        t(&r.name),
        terminal_safe(&zone),
        t(&r.agent_id),
        next_text(r.next_run_at.as_deref()),
    )
}
