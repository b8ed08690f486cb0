//! Which processes hold locks on the database, from the kernel's table of file locks
//! (`/proc/locks`).
//!
//! In WAL mode SQLite takes byte-range locks on the `-shm` file: byte 120 is the write lock,
//! 121 the checkpointer's, 123–127 the read marks (a reader holding one keeps a snapshot: on
//! 124–127 one that includes part of the WAL, on 123 the file as it was before the WAL, so no
//! checkpoint may overwrite pages it can still read), and 128 is held shared by every open
//! connection.
//! Each line of `/proc/locks` names the pid, the file's device and inode and the byte range,
//! which is enough to tell who writes, who holds a snapshot and who merely has the file open.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Byte of the `-shm` file locked by the writer.
const WRITE_LOCK: u64 = 120;
/// Bytes of the read marks (one per snapshot being read).
const WAL_READ_MARKS: std::ops::RangeInclusive<u64> = 123..=127;
/// Byte held shared by every connection that has the database open.
const OPEN_LOCK: u64 = 128;

/// What a process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// The write lock (a write transaction, or `BEGIN IMMEDIATE` held).
    Writer,
    /// A read transaction on a snapshot: checkpoints cannot pass it.
    Reader,
    /// The database is open (no transaction).
    Open,
}

/// One process holding a lock on the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockHolder {
    /// The process (as the kernel names it; POSIX locks carry their owner's pid).
    pub pid: u32,
    /// What it holds.
    pub kind: LockKind,
}

/// The processes holding locks on the database `db` (its `-shm` file), each lock once.
/// Empty when the file or `/proc/locks` cannot be read.
pub fn lock_holders(db: &Path) -> Vec<LockHolder> {
    let mut shm = db.as_os_str().to_owned();
    shm.push("-shm");
    let Ok(meta) = std::fs::metadata(&shm) else {
        return Vec::new();
    };
    let Ok(table) = std::fs::read_to_string("/proc/locks") else {
        return Vec::new();
    };
    holders_in(&table, meta.ino(), meta.dev())
}

/// Parses `/proc/locks` text for locks on inode `ino` of device `dev`.
fn holders_in(table: &str, ino: u64, dev: u64) -> Vec<LockHolder> {
    let mut out: Vec<LockHolder> = Vec::new();
    for line in table.lines() {
        let mut f = line.split_whitespace().skip(1).peekable();
        if f.peek() == Some(&"->") {
            continue; // a process waiting for the lock, not holding it
        }
        let fields: Vec<&str> = f.collect();
        let [_class, _advisory, _mode, pid, file, start, end, ..] = fields[..] else {
            continue;
        };
        let (Ok(pid), Some((lock_dev, lock_ino))) = (pid.parse::<u32>(), parse_file(file)) else {
            continue;
        };
        if lock_ino != ino || lock_dev.is_some_and(|d| d != dev_parts(dev)) {
            continue;
        }
        let (Ok(start), end) = (start.parse::<u64>(), end.parse::<u64>().unwrap_or(u64::MAX))
        else {
            continue;
        };
        let covers = |b: u64| start <= b && b <= end;
        let kind = if covers(WRITE_LOCK) {
            LockKind::Writer
        } else if WAL_READ_MARKS.clone().any(covers) {
            LockKind::Reader
        } else if covers(OPEN_LOCK) {
            LockKind::Open
        } else {
            continue;
        };
        let holder = LockHolder { pid, kind };
        if !out.contains(&holder) {
            out.push(holder);
        }
    }
    out
}

/// `MAJ:MIN:INODE` (hexadecimal device numbers) as `(Some((maj, min)), inode)`.
fn parse_file(s: &str) -> Option<(Option<(u64, u64)>, u64)> {
    let mut parts = s.split(':');
    let (maj, min, ino) = (parts.next()?, parts.next()?, parts.next()?);
    let dev = u64::from_str_radix(maj, 16)
        .ok()
        .zip(u64::from_str_radix(min, 16).ok());
    Some((dev, ino.parse().ok()?))
}

/// The major and minor numbers of `dev`, as the kernel prints them.
fn dev_parts(dev: u64) -> (u64, u64) {
    (
        ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff),
        ((dev >> 12) & 0xffff_ff00) | (dev & 0xff),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_writers_and_open_connections_are_told_apart() {
        let dev = (8u64 << 8) | 2; // 08:02
        let table = "\
1: POSIX  ADVISORY  READ 4001 08:02:77 128 128
2: POSIX  ADVISORY  READ 4002 08:02:77 125 125
3: POSIX  ADVISORY  WRITE 4003 08:02:77 120 120
4: -> POSIX  ADVISORY  WRITE 4004 08:02:77 120 120
5: POSIX  ADVISORY  READ 4005 08:02:78 125 125
6: POSIX  ADVISORY  READ 4006 08:02:77 122 122
7: FLOCK  ADVISORY  WRITE 4007 08:02:77 0 EOF
";
        let got = holders_in(table, 77, dev);
        assert_eq!(
            got,
            vec![
                LockHolder {
                    pid: 4001,
                    kind: LockKind::Open
                },
                LockHolder {
                    pid: 4002,
                    kind: LockKind::Reader
                },
                LockHolder {
                    pid: 4003,
                    kind: LockKind::Writer
                },
                LockHolder {
                    pid: 4007,
                    kind: LockKind::Writer
                },
            ]
        );
    }
}
