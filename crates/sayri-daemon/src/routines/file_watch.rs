//! Watching files for `on_file_changed` triggers and the triggers directory itself: inotify
//! (through `notify`), and a debounce in the daemon's runtime — changes are gathered until the
//! files have been quiet for the debounce time, then reported once. Nothing wakes while
//! nothing changes (no tick thread).
//!
//! What counts: files created, written, renamed or removed under the watched path whose path
//! matches the glob — a glob without `/` is matched against the file name at any depth
//! (`*.md`), one with `/` against the path below the watched directory (`drafts/**/*.md`).
//! Reads and metadata-only changes (`touch`, permissions) do not count.

use globset::{GlobBuilder, GlobMatcher};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which changed paths count.
#[derive(Debug, Clone)]
pub struct PathFilter {
    /// The watched path.
    root: PathBuf,
    /// The root is one file (watched through its directory).
    single_file: bool,
    glob: Option<(GlobMatcher, bool)>,
}

impl PathFilter {
    /// A filter for `root` (a directory or a file) and an optional glob.
    ///
    /// # Errors
    /// The root does not exist, or the glob is invalid.
    pub fn new(root: &Path, glob: Option<&str>) -> Result<PathFilter, String> {
        let meta =
            std::fs::metadata(root).map_err(|e| format!("cannot watch {}: {e}", root.display()))?;
        let glob = match glob {
            Some(g) => {
                let m = GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| format!("invalid glob {g:?}: {e}"))?
                    .compile_matcher();
                Some((m, g.contains('/')))
            }
            None => None,
        };
        Ok(PathFilter {
            root: root.to_path_buf(),
            single_file: !meta.is_dir(),
            glob,
        })
    }

    /// Whether a change of `path` counts.
    pub fn matches(&self, path: &Path) -> bool {
        if self.single_file {
            return path == self.root;
        }
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return false;
        };
        match &self.glob {
            None => true,
            Some((m, true)) => m.is_match(rel),
            Some((m, false)) => path.file_name().is_some_and(|n| m.is_match(n)),
        }
    }

    /// What to hand inotify: the directory (recursively), or a file's directory.
    fn target(&self) -> (PathBuf, RecursiveMode) {
        if self.single_file {
            let dir = self.root.parent().unwrap_or(Path::new("/"));
            (dir.to_path_buf(), RecursiveMode::NonRecursive)
        } else {
            (self.root.clone(), RecursiveMode::Recursive)
        }
    }
}

/// Whether an event is a change of content or of the directory tree (never a mere open or
/// read: a watcher that reads what it watches must not wake itself).
pub(crate) fn is_change(ev: &Event) -> bool {
    match &ev.kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(m) => !matches!(m, notify::event::ModifyKind::Metadata(_)),
        _ => false,
    }
}

/// A live watch; dropping it stops it.
pub struct FileWatch {
    _watcher: RecommendedWatcher,
}

/// Watches what `filter` names and calls `on_change` with the instant of the last change
/// once matching changes have been quiet for `debounce`. Call inside the daemon's runtime.
///
/// # Errors
/// inotify refused the watch (too many watches, permissions).
pub fn watch(
    filter: PathFilter,
    debounce: Duration,
    on_change: impl Fn(Instant) + Send + Sync + 'static,
) -> Result<FileWatch, String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let f = filter.clone();
    let mut w = notify::recommended_watcher(move |res: notify::Result<Event>| {
        if let Ok(ev) = res
            && is_change(&ev)
            && ev.paths.iter().any(|p| f.matches(p))
        {
            let _ = tx.send(Instant::now());
        }
    })
    .map_err(|e| format!("cannot watch files: {e}"))?;
    let (dir, mode) = filter.target();
    w.watch(&dir, mode).map_err(|e| {
        format!(
            "cannot watch {}: {e} (raise fs.inotify.max_user_watches if there are many files)",
            dir.display()
        )
    })?;
    tokio::spawn(debounce_loop(rx, debounce, on_change));
    Ok(FileWatch { _watcher: w })
}

/// Gathers changes until quiet for `debounce`, then reports the last one. Ends when the
/// watcher (the only sender) is dropped.
async fn debounce_loop(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Instant>,
    debounce: Duration,
    on_change: impl Fn(Instant),
) {
    while let Some(first) = rx.recv().await {
        let mut last = first;
        loop {
            tokio::select! {
                got = rx.recv() => match got {
                    Some(t) => last = t,
                    None => return,
                },
                () = tokio::time::sleep(debounce) => break,
            }
        }
        on_change(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn globs_match_names_at_any_depth_or_paths_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let f = PathFilter::new(root, Some("*.md")).unwrap();
        assert!(f.matches(&root.join("a.md")));
        assert!(f.matches(&root.join("sub/deep/b.md")));
        assert!(!f.matches(&root.join("a.txt")));
        assert!(!f.matches(Path::new("/elsewhere/a.md")));
        let f = PathFilter::new(root, Some("drafts/**/*.md")).unwrap();
        assert!(f.matches(&root.join("drafts/x/a.md")));
        assert!(!f.matches(&root.join("a.md")));
        std::fs::write(root.join("one.txt"), "x").unwrap();
        let f = PathFilter::new(&root.join("one.txt"), None).unwrap();
        assert!(f.matches(&root.join("one.txt")));
        assert!(!f.matches(&root.join("two.txt")));
        assert!(
            PathFilter::new(&root.join("missing"), None)
                .unwrap_err()
                .contains("cannot watch")
        );
        assert!(
            PathFilter::new(root, Some("a["))
                .unwrap_err()
                .contains("invalid glob")
        );
    }

    #[tokio::test]
    async fn a_burst_of_writes_is_reported_once_after_it_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let h = hits.clone();
        let filter = PathFilter::new(dir.path(), Some("*.md")).unwrap();
        let _w = watch(filter, Duration::from_millis(300), move |t| {
            h.lock().unwrap().push(t)
        })
        .unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join("note.md"), format!("v{i}")).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        std::fs::write(dir.path().join("ignored.txt"), "x").unwrap();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(hits.lock().unwrap().len(), 1, "one report for the burst");
        std::fs::write(dir.path().join("other.txt"), "y").unwrap();
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(
            hits.lock().unwrap().len(),
            1,
            "a non-matching file counts for nothing"
        );
    }
}
