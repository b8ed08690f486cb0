//! A message's path from a gateway to the assistant and back.
//!
//! 1. **Instance.** A gateway process speaks for its own instance (a different `instance_id`
//!    is refused); anyone else must name an existing instance.
//! 2. **Authorization**, before any session, agent or model work: the instance's rules
//!    ([`gate::decide`]) on the update's facts and whether its sender id is paired. Ignored
//!    updates get `ignored`; a stranger gets one short refusal per hour, else `ignored`.
//! 3. **Pairing** (`/pair PIN` in a private chat) against the instance's one-time PIN, with
//!    wrong attempts limited per sender; the paired sender is stored in `gateway_peers`.
//! 4. **Chat commands** of paired senders: `/new`, `/agent [ID]`, `/help`.
//! 5. **The turn**: one session per chat (a new one after `/new` or an agent switch), the chat's
//!    agent or the one the message names — which must be one the instance allows and must
//!    exist — resolved to its effective profile; the level is the lowest of the instance's
//!    cap, the agent's level and the message's. No person can approve anything in it. Events
//!    stream to the gateway, redacted, until the turn ends; one turn at a time per chat.
//! 6. **The record**: the final answer to an update with an `update_id` is kept
//!    ([`super::replayed`]); the same update sent again gets it back without a second turn.
//!
//! A message of the original wire (no `sender_id`, see
//! [`IncomingMessage::is_original_wire`]) skips steps 2–4: it is answered only when its
//! instance takes such messages and names its author or chat
//! ([`GatewayInstance::accepts_original_wire`]), else `ignored`; its text is never a chat
//! command or a pairing; without `instance_id` it is for instance `default`; a `session_id`
//! of another instance is not continued. Its turn is step 5 unchanged: at most the instance's
//! cap, nobody can approve anything.
//!
//! Nobody inside a command of a turn sends messages (it could otherwise claim a paired sender
//! or a named author and run a turn above its own level). The answer is the final event alone,
//! one line, unless the message asks for `stream`.

use super::peer::Identity;
use super::{GatewayError, Host, now, redacted};
use crate::command_peer::Caller;
use sayri_core::assistant::{CoreError, RemoteRequest};
use sayri_core::domain::gateway::gate::{self, ChatCommand, Update, Verdict};
use sayri_core::domain::gateway::instance::DEFAULT_ID;
use sayri_core::domain::gateway::{GatewayInstance, PairOutcome};
use sayri_core::engine::{CoreEvent, EventSink};
use sayri_core::sync::lock;
use sayri_protocol::event::turns::Hint;
use sayri_protocol::legacy::{IncomingMessage, ReplyEvent};
use sayri_store::GatewayChat;

use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

/// The connection the answer is written to.
struct Out {
    stream: UnixStream,
    gone: bool,
    /// The client asked for the turn's events; otherwise only the final one is written.
    streaming: bool,
}

impl Out {
    /// Writes one event (a non-final one only when streaming); after the first failure (the
    /// client left) nothing more is written.
    async fn send(&mut self, ev: &ReplyEvent) -> bool {
        if !self.streaming && !ev.is_final() {
            return !self.gone;
        }
        if !self.gone && self.stream.write_all(&ev.to_line()).await.is_err() {
            self.gone = true;
        }
        !self.gone
    }
}

/// Answers message `msg` from `who` on `stream`, then closes it.
pub async fn handle(state: &dyn Host, who: &Identity, msg: IncomingMessage, stream: UnixStream) {
    let mut out = Out {
        stream,
        gone: false,
        streaming: msg.stream,
    };
    let reply = match instance_for(state, who, &msg) {
        Ok(inst) if msg.is_original_wire() => {
            Some(original_wire(state, &inst, &msg, &mut out).await)
        }
        Ok(inst) => answer(state, &inst, &msg, &mut out).await,
        Err(e) => Some(ReplyEvent::error(e)),
    };
    if let Some(ev) = reply {
        out.send(&ev).await;
    }
    let _ = out.stream.shutdown().await;
}

/// The instance a message is for (step 1).
fn instance_for(
    state: &dyn Host,
    who: &Identity,
    msg: &IncomingMessage,
) -> Result<GatewayInstance, String> {
    let id = match (who, msg.instance_id.as_deref()) {
        (Identity::Local(Caller::Command), _) => {
            tracing::warn!("a program inside a command of a turn sent a gateway message; refused");
            return Err(
                "a program running inside a command of Sayri cannot send gateway messages".into(),
            );
        }
        (Identity::Gateway(own), Some(named)) if named != own => {
            tracing::warn!("gateway {own} sent a message for instance {named}; refused");
            return Err(format!(
                "this gateway process belongs to instance {own} and cannot send messages for {named}"
            ));
        }
        (Identity::Gateway(own), _) => own.clone(),
        (Identity::Local(_), Some(named)) => named.to_string(),
        (Identity::Local(_), None) if msg.is_original_wire() => DEFAULT_ID.to_string(),
        (Identity::Local(_), None) => {
            return Err(
                "name the gateway instance in `instance_id` (see `sayri gateway list`)".into(),
            );
        }
    };
    super::load(state, &id).map_err(|e| match e {
        GatewayError::Unknown(_) => e.to_string(),
        other => format!("gateway instance {id}: {other}"),
    })
}

/// Steps 2–5: the final event to write.
async fn answer(
    state: &dyn Host,
    inst: &GatewayInstance,
    msg: &IncomingMessage,
    out: &mut Out,
) -> Option<ReplyEvent> {
    let brain = match state.brain() {
        Ok(b) => b,
        Err(e) => return Some(ReplyEvent::error(e.message)),
    };
    let update = Update::of(msg);
    let person = update.person();
    let paired = person.is_some_and(|p| {
        brain
            .db(|s| s.is_peer_authorized(p, &inst.id))
            .unwrap_or_else(|e| {
                tracing::error!(
                    "gateway {}: cannot read its peers ({e}); not answering",
                    inst.id
                );
                false
            })
    });
    let verdict = gate::decide(inst, &update, paired);
    let sender = person.unwrap_or("-");
    let chat_id = msg.chat_id.clone().unwrap_or_default();
    match verdict {
        Verdict::Ignore(why) => {
            tracing::info!(
                "gateway {}: ignored an update from {sender}: {why}",
                inst.id
            );
            Some(ReplyEvent::Ignored { reason: why.into() })
        }
        Verdict::Refuse => Some(limited(state, inst, sender, gate::refusal_text(&inst.id))),
        Verdict::PairOnlyInPrivate => Some(limited(
            state,
            inst,
            sender,
            gate::PAIR_ONLY_IN_PRIVATE.into(),
        )),
        Verdict::Pair(code) => Some(super::replayed::recorded(state, inst, msg).unwrap_or_else(
            || {
                let r = pair(state, inst, sender, &code, &msg.author);
                super::replayed::record(state, inst, msg, &r);
                r
            },
        )),
        Verdict::AlreadyPaired => Some(command_done(gate::ALREADY_PAIRED, "pair")),
        Verdict::NoText => Some(ReplyEvent::done(gate::ONLY_TEXT)),
        Verdict::Command(c) => {
            let chat_lock = state.gateways().chat_lock(&inst.id, &chat_id);
            let _held = chat_lock.lock().await;
            if let Some(r) = super::replayed::recorded(state, inst, msg) {
                return Some(r);
            }
            let r = chat_command(state, inst, &chat_id, c);
            super::replayed::record(state, inst, msg, &r);
            Some(r)
        }
        Verdict::Turn => {
            // Under the chat's lock: an update sent again while its first turn still runs
            // waits for it and gets its answer.
            let chat_lock = state.gateways().chat_lock(&inst.id, &chat_id);
            let _held = chat_lock.lock().await;
            if let Some(r) = super::replayed::recorded(state, inst, msg) {
                return Some(r);
            }
            let r = turn(state, inst, msg, &chat_id, out).await;
            super::replayed::record(state, inst, msg, &r);
            Some(r)
        }
    }
}

/// An original-wire message (see the module rules): the final event.
async fn original_wire(
    state: &dyn Host,
    inst: &GatewayInstance,
    msg: &IncomingMessage,
    out: &mut Out,
) -> ReplyEvent {
    if !inst.accepts_original_wire(&msg.author, msg.chat_id.as_deref()) {
        let reason = if inst.legacy {
            format!(
                "gateway instance {} does not accept this author or chat; add it to the instance's legacy_authors or legacy_chats",
                inst.id
            )
        } else {
            format!(
                "gateway instance {} does not take messages without a sender id; turn on its `legacy` and name the accepted `legacy_authors` or `legacy_chats` (gateway_save)",
                inst.id
            )
        };
        tracing::warn!(
            "gateway {}: ignored a message without sender id from author {:?}: {reason}",
            inst.id,
            redacted(state, &msg.author)
        );
        return ReplyEvent::Ignored { reason };
    }
    if msg.text.trim().is_empty() {
        return ReplyEvent::done(gate::ONLY_TEXT);
    }
    let chat = original_chat_key(msg);
    let chat_lock = state.gateways().chat_lock(&inst.id, &chat);
    let _held = chat_lock.lock().await;
    turn(state, inst, msg, &chat, out).await
}

/// The chat an original-wire message belongs to: its `chat_id`, else one per author
/// (`author-<name>`, characters other than letters, digits, `-` and `_` as `_`).
fn original_chat_key(msg: &IncomingMessage) -> String {
    if let Some(c) = msg.chat_id.as_deref().filter(|c| !c.is_empty()) {
        return c.to_string();
    }
    let name: String = msg
        .author
        .trim()
        .chars()
        .take(40)
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("author-{name}")
}

fn command_done(text: impl Into<String>, command: &str) -> ReplyEvent {
    ReplyEvent::Done {
        ok: true,
        text: text.into(),
        command: Some(command.into()),
    }
}

/// A reply to someone who is not paired: at most one per hour per sender, else nothing.
fn limited(state: &dyn Host, inst: &GatewayInstance, sender: &str, text: String) -> ReplyEvent {
    if lock(&state.gateways().refusals).allow(&inst.id, sender, now()) {
        tracing::info!(
            "gateway {}: told unpaired sender {sender} how to pair",
            inst.id
        );
        ReplyEvent::done(text)
    } else {
        ReplyEvent::Ignored {
            reason: "the sender is not paired and was answered within the last hour".into(),
        }
    }
}

/// A pairing attempt (step 3).
fn pair(
    state: &dyn Host,
    inst: &GatewayInstance,
    sender: &str,
    code: &str,
    author: &str,
) -> ReplyEvent {
    let at = now();
    let outcome = lock(&state.gateways().pins).try_pair(&inst.id, sender, code, at);
    match outcome {
        PairOutcome::Paired => {
            let stored = state.brain().map_err(|e| e.message).and_then(|b| {
                b.db(|s| s.authorize_peer(sender, &inst.id, &inst.agent, at, "pin", author))
                    .map_err(|e| e.to_string())
            });
            if let Err(e) = stored {
                tracing::error!("gateway {}: pairing {sender} was not stored: {e}", inst.id);
                return ReplyEvent::error("pairing could not be saved; try again with a new PIN");
            }
            tracing::info!("gateway {}: paired sender {sender} with a PIN", inst.id);
            state.bus().emit(&Hint {
                text: format!(
                    "Gateway {} paired with sender {sender} ({})",
                    inst.id,
                    redacted(state, author)
                ),
            });
            command_done(outcome.reply(&inst.id), "pair")
        }
        PairOutcome::Locked { .. } => {
            tracing::warn!(
                "gateway {}: sender {sender} is locked out of pairing",
                inst.id
            );
            limited(state, inst, sender, outcome.reply(&inst.id))
        }
        _ => {
            tracing::warn!(
                "gateway {}: wrong pairing PIN from sender {sender}",
                inst.id
            );
            command_done(outcome.reply(&inst.id), "pair")
        }
    }
}

/// A new session id for a chat of `inst`.
fn new_session(inst: &GatewayInstance, chat_id: &str) -> String {
    let tag = uuid::Uuid::new_v4().simple().to_string();
    format!("remote-{}-{chat_id}-{}", inst.id, &tag[..8])
}

/// The chat's session and agent: stored ones (the agent if the instance still allows it), or a
/// new session with the instance's agent.
fn chat_state(state: &dyn Host, inst: &GatewayInstance, chat_id: &str) -> GatewayChat {
    let stored = state
        .brain()
        .ok()
        .and_then(|b| b.db(|s| s.gateway_chat(&inst.id, chat_id)).ok().flatten());
    match stored {
        Some(c) if inst.allows_agent(&c.agent_id) => c,
        _ => GatewayChat {
            session_id: new_session(inst, chat_id),
            agent_id: inst.agent.clone(),
        },
    }
}

fn save_chat(state: &dyn Host, inst: &GatewayInstance, chat_id: &str, chat: &GatewayChat) {
    if let Ok(b) = state.brain()
        && let Err(e) = b.db(|s| s.set_gateway_chat(&inst.id, chat_id, chat, now()))
    {
        tracing::error!("gateway {}: the chat's session was not saved: {e}", inst.id);
    }
}

/// A paired sender's chat command (step 4).
fn chat_command(
    state: &dyn Host,
    inst: &GatewayInstance,
    chat_id: &str,
    c: ChatCommand,
) -> ReplyEvent {
    let mut chat = chat_state(state, inst, chat_id);
    let name = c.name();
    let text = match c {
        ChatCommand::New => {
            chat.session_id = new_session(inst, chat_id);
            save_chat(state, inst, chat_id, &chat);
            "New conversation started.".to_string()
        }
        ChatCommand::Agent(None) => agents_text(state, inst, &chat.agent_id),
        ChatCommand::Agent(Some(id)) => {
            let usable =
                inst.allows_agent(&id) && state.brain().is_ok_and(|b| b.core.resolve(&id).is_ok());
            if usable {
                chat = GatewayChat {
                    session_id: new_session(inst, chat_id),
                    agent_id: id.clone(),
                };
                save_chat(state, inst, chat_id, &chat);
                format!("Now talking to agent {id}. New conversation started.")
            } else {
                format!(
                    "Agent {id} is not available here. {}",
                    agents_text(state, inst, &chat.agent_id)
                )
            }
        }
        ChatCommand::Help => gate::help_text(&chat.agent_id),
        ChatCommand::Pair(_) => gate::ALREADY_PAIRED.to_string(),
    };
    command_done(text, name)
}

fn agents_text(state: &dyn Host, inst: &GatewayInstance, current: &str) -> String {
    let list: Vec<String> = inst
        .allowed_agents()
        .into_iter()
        .map(|id| {
            let name = state
                .brain()
                .ok()
                .and_then(|b| b.core.resolve(id).ok())
                .map_or_else(|| "unavailable".to_string(), |p| p.name.clone());
            let mark = if id == current { ", current" } else { "" };
            format!("{id} ({name}{mark})")
        })
        .collect();
    format!(
        "Agents you can use here: {}. Switch with /agent ID.",
        list.join(", ")
    )
}

/// Forwards the turn's events to the gateway as [`ReplyEvent`]s, redacted. Never blocks.
struct LegacySink {
    tx: mpsc::UnboundedSender<ReplyEvent>,
    redactor: sayri_vault::SharedRedactor,
}

impl EventSink for LegacySink {
    fn emit(&self, event: CoreEvent) {
        let r = self.redactor.current();
        let red = |s: String| if r.is_empty() { s } else { r.redact(&s) };
        let ev = match event {
            CoreEvent::AssistantDelta(d) => ReplyEvent::Delta { delta: red(d) },
            CoreEvent::ToolStart(c) => ReplyEvent::ToolStart {
                tool: "bash".into(),
                command: red(c),
            },
            CoreEvent::ToolFinish {
                command,
                output,
                exit_code,
            } => ReplyEvent::ToolFinish {
                tool: "bash".into(),
                command: red(command),
                output: red(output),
                exit_code,
            },
            _ => return,
        };
        let _ = self.tx.send(ev);
    }
}

/// What a turn runs as: the agent, its level and the session (step 5).
struct TurnPlan {
    agent_id: String,
    level: sayri_protocol::SandboxLevel,
    session_id: String,
}

/// Chooses the agent, the level and the session of a turn; an agent the instance does not
/// allow or that does not exist, or a session of another instance, is an error.
fn plan_turn(
    state: &dyn Host,
    inst: &GatewayInstance,
    msg: &IncomingMessage,
    chat_id: &str,
) -> Result<TurnPlan, String> {
    let brain = state.brain().map_err(|e| e.message)?;
    let mut chat = chat_state(state, inst, chat_id);
    if let Some(asked) = &msg.target_agent
        && asked != &chat.agent_id
    {
        if !inst.allows_agent(asked) {
            return Err(format!(
                "agent {asked} is not allowed for gateway {} (it may use: {})",
                inst.id,
                inst.allowed_agents().join(", ")
            ));
        }
        chat = GatewayChat {
            session_id: new_session(inst, chat_id),
            agent_id: asked.clone(),
        };
    }
    let agent = brain.core.resolve(&chat.agent_id).map_err(|e| match e {
        CoreError::UnknownAgent(id) => format!(
            "agent {id} of gateway {} does not exist; change it with `sayri gateway edit {} --agent ID`",
            inst.id, inst.id
        ),
        other => other.to_string(),
    })?;
    let level = inst.level_for(msg.sandbox_level, agent.sandbox.level);
    if let Some(s) = &msg.session_id {
        let own = s.starts_with(&format!("remote-{}-", inst.id));
        if !own && msg.is_original_wire() {
            // The original gateways name sessions of their own: the chat's session is used.
            tracing::info!(
                "gateway {}: session {s} is not one of this instance; the chat's session is used",
                inst.id
            );
        } else if !own {
            return Err(format!(
                "session {s} does not belong to gateway {}; leave session_id out",
                inst.id
            ));
        } else {
            chat.session_id = s.clone();
        }
    }
    save_chat(state, inst, chat_id, &chat);
    Ok(TurnPlan {
        agent_id: chat.agent_id,
        level,
        session_id: chat.session_id,
    })
}

/// Runs the turn, streaming its events; returns the final one (`done` or `error`).
async fn turn(
    state: &dyn Host,
    inst: &GatewayInstance,
    msg: &IncomingMessage,
    chat_id: &str,
    out: &mut Out,
) -> ReplyEvent {
    let plan = match plan_turn(state, inst, msg, chat_id) {
        Ok(p) => p,
        Err(e) => return ReplyEvent::error(e),
    };
    let brain = match state.brain() {
        Ok(b) => b.clone(),
        Err(e) => return ReplyEvent::error(e.message),
    };
    tracing::info!(
        "gateway {}: turn for sender {} in {} with agent {} at {}",
        inst.id,
        msg.sender_id.as_deref().unwrap_or("-"),
        plan.session_id,
        plan.agent_id,
        plan.level
    );
    out.send(&ReplyEvent::Start {
        session_id: plan.session_id.clone(),
    })
    .await;
    let cancel = state.shutdown().child_token();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = LegacySink {
        tx,
        redactor: brain.redactor.clone(),
    };
    let request = RemoteRequest {
        text: msg.text.clone(),
        author: if msg.author.trim().is_empty() {
            "User".into()
        } else {
            msg.author.clone()
        },
        target_agent_id: Some(plan.agent_id),
        sandbox_level: Some(plan.level),
        instance_id: inst.id.clone(),
        session_id: Some(plan.session_id),
        cancel: cancel.clone(),
    };
    let core = brain.clone();
    let run = async move {
        let sink = sink;
        core.core.process_remote_message(request, &sink).await
    };
    let forward = async {
        while let Some(ev) = rx.recv().await {
            if !out.send(&ev).await {
                // The gateway went away: nobody can receive the answer.
                cancel.cancel();
            }
        }
    };
    let (result, ()) = tokio::join!(run, forward);
    match result {
        Ok(o) if o.cancelled => ReplyEvent::error(super::replayed::INTERRUPTED),
        Ok(o) => match o.error {
            Some(e) => ReplyEvent::error(redacted(state, &e)),
            None => ReplyEvent::done(redacted(state, &o.text.unwrap_or_default())),
        },
        Err(e) => ReplyEvent::error(redacted(state, &e.to_string())),
    }
}
