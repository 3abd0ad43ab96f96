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
    /// The same without the very common shingles of both hosts (the old one's in the
    /// previous sweep, the new one's in this one: [`very_common`]).
    pub content_resemblance: f64,
    /// Distinct shingles of the smaller version.
    pub min_shingles: usize,
    /// Renamed and rewritten: a new URL on the same host, every sentence new, the title
    /// kept; the pages that linked the old URL link the new one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rewritten: bool,
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
    /// The same without the host's very common shingles of both sweeps
    /// ([`very_common`]): the truth's content resemblance.
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
    /// The page's topic (generated with topics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<u32>,
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

/// The truth's template, fixed so that it cannot drift with tidemark's own: a shingle is
/// left out of content when it is on more than this share of a host's pages in a sweep…
pub const VERY_COMMON_SHARE: f64 = 0.03;
/// …and on at least this many of them (Broder et al.'s "very common shingles", per host
/// and sweep).
pub const VERY_COMMON_MIN_PAGES: usize = 20;

/// The very common shingles of one host's pages in one sweep (each page's distinct
/// shingles, sorted), sorted: those on more than [`VERY_COMMON_SHARE`] of the pages and
/// on at least [`VERY_COMMON_MIN_PAGES`]. A host's pages are its URLs captured with text
/// (2xx, a revisit counting with the text it repeats).
pub fn very_common<'a>(pages: impl IntoIterator<Item = &'a [u64]>) -> Vec<u64> {
    let mut all: Vec<u64> = Vec::new();
    let mut n = 0usize;
    for p in pages {
        all.extend_from_slice(p);
        n += 1;
    }
    all.sort_unstable();
    let floor = VERY_COMMON_SHARE * n as f64;
    all.chunk_by(|a, b| a == b)
        .filter(|run| run.len() as f64 > floor && run.len() >= VERY_COMMON_MIN_PAGES)
        .map(|run| run[0])
        .collect()
}

/// Exact Jaccard of two sorted, distinct shingle sets with the `removed` (sorted) left
/// out of both; `None` when nothing is left of either.
pub fn jaccard_without(a: &[u64], b: &[u64], removed: &[u64]) -> Option<f64> {
    let keep = |v: &u64| removed.binary_search(v).is_err();
    let (mut i, mut j, mut common, mut union) = (0, 0, 0u64, 0u64);
    while i < a.len() || j < b.len() {
        let (v, both) = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
                (*x, true)
            }
            (Some(x), Some(y)) if x < y => {
                i += 1;
                (*x, false)
            }
            (Some(x), None) => {
                i += 1;
                (*x, false)
            }
            (_, Some(y)) => {
                j += 1;
                (*y, false)
            }
            (None, None) => unreachable!("loop condition"),
        };
        if keep(&v) {
            union += 1;
            common += both as u64;
        }
    }
    (union > 0).then(|| common as f64 / union as f64)
}

/// The sorted union of two sorted sets.
pub fn union_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut u: Vec<u64> = a.iter().chain(b).copied().collect();
    u.sort_unstable();
    u.dedup();
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn very_common_is_more_than_three_percent_and_twenty_pages() {
        // 1,000 pages: shingle 1 on 31 (> 30), 2 on 30 (not more than 3%), 3 on all.
        let pages: Vec<Vec<u64>> = (0..1000u64)
            .map(|i| {
                let mut p = vec![3, 100 + i];
                if i < 31 {
                    p.push(1);
                }
                if i < 30 {
                    p.push(2);
                }
                p.sort_unstable();
                p
            })
            .collect();
        assert_eq!(very_common(pages.iter().map(|p| p.as_slice())), vec![1, 3]);
        // 100 pages: 3% is 3 pages, but 20 are needed.
        let few: Vec<Vec<u64>> = (0..100u64)
            .map(|i| {
                if i < 19 {
                    vec![1, 2]
                } else if i < 20 {
                    vec![2]
                } else {
                    vec![]
                }
            })
            .collect();
        assert_eq!(very_common(few.iter().map(|p| p.as_slice())), vec![2]);
        assert_eq!(
            jaccard_without(&[1, 2, 3], &[2, 3, 4], &[3]),
            Some(1.0 / 3.0)
        );
        assert_eq!(jaccard_without(&[3], &[3], &[3]), None);
    }
}
