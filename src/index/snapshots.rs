//! Published snapshots: what `tidemark serve` reads while an ingest writes.
//!
//! An ingest commits batch by batch, so the live index is half a sweep old for most of
//! an ingest: a query made then would find the URLs the ingest has not reached yet
//! "gone". Instead, each ingest (and `recluster`) that completes *publishes* the index:
//! a RocksDB checkpoint in `DIR/snapshots/NNNNNNNNNN` (hard links to the immutable SST
//! files, a copy of the small manifest; milliseconds, no bytes copied). A server opens
//! the newest snapshot read-only, serves it until a newer one appears, then opens that
//! one and lets requests under way finish on the old one. A snapshot never changes,
//! so every answer comes from one whole published state.
//!
//! Lifetimes: a server holds a shared lock on `SERVING.lock` inside the snapshot it
//! serves; a publisher deletes an older snapshot only when it can take that lock
//! exclusively (no server reads it). So disk holds the newest snapshot plus those still
//! served; their files are shared with the live index until compactions replace them.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::{Index, IndexError, Result};

/// Folder of the snapshots, inside the index directory.
pub const SNAPSHOTS: &str = "snapshots";
/// The lock file inside a snapshot.
pub(crate) const LEASE: &str = "SERVING.lock";
/// In a follower's folder (`serve --follow`): held by the follower while it runs; its
/// presence makes the folder no index to write (its snapshots are the primary's).
pub const FOLLOWER: &str = "FOLLOWER.lock";

/// Snapshots of the index at `db`, oldest first: (number, path).
pub fn list(db: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(db.join(SNAPSHOTS))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            // RocksDB builds a checkpoint in `NAME.tmp` and renames it when complete.
            let n = name.parse::<u64>().ok()?;
            e.path().join("CURRENT").exists().then(|| (n, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Publishes the index as it is now: a new snapshot, then the deletion of older ones
/// that no server holds. Returns the new snapshot's path.
pub fn publish(index: &Index) -> Result<PathBuf> {
    let dir = index.path().join(SNAPSHOTS);
    std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    // Leftovers of a publisher killed mid-checkpoint.
    for e in std::fs::read_dir(&dir)
        .map_err(|e| io_err(&dir, e))?
        .flatten()
    {
        if e.file_name().to_string_lossy().ends_with(".tmp") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let next = list(index.path()).last().map(|(n, _)| n + 1).unwrap_or(1);
    // Built aside and renamed whole: a server never opens a snapshot without its
    // postings (hard links to the runs, which never change).
    let building = dir.join(format!("{next:010}.tmp"));
    index.checkpoint(&building)?;
    install(index.path(), &building, next)
}

/// Makes `building` (a whole snapshot, in `DIR/snapshots`) snapshot `number` of the
/// index at `db`: its lock file created, renamed into place, and the older snapshots
/// that no server holds deleted. Also how a follower lays down a snapshot it copied.
pub fn install(db: &Path, building: &Path, number: u64) -> Result<PathBuf> {
    let path = db.join(SNAPSHOTS).join(format!("{number:010}"));
    lease_file(building, true).map_err(|e| io_err(building, e))?;
    std::fs::rename(building, &path).map_err(|e| io_err(&path, e))?;
    let _ = crate::durable::sync_dir(&db.join(SNAPSHOTS));
    for (n, old) in list(db) {
        if n >= number {
            continue;
        }
        let Ok(lease) = lease_file(&old, true) else {
            continue;
        };
        // Held shared by a server: keep it; the next publish tries again.
        if lease.try_lock().is_ok() {
            let _ = std::fs::remove_dir_all(&old);
        }
    }
    Ok(path)
}

/// A snapshot held open for serving: while it lives, no publisher deletes the snapshot.
#[derive(Debug)]
pub struct Lease {
    /// The snapshot's number (increases with every publish).
    pub number: u64,
    /// The snapshot's directory (open it with [`Index::open_read_only`]).
    pub path: PathBuf,
    _file: File,
}

/// Takes the newest snapshot of the index at `db` that can be held (None when there is
/// none). A snapshot being deleted is skipped.
pub fn hold_newest(db: &Path) -> Option<Lease> {
    // A publisher may replace the newest and delete the one before between our listing
    // and our locks: list again, a few times, before saying there is none.
    for _ in 0..5 {
        let listed = list(db);
        if listed.is_empty() {
            return None;
        }
        if let Some(lease) = hold_newest_of(listed) {
            return Some(lease);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

fn hold_newest_of(listed: Vec<(u64, PathBuf)>) -> Option<Lease> {
    for (number, path) in listed.into_iter().rev() {
        // Not created here: a snapshot without its lock file is being published or deleted.
        let Ok(file) = lease_file(&path, false) else {
            continue;
        };
        if file.try_lock_shared().is_err() {
            continue;
        }
        // A publisher may have deleted it between the listing and the lock.
        if path.join("CURRENT").exists() {
            return Some(Lease {
                number,
                path,
                _file: file,
            });
        }
    }
    None
}

fn lease_file(snapshot: &Path, create: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .create(create)
        .truncate(false)
        .write(true)
        .open(snapshot.join(LEASE))
}

fn io_err(path: &Path, e: std::io::Error) -> IndexError {
    IndexError::Invalid(format!("cannot write {}: {e}", path.display()))
}
