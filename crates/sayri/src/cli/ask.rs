//! `sayri ask TEXT` and `sayri chat`: a turn through the daemon, streamed as it arrives.
//!
//! The answer goes to stdout as `assistant_delta` events arrive; tool steps go to stderr
//! (`$ df -h` and a one-line result), so `sayri ask … > answer.txt` keeps only the answer.

use sayri_client::autostart::connect_or_start;
use sayri_client::client::{Client, ClientError};
use sayri_client::paths::Paths;
use sayri_client::terminal_text::terminal_safe;
use sayri_protocol::event::AnyEvent;
use sayri_protocol::params::{AskParams, InterruptParams, NewConversationParams};
use sayri_protocol::reply::sessions::AskReply;
use std::io::{BufRead, Write};
use std::time::Duration;

/// Options shared by `ask` and `chat`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AskOptions {
    /// Agent to use (its profile in `$CONFIG/agents/ID.json`; `default` is built in).
    #[arg(long)]
    pub agent: Option<String>,
    /// Continue this session.
    #[arg(long, conflicts_with = "new")]
    pub session: Option<String>,
    /// Start a new conversation.
    #[arg(long)]
    pub new: bool,
    /// Seconds to wait for the answer before interrupting the turn.
    #[arg(long, default_value_t = 300.0)]
    pub timeout: f64,
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

/// Prints one event of a running turn; sets `streamed` when the answer text streamed something.
fn show_event(ev: &AnyEvent, json_mode: bool, streamed: &mut bool) {
    // Everything here comes from the model or its commands: never raw to the terminal.
    let safe = |s: &str| terminal_safe(s).into_owned();
    let mut err = std::io::stderr();
    match ev {
        AnyEvent::AssistantDelta(d) if !json_mode => {
            print!("{}", safe(&d.delta));
            let _ = std::io::stdout().flush();
            *streamed = true;
        }
        AnyEvent::ToolStart(t) => {
            let _ = writeln!(err, "$ {}", safe(&t.command));
        }
        AnyEvent::ToolFinish(t) => {
            let out = safe(&t.output);
            let _ = writeln!(
                err,
                "  → exit {}{}",
                t.exit_code.map_or("?".into(), |c| c.to_string()),
                if out.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", one_line(&out, 100))
                }
            );
        }
        AnyEvent::PermissionRequest(p) => {
            let r = &p.request;
            let _ = writeln!(
                err,
                "? permission needed for `{}` ({}) — answer in the Sayri app, or: sayri permissions answer {} --allow",
                safe(&r.resource),
                safe(&r.reason),
                safe(&r.id)
            );
        }
        // `error` events are not printed: the turn's result carries the same error, printed once.
        _ => {}
    }
}

fn params(text: &str, o: &AskOptions) -> AskParams {
    AskParams {
        text: text.to_string(),
        timeout: Some(o.timeout),
        agent_id: o.agent.clone(),
        target_agent_id: None,
        session_id: o.session.clone(),
        new: o.new,
    }
}

/// Runs one turn on `client`; prints as it streams. Returns the reply.
async fn turn(
    client: &mut Client,
    text: &str,
    o: &AskOptions,
    json_mode: bool,
) -> anyhow::Result<AskReply> {
    let mut streamed = false;
    let wait = Duration::from_secs_f64(o.timeout.max(1.0) + 30.0);
    let result = client
        .call_with(&params(text, o), wait, |ev| {
            show_event(ev, json_mode, &mut streamed)
        })
        .await
        .map_err(|e| match e {
            ClientError::Remote(p) => anyhow::anyhow!("{}", p.message),
            other => anyhow::anyhow!("{other}"),
        })?;
    if !json_mode {
        let answer = result.text.as_str();
        if !streamed && !answer.is_empty() {
            print!("{}", terminal_safe(answer));
        }
        if streamed || !answer.is_empty() {
            println!();
        }
    }
    Ok(result)
}

/// Exit code after Ctrl-C (128 + SIGINT).
pub(crate) const EXIT_INTERRUPTED: i32 = 130;

/// Sends `interrupt` on a connection of its own (the turn's connection is busy waiting).
async fn interrupt_turn(paths: &Paths) {
    if let Ok(mut c) = connect_or_start(paths, false).await {
        let _ = c.request_with(&InterruptParams {}).await;
    }
}

/// `sayri ask TEXT`: exit 0 on an answer, 1 on error, 130 when Ctrl-C interrupted the turn
/// (the daemon stops the model stream and kills a running command).
pub(crate) async fn run_ask(
    paths: &Paths,
    allow_start: bool,
    text: &str,
    o: &AskOptions,
    json_mode: bool,
) -> anyhow::Result<i32> {
    if text.trim().is_empty() {
        anyhow::bail!(
            "nothing to ask: give the question as an argument, e.g. sayri ask \"how much disk space is free?\""
        );
    }
    let mut client = connect_or_start(paths, allow_start).await?;
    let result = tokio::select! {
        r = turn(&mut client, text, o, json_mode) => r?,
        _ = tokio::signal::ctrl_c() => {
            interrupt_turn(paths).await;
            eprintln!("\nsayri: interrupted");
            return Ok(EXIT_INTERRUPTED);
        }
    };
    if json_mode {
        crate::cli::print_json(&result)?;
    }
    match result.error.as_deref() {
        Some(e) if !e.is_empty() => anyhow::bail!("{e}"),
        _ => Ok(0),
    }
}

/// `sayri interrupt`: stops the running turn (model stream and command).
pub(crate) async fn run_interrupt(paths: &Paths) -> anyhow::Result<()> {
    let mut c = connect_or_start(paths, false).await?;
    let r = c.request_with(&InterruptParams {}).await?;
    if r.interrupted {
        println!("interrupted");
    } else {
        println!("nothing was running");
    }
    Ok(())
}

/// `sayri chat`: one question per line; `/new` starts a new conversation, `/quit` (or EOF) ends.
pub(crate) async fn run_chat(
    paths: &Paths,
    allow_start: bool,
    o: &AskOptions,
) -> anyhow::Result<()> {
    let mut client = connect_or_start(paths, allow_start).await?;
    let mut opts = o.clone();
    let stdin = std::io::stdin();
    eprintln!("Sayri chat — type a question; /new for a new conversation, /help, /quit to leave.");
    loop {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            eprintln!();
            return Ok(());
        }
        let line = line.trim();
        match line {
            "" => continue,
            "/quit" | "/exit" => return Ok(()),
            "/help" | "/?" => {
                eprintln!(
                    "/new  start a new conversation\n/quit leave (or Ctrl-D)\nanything else is sent as a question"
                );
                continue;
            }
            "/new" => {
                let r = client.request_with(&NewConversationParams {}).await?;
                eprintln!("new conversation {}", r.session_id);
                opts.new = false;
                opts.session = None;
                continue;
            }
            _ => {}
        }
        match turn(&mut client, line, &opts, false).await {
            Ok(r) => {
                if let Some(e) = r.error.as_deref().filter(|e| !e.is_empty()) {
                    eprintln!("sayri: {e}");
                }
                // Later lines continue the same conversation.
                opts.new = false;
                opts.session = Some(r.session_id);
            }
            Err(e) => eprintln!("sayri: {e}"),
        }
    }
}
