//! The event bus: the client registry and the [`Broadcaster`]; every event goes to every
//! connected client. It sits below everything that publishes events — the brain, the voice
//! loop, routines, gateways — and the server that registers connections, and imports none of
//! them.
//!
//! Each client has a bounded outbound queue ([`CLIENT_QUEUE_FRAMES`] frames and
//! [`CLIENT_QUEUE_BYTES`] bytes, whichever is reached first). Broadcasting never
//! waits: a frame is encoded once and offered to each queue with `try_send`. A client whose queue
//! is full has stopped reading; it is dropped (its connection is closed) with a log line, and
//! nobody else is affected. Frames are whole NDJSON lines, written one at a time by the client's
//! writer task, so a client never sees half a frame followed by another frame.

use bytes::Bytes;
use sayri_core::sync::lock;
use sayri_protocol::event::EventPayload;
use sayri_protocol::{Event, ndjson};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Capacity of each client's outbound queue, in frames (responses and events).
pub const CLIENT_QUEUE_FRAMES: usize = 1024;

/// Most bytes queued for one client before it counts as not reading (8 MiB).
pub const CLIENT_QUEUE_BYTES: usize = 8 * 1024 * 1024;

/// Identifies one connection; starts at 1, never reused within a daemon run.
pub type ClientId = u64;

struct Slot {
    tx: mpsc::Sender<Bytes>,
    cancel: CancellationToken,
    queued: Arc<AtomicUsize>,
}

struct Inner {
    clients: Mutex<HashMap<ClientId, Slot>>,
    next_id: AtomicU64,
    capacity: usize,
}

/// A cloneable handle to broadcast events to every connected client, from anywhere in the daemon.
#[derive(Clone)]
pub struct Broadcaster {
    inner: Arc<Inner>,
}

/// What [`Broadcaster::register`] gives a new connection.
pub struct Registration {
    /// The client's id.
    pub id: ClientId,
    /// Sender for this client's own responses (same queue as its events).
    pub tx: mpsc::Sender<Bytes>,
    /// Receiver drained by the client's writer task.
    pub rx: mpsc::Receiver<Bytes>,
    /// Cancelled when the client is dropped or the daemon terminates.
    pub cancel: CancellationToken,
    /// Bytes queued and not yet written: add before sending, subtract after writing.
    pub queued: Arc<AtomicUsize>,
}

impl Default for Broadcaster {
    fn default() -> Self {
        Self::new(CLIENT_QUEUE_FRAMES)
    }
}

impl Broadcaster {
    /// A registry whose per-client queues hold `capacity` frames.
    pub fn new(capacity: usize) -> Self {
        Broadcaster {
            inner: Arc::new(Inner {
                clients: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                capacity: capacity.max(1),
            }),
        }
    }

    fn clients(&self) -> MutexGuard<'_, HashMap<ClientId, Slot>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts and
        // removes), so recovering from poisoning is sound.
        lock(&self.inner.clients)
    }

    /// Registers a new connection; `parent` cancels it too (daemon termination).
    pub fn register(&self, parent: &CancellationToken) -> Registration {
        self.register_greeted(parent, None)
    }

    /// Like [`Broadcaster::register`], with `first` queued before the connection can receive
    /// any broadcast: a client's greeting is always its first line, even while a turn runs.
    pub fn register_greeted(
        &self,
        parent: &CancellationToken,
        first: Option<Bytes>,
    ) -> Registration {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.inner.capacity.max(1));
        let cancel = parent.child_token();
        let queued = Arc::new(AtomicUsize::new(0));
        if let Some(frame) = first {
            let len = frame.len();
            // The channel is new and has room, so this cannot fail.
            if tx.try_send(frame).is_ok() {
                queued.fetch_add(len, Ordering::Relaxed);
            }
        }
        self.clients().insert(
            id,
            Slot {
                tx: tx.clone(),
                cancel: cancel.clone(),
                queued: queued.clone(),
            },
        );
        Registration {
            id,
            tx,
            rx,
            cancel,
            queued,
        }
    }

    /// Removes a client from the broadcast list (its queue drains, then its writer ends).
    pub fn unregister(&self, id: ClientId) {
        self.clients().remove(&id);
    }

    /// Removes every client from the broadcast list (used at shutdown after the last event).
    pub fn unregister_all(&self) {
        self.clients().clear();
    }

    /// Number of connected clients.
    pub fn client_count(&self) -> usize {
        self.clients().len()
    }

    /// Broadcasts `event` (a type of `sayri_protocol::event`) to every client. Returns how
    /// many queues took it.
    pub fn emit<E: EventPayload>(&self, event: &E) -> usize {
        match sayri_protocol::event::frame(event) {
            Ok(frame) => self.send_event(&frame),
            Err(e) => {
                tracing::error!("cannot encode event {}: {e}", E::NAME);
                0
            }
        }
    }

    /// Broadcasts a frame made elsewhere (one redacted after it was built). Returns how many
    /// queues took it.
    pub fn send_event(&self, event: &Event) -> usize {
        match ndjson::encode_line(event) {
            Ok(line) => self.send_frame(Bytes::from(line)),
            Err(e) => {
                tracing::error!("cannot encode event {}: {e}", event.event);
                0
            }
        }
    }

    /// Offers one encoded line to every client without waiting.
    pub fn send_frame(&self, frame: Bytes) -> usize {
        let mut clients = self.clients();
        let mut delivered = 0;
        let mut dropped = Vec::new();
        for (id, slot) in clients.iter() {
            if slot.queued.load(Ordering::Relaxed) + frame.len() > CLIENT_QUEUE_BYTES {
                tracing::warn!(
                    client = id,
                    "dropping client {id}: more than {CLIENT_QUEUE_BYTES} bytes are waiting for it (it stopped reading)"
                );
                slot.cancel.cancel();
                dropped.push(*id);
                continue;
            }
            match slot.tx.try_send(frame.clone()) {
                Ok(()) => {
                    slot.queued.fetch_add(frame.len(), Ordering::Relaxed);
                    delivered += 1;
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(
                        client = id,
                        "dropping client {id}: its outbound queue of {} frames is full (it stopped reading)",
                        self.inner.capacity
                    );
                    slot.cancel.cancel();
                    dropped.push(*id);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => dropped.push(*id),
            }
        }
        for id in dropped {
            clients.remove(&id);
        }
        delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sayri_protocol::event::turns::{AssistantDelta, Busy};

    #[test]
    fn a_full_queue_drops_only_that_client() {
        let b = Broadcaster::new(4);
        let root = CancellationToken::new();
        let mut reader = b.register(&root);
        let stuck = b.register(&root);
        for i in 0..10 {
            b.emit(&Busy { active: true });
            // The reading client drains as it goes.
            while let Ok(f) = reader.rx.try_recv() {
                reader.queued.fetch_sub(f.len(), Ordering::Relaxed);
            }
            assert_eq!(
                b.client_count(),
                if i < 4 { 2 } else { 1 },
                "after {} events",
                i + 1
            );
        }
        assert!(stuck.cancel.is_cancelled());
        assert!(!reader.cancel.is_cancelled());
    }

    #[test]
    fn the_byte_budget_drops_a_client_before_the_frame_count_does() {
        let b = Broadcaster::new(1024);
        let root = CancellationToken::new();
        let stuck = b.register(&root);
        let big = AssistantDelta {
            delta: "x".repeat(1024 * 1024),
        };
        for _ in 0..8 {
            b.emit(&big);
        }
        assert_eq!(b.client_count(), 0);
        assert!(stuck.cancel.is_cancelled());
    }
}
