//! A raw PCM microphone: signed 16-bit little-endian, 16 kHz, mono, read live from a FIFO or
//! a file another program writes (`stt.mic_device = "pipe:/path"`) — what `parec`/`pw-record
//! --raw` produce, and the test adapter of the audio-source port.
//!
//! It fails the way a sound card does, and says so:
//! * no bytes for [`STALL`]: [`AudioError::DeviceLost`] "no audio for 1.5 s" (the writer hangs,
//!   the device vanished);
//! * the writer closed it: `DeviceLost` "the input ended";
//! * the path does not exist (yet): `DeviceLost` "it does not exist" — opening never fails, so
//!   the voice loop waits for it instead of giving up at start.
//!
//! [`AudioSource::reopen`] opens the path again when its writer had closed it (a stalled writer
//! keeps its pipe) and waits up to [`REOPEN_WAIT`] for bytes (a FIFO with no writer blocks
//! there, using no CPU).

use sayri_core::ports::audio::{AudioError, AudioSource};
use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Silence of the writer after which the input counts as lost.
pub const STALL: Duration = Duration::from_millis(1500);
/// How long one reopen attempt waits for the first bytes.
pub const REOPEN_WAIT: Duration = Duration::from_secs(1);

/// A live raw-PCM microphone at a path.
pub struct PipeSource {
    path: PathBuf,
    file: Option<File>,
    /// A byte of a sample whose second byte has not arrived.
    odd: Option<u8>,
}

impl PipeSource {
    /// The source at `path`; nothing is opened until the loop reads.
    pub fn new(path: impl Into<PathBuf>) -> PipeSource {
        PipeSource {
            path: path.into(),
            file: None,
            odd: None,
        }
    }

    fn lost(&self, reason: &str) -> AudioError {
        AudioError::DeviceLost {
            device: self.name(),
            reason: reason.into(),
        }
    }

    /// Opens the path without blocking (a FIFO without a writer opens at once).
    fn open_now(&mut self) -> Result<(), AudioError> {
        if !self.path.exists() {
            return Err(self.lost("it does not exist"));
        }
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc_nonblock())
            .open(&self.path)
            .map_err(|e| self.lost(&format!("cannot open it: {e}")))?;
        self.file = Some(f);
        self.odd = None;
        Ok(())
    }

    /// Waits up to `limit` for bytes: `Ok(true)` readable, `Ok(false)` timed out, `Err` hung up
    /// with nothing to read.
    fn wait_readable(&self, limit: Duration) -> Result<bool, AudioError> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let Some(f) = &self.file else {
            return Err(self.lost("it is closed"));
        };
        let mut fds = [PollFd::new(f.as_fd(), PollFlags::POLLIN)];
        let ms = u16::try_from(limit.as_millis()).unwrap_or(u16::MAX);
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) => Ok(false),
            Ok(_) => {
                let ev = fds[0].revents().unwrap_or(PollFlags::empty());
                if ev.contains(PollFlags::POLLIN) {
                    Ok(true)
                } else {
                    Err(self.lost("the input ended (its writer closed it)"))
                }
            }
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(e) => Err(self.lost(&format!("cannot wait for it: {e}"))),
        }
    }
}

fn libc_nonblock() -> i32 {
    nix::fcntl::OFlag::O_NONBLOCK.bits()
}

impl AudioSource for PipeSource {
    fn read(&mut self, buf: &mut [i16]) -> Result<usize, AudioError> {
        if self.file.is_none() {
            self.open_now()?;
        }
        let mut filled = 0;
        let mut bytes = vec![0u8; buf.len() * 2];
        let mut last_data = Instant::now();
        while filled < buf.len() {
            let left = STALL.saturating_sub(last_data.elapsed());
            if left.is_zero() {
                // The writer is still there (it may only hang): the pipe stays open, so it is
                // not cut off, and `reopen` waits for its next bytes.
                return Err(self.lost("no audio for 1.5 s"));
            }
            if !self.wait_readable(left)? {
                continue;
            }
            let want = (buf.len() - filled) * 2;
            let n = match self.file.as_mut().map(|f| f.read(&mut bytes[..want])) {
                Some(Ok(0)) => {
                    self.file = None;
                    return Err(self.lost("the input ended (its writer closed it)"));
                }
                Some(Ok(n)) => n,
                Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Some(Err(e)) => return Err(self.lost(&format!("cannot read it: {e}"))),
                None => return Err(self.lost("it is closed")),
            };
            last_data = Instant::now();
            let mut data = &bytes[..n];
            if let Some(lo) = self.odd.take() {
                buf[filled] = i16::from_le_bytes([lo, data[0]]);
                filled += 1;
                data = &data[1..];
            }
            for pair in data.chunks(2) {
                match pair {
                    [lo, hi] => {
                        buf[filled] = i16::from_le_bytes([*lo, *hi]);
                        filled += 1;
                    }
                    [lo] => self.odd = Some(*lo),
                    _ => {}
                }
            }
        }
        Ok(filled)
    }

    fn reopen(&mut self) -> Result<(), AudioError> {
        if self.file.is_none() {
            self.open_now()?;
        }
        if self.wait_readable(REOPEN_WAIT)? {
            Ok(())
        } else {
            self.file = None;
            Err(self.lost("no writer yet"))
        }
    }

    fn is_live(&self) -> bool {
        true
    }

    fn name(&self) -> String {
        format!("pipe {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn fifo(dir: &std::path::Path) -> PathBuf {
        let p = dir.join("mic.fifo");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        p
    }

    #[test]
    fn samples_arrive_then_a_stall_and_a_close_are_reported_as_lost_and_a_new_writer_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let mut src = PipeSource::new(&path);
        let p = path.clone();
        let writer = std::thread::spawn(move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            // 320 samples of 1, -2 … in two writes split inside a sample.
            let bytes: Vec<u8> = (0..320i16).flat_map(|i| (i - 100).to_le_bytes()).collect();
            w.write_all(&bytes[..101]).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            w.write_all(&bytes[101..]).unwrap();
            // Then nothing for 2 s, the pipe held open.
            std::thread::sleep(Duration::from_secs(2));
        });
        // The writer is not there yet: the first read waits for it (reopen), then reads.
        let mut buf = [0i16; 320];
        let first = src.read(&mut buf);
        let got = match first {
            Ok(n) => n,
            Err(AudioError::DeviceLost { .. }) => {
                while src.reopen().is_err() {}
                src.read(&mut buf).unwrap()
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(got, 320);
        assert_eq!(buf[0], -100);
        assert_eq!(buf[319], 219);
        let t = Instant::now();
        let stalled = src.read(&mut buf).unwrap_err();
        assert!(stalled.to_string().contains("no audio"), "{stalled}");
        assert!(
            t.elapsed() >= Duration::from_millis(1400),
            "{:?}",
            t.elapsed()
        );
        writer.join().unwrap();
        // The writer has gone: reopening finds no one, reading reports the end.
        assert!(src.reopen().is_err());
        let missing = PipeSource::new(dir.path().join("nothing"))
            .read(&mut buf)
            .unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }
}
