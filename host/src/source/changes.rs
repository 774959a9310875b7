//! The inotify side of the static source: which changes in the manifest directory call for a
//! scan, and when. A file that is complete (renamed in, closed after writing, removed) is
//! scanned at once; a file still being written gets a moment to finish, so that a writer
//! which creates a file and then fills it is read once, whole.

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecursiveMode, Watcher};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{info, warn};

/// How long a change that may still be in progress (a create, a write) waits for the write
/// to complete before the scan reads the file anyway.
pub const SETTLE: Duration = Duration::from_millis(2);

/// What one inotify event says about the directory's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A file is in its final state: renamed in or out, closed after writing, removed.
    Complete,
    /// A file is being created or written: more events follow.
    InProgress,
}

/// The change `event` stands for, or `None` when it calls for no scan: reads (the scan's own
/// reads raise access events), and with `skip_hidden` (a watched directory) hidden files,
/// which the scan of a directory skips as upstream does (a writer's temporary file before its
/// rename).
pub fn classify(event: &Event, skip_hidden: bool) -> Option<Change> {
    let hidden = |path: &Path| path.file_name().is_some_and(super::is_hidden);
    if skip_hidden && !event.paths.is_empty() && event.paths.iter().all(|p| hidden(p)) {
        return None;
    }
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(Change::Complete),
        EventKind::Access(_) => None,
        EventKind::Modify(ModifyKind::Name(_)) | EventKind::Remove(_) => Some(Change::Complete),
        _ => Some(Change::InProgress),
    }
}

/// Waits for the next change that calls for a scan; `None` once the watcher is gone. A change
/// in progress waits up to `settle` ([`SETTLE`]) for its completion; the events of the burst
/// are taken with it.
pub async fn next_change(
    events: &mut mpsc::UnboundedReceiver<Change>,
    settle: Duration,
) -> Option<()> {
    if events.recv().await? == Change::InProgress {
        let settle = tokio::time::sleep(settle);
        tokio::pin!(settle);
        loop {
            tokio::select! {
                _ = &mut settle => break,
                change = events.recv() => if change? == Change::Complete { break },
            }
        }
    }
    while events.try_recv().is_ok() {}
    Some(())
}

/// Watches the directory of `path` (the directory itself, or the file's own) and sends each
/// change that calls for a scan; `None` (logged) when it cannot be watched.
pub fn watch_directory(
    path: &Path,
    events: mpsc::UnboundedSender<Change>,
) -> Option<notify::RecommendedWatcher> {
    // A single manifest file (upstream allows one) is read whatever its name.
    let single_file = path.is_file();
    let dir = if single_file { path.parent()? } else { path };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        let change = event.ok().and_then(|e| classify(&e, !single_file));
        if let Some(change) = change {
            let _ = events.send(change);
        }
    })
    .ok()?;
    match watcher.watch(dir, RecursiveMode::NonRecursive) {
        Ok(()) => {
            info!(path = %dir.display(), "watching static pod path");
            Some(watcher)
        }
        Err(error) => {
            warn!(path = %dir.display(), %error, "cannot watch static pod path; rescanning periodically");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, RemoveKind, RenameMode};

    fn event(kind: EventKind, paths: &[&str]) -> Event {
        paths
            .iter()
            .fold(Event::new(kind), |event, path| event.add_path(path.into()))
    }

    #[test]
    fn a_file_renamed_in_closed_or_removed_is_complete_and_a_write_is_not() {
        let renamed = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        let removed = EventKind::Remove(RemoveKind::File);
        for kind in [renamed, closed, removed] {
            assert_eq!(
                classify(&event(kind, &["/m/web.yaml"]), true),
                Some(Change::Complete),
                "{kind:?}"
            );
        }
        let created = EventKind::Create(CreateKind::File);
        let written = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        for kind in [created, written] {
            assert_eq!(
                classify(&event(kind, &["/m/web.yaml"]), true),
                Some(Change::InProgress),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn reads_and_a_directorys_hidden_files_call_for_no_scan_but_a_rename_out_of_hiding_does() {
        let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
        assert_eq!(classify(&event(read, &["/m/web.yaml"]), true), None);
        let opened = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(classify(&event(opened, &["/m/web.yaml"]), true), None);
        let written = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        assert_eq!(classify(&event(written, &["/m/.web.yaml.tmp"]), true), None);
        // A static pod path that is itself a hidden file is read, so its changes count.
        assert_eq!(
            classify(&event(written, &["/m/.web.yaml"]), false),
            Some(Change::InProgress)
        );
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(
            classify(&event(both, &["/m/.web.yaml.tmp", "/m/web.yaml"]), true),
            Some(Change::Complete)
        );
    }

    #[tokio::test]
    async fn a_complete_change_is_taken_at_once_and_one_in_progress_at_its_completion() {
        let long = Duration::from_secs(30);
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(Change::Complete).unwrap();
        let began = std::time::Instant::now();
        assert_eq!(next_change(&mut rx, long).await, Some(()));
        assert!(began.elapsed() < long / 2, "{:?}", began.elapsed());

        // A write, then its close 20 ms later: taken at the close, with the rest of the burst.
        tx.send(Change::InProgress).unwrap();
        let closer = tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            for change in [Change::InProgress, Change::Complete, Change::InProgress] {
                closer.send(change).unwrap();
            }
        });
        let began = std::time::Instant::now();
        assert_eq!(next_change(&mut rx, long).await, Some(()));
        let took = began.elapsed();
        assert!(
            took >= Duration::from_millis(20) && took < long / 2,
            "{took:?}"
        );
        assert!(rx.try_recv().is_err(), "the burst was taken with it");

        // A write that never completes is read once `settle` has passed.
        tx.send(Change::InProgress).unwrap();
        let settle = Duration::from_millis(50);
        let began = std::time::Instant::now();
        assert_eq!(next_change(&mut rx, settle).await, Some(()));
        assert!(began.elapsed() >= settle, "{:?}", began.elapsed());

        drop(tx);
        assert_eq!(next_change(&mut rx, long).await, None);
    }
}
