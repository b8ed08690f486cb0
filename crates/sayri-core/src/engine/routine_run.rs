//! One run of a routine or trigger: a remote turn of its agent in a fresh context and its own
//! session, then the result told to the person (notification, speech).
//!
//! * The turn is [`SayriCore::run_routine_turn`]: the agent's **effective** profile, no
//!   approver — a command that would ask is refused and the run is reported as `refused`,
//!   naming the command.
//! * Nothing is sent to the model before the run starts: a routine costs model calls only when
//!   it runs.
//! * The notification (when `notify_desktop`) carries the answer's first 180 characters, or the
//!   error; speech (when `speak_tts` and the daemon has a [`Speaker`]) the answer only.
//!   Neither failing changes the run's status; the report says why.

use crate::assistant::{RemoteRequest, SayriCore};
use crate::domain::routines::timing::from_epoch;
use crate::domain::routines::{RunOutcome, RunStatus};
use crate::domain::text::cut_chars;
use crate::engine::agent::Refusal;
use crate::engine::events::EventSink;
use crate::ports::{Clock, Notifier, NotifyError, SpeakError, Speaker};
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

/// Characters of the answer a notification shows.
pub const NOTIFY_CHARS: usize = 180;

/// What runs: a routine's or a trigger's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// `routine` or `trigger` (the session title's label).
    pub kind: &'static str,
    /// Its id.
    pub id: String,
    /// Display name (notification title, session title).
    pub name: String,
    /// The text the agent runs.
    pub prompt: String,
    /// The agent.
    pub agent_id: String,
    /// Its session (`routine-<id>`, `trigger-<id>`).
    pub session_id: String,
    /// Show the result as a notification.
    pub notify_desktop: bool,
    /// Speak the result.
    pub speak_tts: bool,
}

/// How a run went.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Status, summary, session, end time.
    pub outcome: RunOutcome,
    /// Model calls the turn made.
    pub model_calls: usize,
    /// Prompt and completion tokens as the server reported them.
    pub usage: crate::ports::Usage,
    /// Why the notification was not shown (`None`: shown, or not wanted).
    pub notify_error: Option<NotifyError>,
    /// Why the result was not spoken (`None`: spoken, or not wanted).
    pub speak_error: Option<SpeakError>,
}

/// What the run needs from the daemon.
pub struct RunPorts<'a> {
    /// The core (its agents and engine).
    pub core: &'a SayriCore,
    /// Desktop notifications.
    pub notifier: &'a dyn Notifier,
    /// Voice output, when the daemon has it.
    pub speaker: Option<&'a dyn Speaker>,
    /// The scheduler's clock (the end time).
    pub clock: &'a dyn Clock,
}

/// Runs `spec` to its end; `cancel` stops the turn (routine deleted, daemon stopping). Events
/// of the turn go to `sink`.
pub async fn run(
    ports: &RunPorts<'_>,
    spec: &RunSpec,
    cancel: CancellationToken,
    sink: &dyn EventSink,
) -> RunReport {
    let req = RemoteRequest {
        text: spec.prompt.clone(),
        author: spec.name.clone(),
        target_agent_id: Some(spec.agent_id.clone()),
        sandbox_level: None,
        instance_id: spec.kind.to_string(),
        session_id: Some(spec.session_id.clone()),
        cancel,
    };
    let turn = ports.core.run_routine_turn(req, sink).await;
    let (status, summary, model_calls, usage) = match turn {
        Err(e) => (RunStatus::Error, e.to_string(), 0, Default::default()),
        Ok(o) if o.cancelled => (
            RunStatus::Error,
            "the run was stopped before it finished".into(),
            o.model_calls,
            o.usage,
        ),
        Ok(o) => match (&o.error, o.refused_commands.is_empty()) {
            (Some(e), _) => (RunStatus::Error, e.clone(), o.model_calls, o.usage),
            (None, true) => (
                RunStatus::Ok,
                o.text.clone().unwrap_or_default(),
                o.model_calls,
                o.usage,
            ),
            (None, false) => (
                RunStatus::Refused,
                refused_summary(o.text.as_deref().unwrap_or(""), &o.refused_commands),
                o.model_calls,
                o.usage,
            ),
        },
    };
    let outcome = RunOutcome {
        finished_at: now(ports.clock),
        status,
        summary,
        session_id: spec.session_id.clone(),
    };
    let notify_error = if spec.notify_desktop {
        let (title, body) = notification(spec, &outcome);
        ports.notifier.notify(&title, &body).await.err()
    } else {
        None
    };
    let speak_error = match (spec.speak_tts, ports.speaker, status) {
        (true, Some(s), RunStatus::Ok | RunStatus::Refused) if !outcome.summary.is_empty() => {
            s.speak(&outcome.summary).await.err()
        }
        (true, None, _) => Some(SpeakError::Unavailable),
        _ => None,
    };
    RunReport {
        outcome,
        model_calls,
        usage,
        notify_error,
        speak_error,
    }
}

fn now(clock: &dyn Clock) -> DateTime<Utc> {
    from_epoch(clock.now_unix()).unwrap_or_default()
}

/// The answer, then which commands were not run and why: each refusal as the engine gave it
/// (the rule or policy that refused it, or the approval nobody could give), so the summary
/// never suggests a fix that cannot work (an allow rule of the agent's own does not lift its
/// creator's deny).
fn refused_summary(text: &str, refused: &[Refusal]) -> String {
    let list = refused
        .iter()
        .map(|r| match r.reason.trim() {
            "" => format!("`{}`", cut_chars(&r.command, 80)),
            why => cut_chars(why, 300),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let note = format!("Not run — refused (a routine has no one to approve): {list}");
    if text.trim().is_empty() {
        note
    } else {
        format!("{}\n\n{note}", text.trim())
    }
}

/// The notification of a finished run: `✨ name` with the answer, or `⚠️ name` with what went
/// wrong; the body is plain text of at most [`NOTIFY_CHARS`] characters.
pub fn notification(spec: &RunSpec, outcome: &RunOutcome) -> (String, String) {
    let title = match outcome.status {
        RunStatus::Ok => format!("✨ {}", spec.name),
        RunStatus::Refused => format!("⚠️ {} (a command was refused)", spec.name),
        RunStatus::Error => format!("⚠️ {} failed", spec.name),
    };
    let plain = crate::domain::voice::speakable::speakable_text(&outcome.summary);
    let plain = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut body = cut_chars(&plain, NOTIFY_CHARS);
    if plain.chars().count() > NOTIFY_CHARS {
        body.push('…');
    }
    (title, body)
}
