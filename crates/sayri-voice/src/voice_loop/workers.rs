//! The loop's worker threads: speech to text (one thread, jobs in order), the agent (one
//! thread per query) and the speech reader (one per reply). Each reports on one channel,
//! tagged so that the loop can drop results of work it no longer wants.

use super::Agent;
use sayri_core::domain::voice::SpeechEvidence;
use sayri_core::ports::speech::{SpeechError, SpeechStream, SpeechToText, Transcript};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use tokio_util::sync::CancellationToken;

/// Partial (while speaking) or final transcription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SttKind {
    /// A live partial transcript.
    Partial,
    /// The utterance's transcript.
    Final,
    /// A transcript of the utterance up to a pause, which may become its final one.
    Speculative,
}

/// A transcription job.
pub struct SttJob {
    pub id: u64,
    pub kind: SttKind,
    pub audio: Vec<i16>,
    pub evidence: SpeechEvidence,
    pub cancel: CancellationToken,
}

/// What a worker reports.
pub enum Work {
    Stt {
        id: u64,
        kind: SttKind,
        evidence: SpeechEvidence,
        result: Result<Transcript, SpeechError>,
    },
    AgentText {
        turn: u64,
        text: String,
    },
    AgentDone {
        turn: u64,
        result: Result<String, String>,
    },
    TtsAudio {
        turn: u64,
        chunk: Vec<i16>,
    },
    TtsEnd {
        turn: u64,
        error: Option<String>,
    },
}

/// Starts the transcription thread; jobs go in through the returned sender.
///
/// # Errors
/// The system refused a new thread (out of threads or memory).
pub fn spawn_stt(
    mut stt: Box<dyn SpeechToText>,
    out: Sender<Work>,
) -> std::io::Result<Sender<SttJob>> {
    let (tx, rx): (Sender<SttJob>, Receiver<SttJob>) = channel();
    std::thread::Builder::new()
        .name("sayri-stt".into())
        .spawn(move || {
            for job in rx {
                let result = if job.cancel.is_cancelled() {
                    Err(SpeechError::Cancelled)
                } else {
                    stt.transcribe(&job.audio, &job.cancel)
                };
                let msg = Work::Stt {
                    id: job.id,
                    kind: job.kind,
                    evidence: job.evidence,
                    result,
                };
                if out.send(msg).is_err() {
                    return;
                }
            }
        })?;
    Ok(tx)
}

/// Runs one agent turn on its own thread.
pub fn spawn_agent(
    agent: Arc<dyn Agent>,
    turn: u64,
    query: String,
    cancel: CancellationToken,
    out: Sender<Work>,
) {
    std::thread::spawn(move || {
        let tx = out.clone();
        let mut on_text = |t: &str| {
            let _ = tx.send(Work::AgentText {
                turn,
                text: t.to_string(),
            });
        };
        let result = agent.answer(&query, &cancel, &mut on_text);
        let _ = out.send(Work::AgentDone { turn, result });
    });
}

/// Reads a reply's audio on its own thread until the stream ends or is cancelled.
pub fn spawn_speech_reader(stream: Arc<dyn SpeechStream>, turn: u64, out: Sender<Work>) {
    std::thread::spawn(move || {
        loop {
            match stream.next_chunk() {
                Ok(Some(chunk)) => {
                    if out.send(Work::TtsAudio { turn, chunk }).is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    let _ = out.send(Work::TtsEnd { turn, error: None });
                    return;
                }
                Err(e) => {
                    let _ = out.send(Work::TtsEnd {
                        turn,
                        error: Some(e.to_string()),
                    });
                    return;
                }
            }
        }
    });
}
