//! `DIR/ingest-progress.json`: what an ingest into the index `DIR` is doing, rewritten
//! whole about once a second while it runs and removed when it ends, so that a server
//! over the same index can tell its scraper (`/metrics`). Not part of the index: a
//! leftover of a killed ingest names a process that is gone and counts for nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::Progress;

/// The file's name in the index folder.
pub const NAME: &str = "ingest-progress.json";

/// What the file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestProgress {
    /// The ingest's process.
    pub pid: u32,
    /// The sweep it ingests.
    pub sweep: String,
    /// When it started and when this was written (seconds since 1970).
    pub started: f64,
    /// See `started`.
    pub updated: f64,
    /// Records committed, and read.
    pub records: u64,
    /// See `records`.
    pub read: u64,
    /// Compressed input bytes consumed, of `input_total`.
    pub input_bytes: u64,
    /// See `input_bytes`.
    pub input_total: u64,
    /// Docs paired of those waiting (edges on content, once the sweep is read).
    pub docs_paired: u64,
    /// See `docs_paired`.
    pub docs_waiting: u64,
    /// `reading`, `pairing` or `finishing`.
    pub step: String,
}

impl IngestProgress {
    /// Whether its process still runs.
    pub fn running(&self) -> bool {
        // Signal 0 only asks whether the process exists (EPERM: it does, not ours).
        let pid = self.pid as libc::pid_t;
        pid > 0
            && (unsafe { libc::kill(pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
    }
}

/// The progress of an ingest into `db`, if one wrote it (and it is whole).
pub fn read(db: &Path) -> Option<IngestProgress> {
    let bytes = std::fs::read(db.join(NAME)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The writer of an ingest's progress file: [`ProgressFile::note`] with each progress
/// report; removed when dropped.
pub struct ProgressFile {
    path: PathBuf,
    sweep: String,
    started: f64,
    last: Option<(Instant, &'static str)>,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

impl ProgressFile {
    /// For an ingest of `sweep` into `db`.
    pub fn new(db: &Path, sweep: &str) -> ProgressFile {
        ProgressFile {
            path: db.join(NAME),
            sweep: sweep.to_string(),
            started: now(),
            last: None,
        }
    }

    /// Rewrites the file, at most once a second (and at the first report, and when
    /// the step changes). A failure to write it is not the ingest's.
    pub fn note(&mut self, p: &Progress) {
        let step = if p.finishing {
            "finishing"
        } else if p.pairs.is_some() {
            "pairing"
        } else {
            "reading"
        };
        let due = self
            .last
            .is_none_or(|(t, was)| t.elapsed() >= Duration::from_secs(1) || was != step);
        if !due {
            return;
        }
        self.last = Some((Instant::now(), step));
        let (docs_paired, docs_waiting) = p.pairs.unwrap_or((0, 0));
        let v = IngestProgress {
            pid: std::process::id(),
            sweep: self.sweep.clone(),
            started: self.started,
            updated: now(),
            records: p.records,
            read: p.read,
            input_bytes: p.input_bytes,
            input_total: p.input_total,
            docs_paired,
            docs_waiting,
            step: step.to_string(),
        };
        if let Ok(bytes) = serde_json::to_vec(&v) {
            let _ = crate::durable::replace(&self.path, &bytes);
        }
    }
}

impl Drop for ProgressFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
