//! What the index holds: its sweeps (`tidemark sweeps`) and its statistics (`tidemark
//! stats`), as the command and the JSON API print them.

use serde::Serialize;

use crate::index::codec::SweepInfo;
use crate::index::{Index, Result};

/// One sweep as `tidemark sweeps --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// Sweep id.
    pub id: u32,
    /// Label.
    pub label: String,
    /// 14-digit date.
    pub date: String,
    /// Its files, in the order of their numbers.
    pub files: Vec<String>,
    /// What its ingests counted.
    #[serde(flatten)]
    pub counts: crate::index::codec::Counts,
}

/// The sweeps as `tidemark sweeps --json` prints them: one object per sweep, by id,
/// with its files' names in the order of their numbers.
/// `sweeps`: the sweeps shown, as the reader sees them ([`crate::index::columns::sweeps::shown`]).
pub fn sweeps_json(index: &Index, sweeps: &[(u32, SweepInfo)]) -> Result<serde_json::Value> {
    let mut names = index.files().names_by_sweep()?;
    let rows: Vec<SweepRow> = sweeps
        .iter()
        .cloned()
        .map(|(id, s)| SweepRow {
            id,
            files: names.remove(&id).unwrap_or_default(),
            label: s.label,
            date: s.date,
            counts: s.counts,
        })
        .collect();
    Ok(serde_json::to_value(rows).expect("plain data"))
}

/// Index statistics.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// Docs (distinct canonical texts).
    pub docs: u64,
    /// Captures.
    pub captures: u64,
    /// Distinct URLs (SURT keys).
    pub urls: u64,
    /// Clusters, singletons included.
    pub clusters: u64,
    /// Clusters of two or more docs.
    pub multi_doc_clusters: u64,
    /// Largest clusters: (cluster id, size), largest first.
    pub largest_clusters: Vec<(u64, u64)>,
    /// Sweeps.
    pub sweeps: u64,
    /// Clustering threshold in force.
    pub threshold: f64,
    /// Bytes on disk per column family.
    pub column_families: Vec<(String, u64)>,
    /// Bytes of write-ahead log not yet flushed to column families (zero after a
    /// finished ingest).
    pub wal_bytes: u64,
    /// Total bytes on disk (column families and write-ahead log).
    pub bytes: u64,
    /// Bytes on disk per doc.
    pub bytes_per_doc: f64,
}

/// Computes statistics (a scan of captures and parents).
pub fn stats(index: &Index) -> Result<Stats> {
    let mut captures = 0u64;
    let mut urls = 0u64;
    let mut last = String::new();
    index
        .captures()
        .scan_keys(&crate::access::Reader::everything(), |surt, _| {
            captures += 1;
            if surt != last {
                urls += 1;
                last = surt.to_string();
            }
            Ok(true)
        })?;
    let mut roots: Vec<(u64, u64)> = Vec::new();
    let mut in_multi = 0u64;
    index.parents().for_each(|doc, n| {
        if n.parent == doc && n.size > 1 {
            roots.push((n.min, n.size));
            in_multi += n.size;
        }
        Ok(true)
    })?;
    roots.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let docs = index.doc_count();
    let sizes = index.cf_sizes();
    let wal_bytes = index.wal_size();
    let bytes: u64 = sizes.iter().map(|s| s.1).sum::<u64>() + wal_bytes;
    let multi = roots.len() as u64;
    roots.truncate(10);
    Ok(Stats {
        docs,
        captures,
        urls,
        clusters: docs - in_multi + multi,
        multi_doc_clusters: multi,
        largest_clusters: roots,
        sweeps: index
            .sweeps()
            .all(&crate::access::Reader::everything())?
            .len() as u64,
        threshold: index.counters().threshold,
        column_families: sizes.into_iter().map(|(n, b)| (n.to_string(), b)).collect(),
        wal_bytes,
        bytes,
        bytes_per_doc: if docs == 0 {
            0.0
        } else {
            bytes as f64 / docs as f64
        },
    })
}
