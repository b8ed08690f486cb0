//! One client connection: a reader that frames and dispatches requests, and a writer that drains
//! the client's bounded outbound queue.
//!
//! * Framing is by `\n` whatever the reads ([`LineFramer`]); a line over 1 MiB is answered with
//!   `line_too_long` and skipped, and the reader resynchronises on the next line.
//! * Invalid lines get `ok:false`/`bad_request`, with the `id` when it can be recovered.
//! * Each request is routed by the [`Dispatcher`]: its access class is checked against who the
//!   peer is ([`command_peer::caller_of`]) before its params are even parsed.
//! * At most [`MAX_IN_FLIGHT`] task-mode requests run per connection; beyond that the reader
//!   stops reading (backpressure on that client only).
//! * When the client half-closes, in-flight requests finish and are answered, then the
//!   connection closes. When it goes away or is dropped, in-flight requests are aborted.

use crate::bus::Registration;
use crate::command_peer;
use crate::daemon::dispatch::{Ctx, Dispatcher, Entry, Mode};
use crate::daemon::state::DaemonState;
use crate::daemon::status::build_status;
use bytes::Bytes;
use sayri_protocol::event::{self, window::Ready};
use sayri_protocol::ndjson::{self, Frame, LineFramer};
use sayri_protocol::{ErrorCode, ProtocolError, Request, Response};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Most concurrently running task-mode requests per connection.
pub const MAX_IN_FLIGHT: usize = 64;
const READ_CHUNK: usize = 64 * 1024;

/// Serves one accepted, already authenticated connection until it ends.
pub async fn serve(stream: UnixStream, state: Arc<DaemonState>, dispatcher: Arc<Dispatcher>) {
    // Greeting: the `ready` event with the status object, so a client knows it is accepted.
    // It is queued before the connection joins the broadcast list, so no event of a running
    // turn can come before it; `clients` counts this connection too.
    let mut info = build_status(&state);
    info.clients += 1;
    let greeting = match event::frame(&Ready { info }) {
        Ok(frame) => encode(&frame),
        Err(e) => encode(&Response::err(
            ProtocolError::internal(format!("cannot encode the greeting: {e}")),
            Value::Null,
        )),
    };
    let Registration {
        id,
        tx,
        rx,
        cancel,
        queued,
    } = state
        .broadcaster
        .register_greeted(&state.terminate, Some(greeting));
    let tx = Outbox { tx, queued };
    let front_ends = crate::daemon::commands::ui::front_end_keepers(&state);
    let caller =
        command_peer::caller_outside(stream.peer_cred().ok().and_then(|c| c.pid()), &front_ends);
    tracing::debug!(client = id, ?caller, "client connected");
    let (mut rd, wr) = stream.into_split();

    let writer = tokio::spawn(write_loop(wr, rx, cancel.clone(), tx.queued.clone()));
    let ctx = Ctx {
        daemon: state.clone(),
        client: id,
        client_gone: cancel.clone(),
        caller,
        limits: Arc::default(),
    };
    read_loop(&mut rd, tx, ctx, &dispatcher, &state.closing).await;
    // Stop broadcasting to it; the writer drains what is queued, then ends. The socket closes
    // only after the slot is gone (`rd` is dropped last).
    state.broadcaster.unregister(id);
    let _ = writer.await;
    cancel.cancel();
    drop(rd);
    tracing::debug!(client = id, "client disconnected");
}

fn encode<T: serde::Serialize>(msg: &T) -> Bytes {
    match ndjson::encode_line(msg) {
        Ok(v) => Bytes::from(v),
        Err(e) => Bytes::from(format!(
            "{{\"ok\":false,\"error\":\"cannot encode message: {e}\",\"code\":\"internal\",\"id\":null}}\n"
        )),
    }
}

/// A client's queue as seen by its reader and request tasks (responses are never dropped; they
/// wait for room, which only slows down that client's own requests).
#[derive(Clone)]
struct Outbox {
    tx: mpsc::Sender<Bytes>,
    queued: Arc<AtomicUsize>,
}

impl Outbox {
    async fn send(&self, frame: Bytes) -> Result<(), ()> {
        let len = frame.len();
        self.queued.fetch_add(len, Ordering::Relaxed);
        self.tx.send(frame).await.map_err(|_| {
            self.queued.fetch_sub(len, Ordering::Relaxed);
        })
    }
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Bytes>,
    cancel: CancellationToken,
    queued: Arc<AtomicUsize>,
) {
    loop {
        let frame = tokio::select! {
            _ = cancel.cancelled() => break,
            f = rx.recv() => match f { Some(f) => f, None => break },
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            r = wr.write_all(&frame) => if r.is_err() { break },
        }
        queued.fetch_sub(frame.len(), Ordering::Relaxed);
    }
    // Whatever ended the writer ends the connection.
    cancel.cancel();
    let _ = wr.shutdown().await;
}

/// The reader's per-connection state for running requests.
struct Runner<'a> {
    tx: Outbox,
    ctx: Ctx,
    dispatcher: &'a Dispatcher,
    tasks: JoinSet<()>,
    limit: Arc<Semaphore>,
}

/// The client is gone (its queue closed or it disconnected): stop reading.
struct Gone;

async fn read_loop(
    rd: &mut OwnedReadHalf,
    tx: Outbox,
    ctx: Ctx,
    dispatcher: &Dispatcher,
    closing: &CancellationToken,
) {
    let mut framer = LineFramer::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut frames = Vec::new();
    let gone = ctx.client_gone.clone();
    let mut runner = Runner {
        tx,
        ctx,
        dispatcher,
        tasks: JoinSet::new(),
        limit: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
    };
    loop {
        let n = tokio::select! {
            _ = gone.cancelled() => return, // dropping `tasks` aborts in-flight requests
            _ = closing.cancelled() => return,
            Some(_) = runner.tasks.join_next(), if !runner.tasks.is_empty() => continue,
            r = rd.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
        };
        framer.push(&buf[..n], &mut frames);
        for frame in frames.drain(..) {
            if runner.frame(frame).await.is_err() {
                return;
            }
        }
    }
    // Half-closed: let in-flight requests finish and answer.
    while !runner.tasks.is_empty() {
        tokio::select! {
            _ = gone.cancelled() => return,
            _ = closing.cancelled() => return,
            _ = runner.tasks.join_next() => {}
        }
    }
}

impl Runner<'_> {
    async fn answer(&self, resp: Response) -> Result<(), Gone> {
        self.tx.send(encode(&resp)).await.map_err(|()| Gone)
    }

    /// One frame: answers a bad line, or routes the request (access class first) and runs it.
    async fn frame(&mut self, frame: Frame) -> Result<(), Gone> {
        let line = match frame {
            Frame::TooLong => {
                return self
                    .answer(Response::err(ndjson::line_too_long_error(), Value::Null))
                    .await;
            }
            Frame::Line(line) => line,
        };
        let req = match ndjson::decode_request(&line) {
            None => return Ok(()),
            Some(Ok(req)) => req,
            Some(Err(bad)) => return self.answer(Response::err(bad.error, bad.id)).await,
        };
        let entry = match self
            .dispatcher
            .route(&req.cmd, self.ctx.caller, &self.ctx.limits)
        {
            Ok(entry) => entry.clone(),
            Err(err) => {
                if err.code == ErrorCode::Denied {
                    tracing::warn!(cmd = %req.cmd, caller = ?self.ctx.caller, "refused a command this connection may not use");
                }
                return self.answer(Response::err(err, req.id)).await;
            }
        };
        self.run(entry, req).await
    }

    /// Runs a routed request inline (answered before the next line is read) or in its own task
    /// (waiting for one of the [`MAX_IN_FLIGHT`] slots).
    async fn run(&mut self, entry: Entry, req: Request) -> Result<(), Gone> {
        let Request { params, id, .. } = req;
        let call = (entry.handler)(params, self.ctx.clone());
        match entry.mode {
            Mode::Inline => self.answer(respond(call.await, id)).await,
            Mode::Task => {
                let permit = tokio::select! {
                    _ = self.ctx.client_gone.cancelled() => return Err(Gone),
                    p = self.limit.clone().acquire_owned() => p.map_err(|_| Gone)?,
                };
                let tx = self.tx.clone();
                self.tasks.spawn(async move {
                    let _ = tx.send(encode(&respond(call.await, id))).await;
                    drop(permit);
                });
                Ok(())
            }
        }
    }
}

fn respond(result: Result<Value, ProtocolError>, id: Value) -> Response {
    match result {
        Ok(v) => Response::ok(v, id),
        Err(e) => Response::err(e, id),
    }
}
