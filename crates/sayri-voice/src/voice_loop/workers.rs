//! The loop's worker threads: speech to text (one thread, jobs in order), the agent (one
//! thread per query) and the speech reader (one per reply). Each reports on one channel,
//! tagged so that the loop can drop results of work it no longer wants.
//!
//! The speech-to-text thread rests its engine ([`SpeechToText::rest`]) once it has had no
//! request for [`STT_REST_AFTER`], and gets it ready again on [`SttRequest::Prepare`] (sent when
//! a query is about to be spoken) or on the next job.

use super::Agent;
use sayri_core::domain::voice::SpeechEvidence;
use sayri_core::ports::speech::{SpeechError, SpeechStream, SpeechToText, Transcript};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the speech-to-text thread goes without a request before it rests its engine.
pub const STT_REST_AFTER: Duration = Duration::from_secs(30);

/// What the speech-to-text thread is asked to do.
pub enum SttRequest {
    /// Transcribe.
    Job(SttJob),
    /// A query is about to be spoken: load what a rest released.
    Prepare,
}

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

/// Starts the transcription thread; requests go in through the returned sender. The engine
/// rests after `rest_after` without a request.
///
/// # Errors
/// The system refused a new thread (out of threads or memory).
pub fn spawn_stt(
    mut stt: Box<dyn SpeechToText>,
    out: Sender<Work>,
    rest_after: Duration,
) -> std::io::Result<Sender<SttRequest>> {
    let (tx, rx): (Sender<SttRequest>, Receiver<SttRequest>) = channel();
    std::thread::Builder::new()
        .name("sayri-stt".into())
        .spawn(move || {
            let mut resting = false;
            loop {
                let job = match rx.recv_timeout(rest_after) {
                    Ok(SttRequest::Job(job)) => job,
                    Ok(SttRequest::Prepare) => {
                        if let Err(e) = stt.prepare() {
                            tracing::warn!(error = %e, "speech to text could not be loaded");
                        }
                        resting = false;
                        continue;
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        if !resting {
                            stt.rest();
                            resting = true;
                        }
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                resting = false;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An engine that logs what the thread asked of it.
    struct Logged(Arc<Mutex<Vec<&'static str>>>);

    impl SpeechToText for Logged {
        fn transcribe(
            &mut self,
            _: &[i16],
            _: &CancellationToken,
        ) -> Result<Transcript, SpeechError> {
            self.0.lock().unwrap().push("transcribe");
            Ok(Transcript::default())
        }
        fn name(&self) -> String {
            "logged".into()
        }
        fn prepare(&mut self) -> Result<(), SpeechError> {
            self.0.lock().unwrap().push("prepare");
            Ok(())
        }
        fn rest(&mut self) {
            self.0.lock().unwrap().push("rest");
        }
    }

    fn job(id: u64) -> SttRequest {
        SttRequest::Job(SttJob {
            id,
            kind: SttKind::Final,
            audio: vec![0; 160],
            evidence: SpeechEvidence::default(),
            cancel: CancellationToken::new(),
        })
    }

    #[test]
    fn the_engine_rests_once_per_quiet_period_and_is_prepared_on_request() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (out, results) = channel();
        let tx = spawn_stt(
            Box::new(Logged(Arc::clone(&log))),
            out,
            Duration::from_millis(60),
        )
        .unwrap();
        tx.send(job(1)).unwrap();
        assert!(matches!(
            results.recv_timeout(Duration::from_secs(5)),
            Ok(Work::Stt { id: 1, .. })
        ));
        std::thread::sleep(Duration::from_millis(400));
        tx.send(SttRequest::Prepare).unwrap();
        tx.send(job(2)).unwrap();
        assert!(matches!(
            results.recv_timeout(Duration::from_secs(5)),
            Ok(Work::Stt { id: 2, .. })
        ));
        drop(tx);
        std::thread::sleep(Duration::from_millis(50));
        let seen = log.lock().unwrap().clone();
        assert_eq!(
            seen,
            ["transcribe", "rest", "prepare", "transcribe"],
            "several quiet periods in a row rest once; a request wakes it"
        );
    }
}
