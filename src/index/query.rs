//! Read-side operations over the index: export of every capture, statistics.

use std::io::Write;

use serde::Serialize;
use serde_json::json;

use super::codec::CaptureInfo;
use super::columns::Batch;
use super::unionfind;
use super::{Index, IndexError, Result};

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// `SURT timestamp {json}` per line (pywb/OutbackCDX field names).
    Cdxj,
    /// One JSON object per line, with Common Crawl column names added.
    Jsonl,
}

/// Writes every capture in key order (SURT, then timestamp), optionally of one sweep.
/// Returns the number of lines.
pub fn export(
    index: &Index,
    format: ExportFormat,
    sweep: Option<u32>,
    out: &mut dyn Write,
) -> std::io::Result<u64> {
    let mut n = 0u64;
    let mut clusters = unionfind::ClusterIds::new(index);
    // Write errors are carried out of the scan as they are (a closed pipe is not an
    // index error); index errors come out of the scan itself.
    let mut io_error: Option<std::io::Error> = None;
    let scanned = index.captures().scan_all(|(surt, ts, c)| {
        if sweep.is_some_and(|s| s != c.sweep) {
            return Ok(true);
        }
        let cluster = c.doc.map(|d| clusters.of(d)).transpose()?;
        match write_capture(out, format, surt, ts, &c, cluster) {
            Ok(()) => {
                n += 1;
                Ok(true)
            }
            Err(e) => {
                io_error = Some(e);
                Ok(false)
            }
        }
    });
    if let Some(e) = io_error {
        return Err(e);
    }
    scanned.map_err(std::io::Error::other)?;
    Ok(n)
}

fn write_capture(
    out: &mut dyn Write,
    format: ExportFormat,
    surt: &str,
    ts: &str,
    c: &CaptureInfo,
    cluster: Option<u64>,
) -> std::io::Result<()> {
    let mut m = capture_fields(c, cluster);
    match format {
        ExportFormat::Cdxj => {
            write!(out, "{surt} {ts} ")?;
            serde_json::to_writer(&mut *out, &m)?;
            out.write_all(b"\n")?;
        }
        ExportFormat::Jsonl => {
            m.insert("url_surtkey".into(), json!(surt));
            m.insert("fetch_time".into(), json!(ts));
            m.insert("content_digest".into(), json!(c.digest));
            m.insert("warc_filename".into(), json!(c.file));
            m.insert("warc_record_offset".into(), json!(c.offset));
            m.insert("warc_record_length".into(), json!(c.length));
            m.insert("fetch_status".into(), json!(c.status));
            if let Some(r) = c.r_prev {
                m.insert("resemblance_to_previous".into(), json!(r));
            }
            if let Some(r) = c.cr_prev {
                m.insert("content_resemblance_to_previous".into(), json!(r));
            }
            serde_json::to_writer(&mut *out, &m)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// The CDXJ fields of a capture, as `export` writes them (pywb/OutbackCDX names plus
/// `doc`, `cluster` and, for a revisit record, `type`); absent values are left out.
pub fn capture_fields(
    c: &CaptureInfo,
    cluster: Option<u64>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut obj = json!({
        "url": c.url,
        "mime": c.mime,
        "status": c.status.map(|s| s.to_string()),
        "digest": c.digest,
        "redirect": c.redirect,
        "filename": c.file,
        "offset": c.offset.to_string(),
        "length": c.length.to_string(),
        "doc": c.doc,
        "cluster": cluster,
    });
    let m = obj.as_object_mut().expect("object");
    m.retain(|_, v| !v.is_null());
    if c.kind == "revisit" {
        m.insert("type".into(), json!("revisit"));
    }
    std::mem::take(m)
}

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
    pub counts: super::codec::Counts,
}

/// The sweeps as `tidemark sweeps --json` prints them: one object per sweep, by id,
/// with its files' names in the order of their numbers.
pub fn sweeps_json(index: &Index) -> Result<serde_json::Value> {
    let mut names = index.files().names_by_sweep()?;
    let rows: Vec<SweepRow> = index
        .sweeps()
        .all()?
        .into_iter()
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
    index.captures().scan_keys(|surt, _| {
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
        sweeps: index.sweeps().all()?.len() as u64,
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

/// Rebuilds clusters at `threshold` from stored edges and records it as the threshold
/// in force. Returns (clusters of ≥ 2 docs, unions).
pub fn recluster(index: &mut Index, threshold: f64) -> Result<(u64, u64)> {
    let floor = index.params().edge_floor;
    if threshold < floor {
        return Err(IndexError::Invalid(format!(
            "threshold {threshold} is below the edge floor {floor}: pairs under the floor were never stored; re-ingest with a lower cluster.edge_floor"
        )));
    }
    let r = unionfind::rebuild(index, threshold)?;
    let mut c = index.counters();
    c.threshold = threshold;
    let mut batch = Batch::default();
    index.meta().put_counters(&mut batch, &c);
    index.write(batch)?;
    index.set_counters(c);
    super::snapshots::publish(index)?;
    Ok(r)
}
