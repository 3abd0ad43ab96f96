//! What happened to every URL and page in a sweep (the truth file beside it), and the
//! exact resemblance the truth carries.

use serde::Serialize;

/// What happened to one URL or page in a sweep; the ground truth.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Truth {
    /// Sweep label.
    pub sweep: String,
    /// Sweep date, `YYYY-MM-DDT00:00:00Z`.
    pub date: String,
    /// WARC files of the sweep.
    pub files: Vec<String>,
    /// Live pages captured with status 200 (responses and revisits).
    pub live_pages: usize,
    /// Captures written (all statuses).
    pub captures: usize,
    /// Unchanged pages (same content, same URL), of which `revisits` written as revisit records.
    pub unchanged: usize,
    /// Unchanged pages written as revisits.
    pub revisits: usize,
    /// Content moved to a new URL.
    pub moves: Vec<Move>,
    /// Content edited in place.
    pub edits: Vec<Edit>,
    /// Pages removed (old URL 404 or no longer captured).
    pub deleted: Vec<Gone>,
    /// New pages.
    pub created: Vec<String>,
    /// Groups of live URLs carrying the same content (original first).
    pub mirror_groups: Vec<Vec<String>>,
    /// Every URL captured in this sweep with its status and page id.
    pub urls: Vec<UrlTruth>,
}

/// A move.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    /// Old URL.
    pub from: String,
    /// New URL.
    pub to: String,
    /// What the old URL answers now: 301, 404, or null (not captured any more).
    pub old_status: Option<u16>,
    /// The new URL is on another host.
    pub across_hosts: bool,
    /// Exact Jaccard resemblance of the shingle sets before and after (1.0 when not edited).
    pub resemblance: f64,
    /// The same without the shingles of both hosts' templates.
    pub content_resemblance: f64,
    /// Distinct shingles of the smaller version.
    pub min_shingles: usize,
}

/// An in-place edit.
#[derive(Debug, Clone, Serialize)]
pub struct Edit {
    /// URL.
    pub url: String,
    /// `minor`, `major`, `rewrite`, or `template` (the host's template changed, the
    /// body did not).
    pub kind: &'static str,
    /// Exact Jaccard resemblance of the shingle sets before and after.
    pub resemblance: f64,
    /// The same without the shingles of the host's templates before and after.
    pub content_resemblance: f64,
    /// Distinct shingles of the smaller version.
    pub min_shingles: usize,
}

/// A deletion.
#[derive(Debug, Clone, Serialize)]
pub struct Gone {
    /// URL.
    pub url: String,
    /// 404, or null when the URL is simply no longer captured.
    pub status: Option<u16>,
}

/// One captured URL.
#[derive(Debug, Clone, Serialize)]
pub struct UrlTruth {
    /// URL.
    pub url: String,
    /// HTTP status written.
    pub status: u16,
    /// Page id for 200 captures.
    pub page: Option<u64>,
    /// Written as a revisit record.
    pub revisit: bool,
}

/// Exact Jaccard of two sorted, distinct shingle sets, and the smaller set's size.
pub fn exact_jaccard(a: &[u64], b: &[u64]) -> (f64, usize) {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    let union = a.len() + b.len() - common;
    (
        if union == 0 {
            1.0
        } else {
            common as f64 / union as f64
        },
        a.len().min(b.len()),
    )
}
