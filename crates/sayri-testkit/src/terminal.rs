//! Pseudo-terminals for tests that check what a process can do to the terminal it runs on
//! (`TIOCSTI` typing into it, `/dev/tty`): a [`Pty`] whose output is collected by a thread, and
//! [`own_terminal`] to start a process as a session leader with the pty as its controlling
//! terminal.

use sayri_core::sync::lock;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A Python program that pushes `touch <argv[1]>` into every terminal it can reach with
/// `TIOCSTI` — fds 0, 1, 2 and a fresh open of `/dev/tty` — and prints one line per target:
/// `<target>: INJECTED`, `<target>: <errno name>`, `fdN: not-a-tty` or `/dev/tty: open <errno>`.
/// Always exits 0.
pub const TIOCSTI_PROBE_PY: &str = r#"import errno, fcntl, os, sys, termios
payload = ("touch " + sys.argv[1] + "\n").encode()
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
def push(fd, label, out):
    try:
        for b in payload:
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([b]))
        out.append(label + ": INJECTED")
    except OSError as e:
        out.append(label + ": " + name(e))
out = []
for fd in (0, 1, 2):
    if os.isatty(fd):
        push(fd, "fd%d" % fd, out)
    else:
        out.append("fd%d: not-a-tty" % fd)
try:
    t = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
except OSError as e:
    out.append("/dev/tty: open " + name(e))
else:
    push(t, "/dev/tty", out)
    os.close(t)
print("\n".join(out))
"#;

/// A pseudo-terminal pair; everything written to the slave side is collected as text.
pub struct Pty {
    /// The controlling side (write here to type into the terminal).
    pub master: OwnedFd,
    /// The terminal a process runs on.
    pub slave: OwnedFd,
    screen: Arc<Mutex<String>>,
}

impl Pty {
    /// Opens a pty and starts collecting its output.
    ///
    /// # Panics
    /// When no pty can be opened.
    pub fn open() -> Pty {
        let p = nix::pty::openpty(None, None).expect("openpty");
        let screen = Arc::new(Mutex::new(String::new()));
        let sink = screen.clone();
        let mut reader = File::from(p.master.try_clone().expect("dup of the pty master"));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once no process has the slave open any more.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    return;
                }
                let text = String::from_utf8_lossy(&buf[..n]);
                lock(&sink).push_str(&text);
            }
        });
        Pty {
            master: p.master,
            slave: p.slave,
            screen,
        }
    }

    /// Gives the slave side to `uid` (as a login would), so a process of that user can reopen it.
    ///
    /// # Panics
    /// When the owner cannot be changed (run as root).
    pub fn chown_slave(&self, uid: u32) {
        nix::unistd::fchown(
            &self.slave,
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(uid)),
        )
        .expect("fchown of the pty slave");
    }

    /// Stdin, stdout and stderr on the slave side.
    ///
    /// # Panics
    /// When the descriptor cannot be duplicated.
    pub fn stdio(&self) -> (Stdio, Stdio, Stdio) {
        let f = || Stdio::from(self.slave.try_clone().expect("dup of the pty slave"));
        (f(), f(), f())
    }

    /// A writer to the master side: what is written there is typed into the terminal.
    ///
    /// # Panics
    /// When the descriptor cannot be duplicated.
    pub fn keyboard(&self) -> File {
        File::from(self.master.try_clone().expect("dup of the pty master"))
    }

    /// Everything the terminal showed so far.
    pub fn screen(&self) -> String {
        lock(&self.screen).clone()
    }

    /// Waits up to `limit` until the screen contains `what`.
    pub fn wait_for(&self, what: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.screen().contains(what) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Bytes waiting in the terminal's input queue: typed, or pushed with `TIOCSTI`, and not
    /// read yet by any process.
    pub fn input_queue_len(&self) -> usize {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int into `n`.
        let rc = unsafe { libc::ioctl(self.slave.as_raw_fd(), libc::FIONREAD, &mut n) };
        if rc == 0 {
            usize::try_from(n).unwrap_or(0)
        } else {
            0
        }
    }
}

/// Makes the process `cmd` starts a session leader whose controlling terminal is its stdin
/// (give it [`Pty::stdio`]), then, with `as_uid`, drops to that uid and gid with no
/// supplementary groups.
///
/// # Safety
/// Adds a `pre_exec` hook; it only makes async-signal-safe calls, but the caller must not add
/// hooks that are not.
pub unsafe fn own_terminal(cmd: &mut Command, as_uid: Option<u32>) {
    // SAFETY: setsid, ioctl, setgroups and setres[ug]id are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(id) = as_uid
                && (libc::setgroups(0, std::ptr::null()) < 0
                    || libc::setresgid(id, id, id) < 0
                    || libc::setresuid(id, id, id) < 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
