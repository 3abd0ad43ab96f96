//! Export: every capture of the index, in key order, as lines other tools read (CDXJ
//! for pywb and OutbackCDX, JSON lines with Common Crawl's column names), and the
//! index's data as Parquet ([`parquet`]) for DuckDB, Spark and the like.

pub mod parquet;

use crate::read::RecordKind;
use std::io::Write;

use serde_json::json;

use crate::index::codec::CaptureInfo;
use crate::index::unionfind;
use crate::index::Index;

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
    // Write errors are carried out of the scan as they are (a closed pipe is not an
    // index error); index errors come out of the scan itself.
    let mut io_error: Option<std::io::Error> = None;
    let mut clusters = unionfind::ClusterIds::new(index, everything());
    let scanned =
        each_capture(
            index,
            sweep,
            &mut clusters,
            |surt, ts, c, cluster| match write_capture(out, format, surt, ts, c, cluster) {
                Ok(()) => {
                    n += 1;
                    Ok(true)
                }
                Err(e) => {
                    io_error = Some(e);
                    Ok(false)
                }
            },
        );
    if let Some(e) = io_error {
        return Err(e);
    }
    scanned.map_err(std::io::Error::other)?;
    Ok(n)
}

/// Everything, as the index holds it: an export is the archive's own, under no access
/// rules.
pub(crate) fn everything() -> crate::access::Reader {
    crate::access::Reader::everything()
}

/// Calls `each` with every capture in key order (of `sweep` only, if given) and its
/// cluster id (from `clusters`), until it returns false.
pub(crate) fn each_capture(
    index: &Index,
    sweep: Option<u32>,
    clusters: &mut unionfind::ClusterIds,
    mut each: impl FnMut(&str, &str, &CaptureInfo, Option<u64>) -> crate::index::Result<bool>,
) -> crate::index::Result<()> {
    index.captures().scan_all(&everything(), |(surt, ts, c)| {
        if sweep.is_some_and(|s| s != c.sweep) {
            return Ok(true);
        }
        let cluster = c.doc.map(|d| clusters.of(d)).transpose()?;
        each(surt, ts, &c, cluster)
    })
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

/// A digest as pywb's indexer and IA's CDX write it: a SHA-1 without its `sha1:` label
/// (other algorithms keep theirs); none when nothing is left (`sha1:` and blanks).
pub fn cdx_digest(d: &str) -> Option<String> {
    let d = d.strip_prefix("sha1:").unwrap_or(d).trim();
    (!d.is_empty()).then(|| d.to_string())
}

/// A media type as pywb's indexer and IA's CDX write it: a revisit's is `warc/revisit`,
/// none is `unk`.
pub fn cdx_mime(c: &CaptureInfo) -> String {
    match (&c.kind, &c.mime) {
        (RecordKind::Revisit, _) => "warc/revisit".into(),
        (_, Some(m)) if !m.is_empty() => m.clone(),
        _ => "unk".into(),
    }
}

/// An HTTP status as pywb's indexer and IA's CDX write it: none for a revisit (IA's `-`),
/// whose own status says only that the content was not sent again.
pub fn cdx_status(c: &CaptureInfo) -> Option<String> {
    match c.kind {
        RecordKind::Revisit => None,
        _ => c.status.map(|s| s.to_string()),
    }
}

/// The CDXJ fields of a capture, as `export` writes them (pywb/OutbackCDX names plus
/// `doc`, `cluster` and, for a revisit record, `type`); absent values are left out.
pub fn capture_fields(
    c: &CaptureInfo,
    cluster: Option<u64>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut obj = json!({
        "url": c.url,
        "mime": cdx_mime(c),
        "status": cdx_status(c),
        "digest": c.digest.as_deref().and_then(cdx_digest),
        "redirect": c.redirect,
        "filename": c.file,
        "offset": c.offset.to_string(),
        "length": c.length.to_string(),
        "doc": c.doc,
        "cluster": cluster,
    });
    let m = obj.as_object_mut().expect("object");
    m.retain(|_, v| !v.is_null());
    if c.kind == RecordKind::Revisit {
        m.insert("type".into(), json!("revisit"));
    }
    std::mem::take(m)
}
