//! A speech stream backed by a child process that reads text lines on stdin and writes raw
//! 16-bit mono PCM on stdout (Piper with `--output-raw`, espeak-ng with `--stdout`). A reader
//! thread resamples the audio to 16 kHz as it arrives; cancelling kills the process, so
//! synthesis stops at once, not only playback.

use crate::audio::resample::{ResampleError, StreamResampler};
use sayri_core::ports::speech::{SpeechError, SpeechStream};
use std::io::{Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

/// How the process's stdout starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Raw samples at this rate from the first byte.
    Raw(u32),
    /// A WAV header (rate read from it), then samples.
    Wav,
}

/// A running synthesis process.
pub struct ProcessStream {
    engine: &'static str,
    child: Mutex<Option<Child>>,
    stdin: Mutex<Option<ChildStdin>>,
    audio: Mutex<Receiver<Result<Vec<i16>, ResampleError>>>,
    stderr: Arc<Mutex<String>>,
    finished: AtomicBool,
    cancelled: AtomicBool,
}

impl ProcessStream {
    /// Wraps a spawned `child` (stdin, stdout and stderr piped) and starts its reader threads.
    pub fn start(
        engine: &'static str,
        mut child: Child,
        framing: Framing,
    ) -> Result<ProcessStream, SpeechError> {
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| SpeechError::Failed(format!("{engine}: no stdout pipe")))?;
        let stderr_buf = Arc::new(Mutex::new(String::new()));
        if let Some(mut err) = child.stderr.take() {
            let buf = stderr_buf.clone();
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = err.read_to_string(&mut s);
                if let Ok(mut b) = buf.lock() {
                    *b = s;
                }
            });
        }
        let (tx, rx) = channel();
        std::thread::spawn(move || read_audio(stdout, framing, tx));
        Ok(ProcessStream {
            engine,
            stdin: Mutex::new(child.stdin.take()),
            child: Mutex::new(Some(child)),
            audio: Mutex::new(rx),
            stderr: stderr_buf,
            finished: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
        })
    }

    fn failure(&self) -> Option<SpeechError> {
        let mut child = self.child.lock().ok()?;
        let status = child.as_mut()?.wait().ok()?;
        if status.success() {
            return None;
        }
        let err = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let tail: String = err
            .lines()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" | ");
        Some(SpeechError::Failed(format!(
            "{} failed ({status}): {}",
            self.engine,
            tail.chars().take(300).collect::<String>()
        )))
    }
}

fn read_audio(mut out: impl Read, framing: Framing, tx: Sender<Result<Vec<i16>, ResampleError>>) {
    let rate = match framing {
        Framing::Raw(r) => r,
        Framing::Wav => {
            let mut header = [0u8; 44];
            if out.read_exact(&mut header).is_err() {
                return;
            }
            u32::from_le_bytes([header[24], header[25], header[26], header[27]])
        }
    };
    let mut resampler = match StreamResampler::new(rate) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let mut buf = vec![0u8; 8192];
    let mut odd: Option<u8> = None;
    loop {
        let n = match out.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut bytes: Vec<u8> = odd.take().into_iter().collect();
        bytes.extend_from_slice(&buf[..n]);
        if bytes.len() % 2 == 1 {
            odd = bytes.pop();
        }
        let samples: Vec<i16> = bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        let chunk = resampler.push(&samples);
        if !chunk.is_empty() && tx.send(Ok(chunk)).is_err() {
            return;
        }
    }
    let tail = resampler.finish();
    if !tail.is_empty() {
        let _ = tx.send(Ok(tail));
    }
}

impl SpeechStream for ProcessStream {
    fn next_chunk(&self) -> Result<Option<Vec<i16>>, SpeechError> {
        if self.cancelled.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let msg = match self.audio.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return Ok(None),
        };
        match msg {
            Ok(Ok(chunk)) if !self.cancelled.load(Ordering::SeqCst) => Ok(Some(chunk)),
            Ok(Ok(_)) => Ok(None),
            Ok(Err(e)) => Err(SpeechError::Failed(format!("{}: {e}", self.engine))),
            Err(_) => match self.failure() {
                Some(e) if !self.cancelled.load(Ordering::SeqCst) => Err(e),
                _ => Ok(None),
            },
        }
    }

    fn push_text(&self, text: &str) -> Result<(), SpeechError> {
        if self.finished.load(Ordering::SeqCst) || self.cancelled.load(Ordering::SeqCst) {
            return Err(SpeechError::Failed(format!(
                "{}: speech already finished",
                self.engine
            )));
        }
        let line = text.replace(['\n', '\r'], " ");
        if line.trim().is_empty() {
            return Ok(());
        }
        let mut guard = self
            .stdin
            .lock()
            .map_err(|_| SpeechError::Failed(format!("{}: stdin lock poisoned", self.engine)))?;
        let stdin = guard
            .as_mut()
            .ok_or_else(|| SpeechError::Failed(format!("{}: stdin closed", self.engine)))?;
        writeln!(stdin, "{}", line.trim())
            .and_then(|_| stdin.flush())
            .map_err(|e| SpeechError::Failed(format!("{} stopped reading text: {e}", self.engine)))
    }

    fn finish(&self) {
        self.finished.store(true, Ordering::SeqCst);
        if let Ok(mut s) = self.stdin.lock() {
            *s = None;
        }
    }

    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Ok(mut s) = self.stdin.lock() {
            *s = None;
        }
        if let Ok(mut child) = self.child.lock()
            && let Some(c) = child.as_mut()
        {
            let _ = c.kill();
        }
    }
}

impl Drop for ProcessStream {
    fn drop(&mut self) {
        if let Ok(mut s) = self.stdin.lock() {
            *s = None;
        }
        if let Ok(mut child) = self.child.lock()
            && let Some(mut c) = child.take()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
