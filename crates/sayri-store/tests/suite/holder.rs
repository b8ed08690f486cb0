//! Other programs holding Sayri's database: a Python `sqlite3` process (another SQLite build,
//! as a backup tool or a person's `sqlite3` shell would be) that keeps a snapshot or the write
//! lock until it is killed, and a small file system of its own for disk-full tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What the other process holds.
#[derive(Debug, Clone, Copy)]
pub enum Hold {
    /// A read transaction on a snapshot (`BEGIN; SELECT …`).
    Snapshot,
    /// The write lock (`BEGIN IMMEDIATE`).
    WriteLock,
}

/// A process holding `Hold` on a database until dropped (then killed).
pub struct Holder {
    child: Child,
}

impl Holder {
    /// Starts the holder and waits until its lock is in place.
    pub fn start(db: &Path, hold: Hold) -> Holder {
        let begin = match hold {
            Hold::Snapshot => {
                "c.execute('BEGIN'); c.execute('SELECT count(*) FROM messages').fetchone()"
            }
            Hold::WriteLock => "c.execute('BEGIN IMMEDIATE')",
        };
        let script = format!(
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n\
             {begin}\n\
             print('holding', flush=True)\n\
             time.sleep(600)\n"
        );
        let mut child = Command::new("python3")
            .args(["-c", &script])
            .arg(db)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "holding", "the holder did not take its lock");
        Holder { child }
    }

    /// The holder's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tmpfs of `mib` MiB mounted on a fresh directory for one test; unmounted when dropped.
/// `None` (with a note) where this process may not mount (not root).
pub struct SmallDisk {
    pub dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl SmallDisk {
    pub fn mount(mib: u64) -> Option<SmallDisk> {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m,mode=0700"),
                "tmpfs",
            ])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("cannot mount a tmpfs here (needs root): the small-disk test cannot run");
            return None;
        }
        Some(SmallDisk {
            dir,
            _parent: parent,
        })
    }

    /// Fills the disk with a file `filler` until `leave` bytes are free.
    pub fn fill_leaving(&self, leave: u64) -> PathBuf {
        let s = nix::sys::statvfs::statvfs(&self.dir).unwrap();
        let free = s.blocks_available() * s.fragment_size();
        let filler = self.dir.join("filler");
        let status = Command::new("fallocate")
            .args(["-l", &(free.saturating_sub(leave)).to_string()])
            .arg(&filler)
            .status()
            .unwrap();
        assert!(status.success());
        filler
    }

    /// Remounts the file system read-only (or back read-write).
    pub fn set_read_only(&self, ro: bool) {
        let opt = if ro { "remount,ro" } else { "remount,rw" };
        let status = Command::new("mount")
            .args(["-o", opt])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}
