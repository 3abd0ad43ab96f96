//! `export --format parquet`: the index's data for the engines analysts run (DuckDB,
//! Spark, Trino, pandas), as Parquet with zstd.
//!
//! ```text
//! DIR/captures/sweep=LABEL/part-0.parquet   one file per sweep (Hive-style: engines prune by sweep)
//! DIR/edges/part-0.parquet                  the stored edges: doc_a < doc_b
//! DIR/clusters/part-0.parquet               every doc and its cluster
//! ```
//!
//! Captures carry Common Crawl's column names for what both have (`url_surtkey`, `url`,
//! `url_host_name`, `fetch_time`, `fetch_status`, `content_digest`,
//! `content_mime_type`, `warc_filename`, `warc_record_offset`, `warc_record_length`),
//! so queries written for Common Crawl's columnar index run here, and tidemark's own
//! (`sweep`, `doc`, `cluster`, `resemblance_to_previous`, `redirect`). Integers are
//! signed (Spark reads unsigned 64-bit Parquet as decimals). Each file is written under
//! a temporary name and renamed when complete.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    Float32Builder, Int16Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::Serialize;

use crate::index::codec::EdgeInfo;
use crate::index::{unionfind, Index, IndexError};
use crate::url::host_as_written;

/// Rows per batch and row group.
const ROWS: usize = 65536;

/// What an export wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ParquetExport {
    /// Captures written.
    pub captures: u64,
    /// Edges written.
    pub edges: u64,
    /// Docs written (with their clusters).
    pub docs: u64,
    /// Files written, relative to the folder.
    pub files: Vec<String>,
}

fn fail(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Invalid(format!("cannot write {}: {e}", path.display()))
}

/// A Parquet file being written under a temporary name.
struct Out {
    path: PathBuf,
    tmp: PathBuf,
    schema: Arc<Schema>,
    writer: ArrowWriter<File>,
    /// Rows written so far.
    rows: u64,
}

impl Out {
    fn create(path: PathBuf, schema: Arc<Schema>) -> Result<Out, IndexError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        }
        let tmp = path.with_extension("parquet.partial");
        let file = File::create(&tmp).map_err(|e| fail(&tmp, e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("valid level"),
            ))
            .set_max_row_group_row_count(Some(ROWS))
            .build();
        let writer =
            ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| fail(&tmp, e))?;
        Ok(Out {
            path,
            tmp,
            schema,
            writer,
            rows: 0,
        })
    }

    /// Writes one batch of rows, given as its columns in schema order.
    fn write_columns(&mut self, cols: Vec<ArrayRef>) -> Result<(), IndexError> {
        let batch = RecordBatch::try_new(self.schema.clone(), cols)
            .map_err(|e| IndexError::Invalid(format!("parquet export: {e}")))?;
        self.rows += batch.num_rows() as u64;
        self.writer.write(&batch).map_err(|e| fail(&self.tmp, e))
    }

    /// Writes the rows held once they fill a batch (a scan's step: `Ok(true)` goes on).
    fn write_full<T>(
        &mut self,
        rows: &mut Vec<T>,
        columns: &dyn Fn(&[T]) -> Vec<ArrayRef>,
    ) -> Result<bool, IndexError> {
        if rows.len() >= ROWS {
            self.write_columns(columns(rows))?;
            rows.clear();
        }
        Ok(true)
    }

    /// Writes the rows left and closes the file.
    fn finish<T>(
        mut self,
        rows: &[T],
        columns: &dyn Fn(&[T]) -> Vec<ArrayRef>,
    ) -> Result<(), IndexError> {
        self.write_columns(columns(rows))?;
        self.close()
    }

    fn close(self) -> Result<(), IndexError> {
        self.writer.close().map_err(|e| fail(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| fail(&self.path, e))
    }
}

/// A sweep label as a Hive partition value: bytes other than letters, digits and
/// `-_.+` percent-encoded (as Spark writes them).
pub fn hive_value(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for b in label.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.+".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn capture_schema() -> Arc<Schema> {
    use DataType::*;
    let s = |n: &str| Field::new(n, Utf8, true);
    Arc::new(Schema::new(vec![
        Field::new("url_surtkey", Utf8, false),
        Field::new("url", Utf8, false),
        s("url_host_name"),
        Field::new(
            "fetch_time",
            Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("fetch_status", Int16, true),
        s("content_digest"),
        s("content_mime_type"),
        Field::new("warc_filename", Utf8, false),
        Field::new("warc_record_offset", Int64, false),
        Field::new("warc_record_length", Int64, false),
        Field::new("warc_record_type", Utf8, false),
        Field::new("sweep", Utf8, false),
        Field::new("doc", Int64, true),
        Field::new("cluster", Int64, true),
        Field::new("resemblance_to_previous", Float32, true),
        s("redirect"),
        Field::new("content_resemblance_to_previous", Float32, true),
    ]))
}

#[derive(Default)]
struct CaptureRows {
    len: usize,
    surt: StringBuilder,
    url: StringBuilder,
    host: StringBuilder,
    time: TimestampMicrosecondBuilder,
    status: Int16Builder,
    digest: StringBuilder,
    mime: StringBuilder,
    file: StringBuilder,
    offset: Int64Builder,
    length: Int64Builder,
    kind: StringBuilder,
    sweep: StringBuilder,
    doc: Int64Builder,
    cluster: Int64Builder,
    r_prev: Float32Builder,
    redirect: StringBuilder,
    cr_prev: Float32Builder,
}

impl CaptureRows {
    /// The rows held, as columns; the builders start again.
    fn columns(&mut self) -> Vec<ArrayRef> {
        self.len = 0;
        vec![
            Arc::new(self.surt.finish()),
            Arc::new(self.url.finish()),
            Arc::new(self.host.finish()),
            Arc::new(self.time.finish().with_timezone("UTC")),
            Arc::new(self.status.finish()),
            Arc::new(self.digest.finish()),
            Arc::new(self.mime.finish()),
            Arc::new(self.file.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.sweep.finish()),
            Arc::new(self.doc.finish()),
            Arc::new(self.cluster.finish()),
            Arc::new(self.r_prev.finish()),
            Arc::new(self.redirect.finish()),
            Arc::new(self.cr_prev.finish()),
        ]
    }
}

/// 14-digit UTC timestamp → microseconds since the epoch.
fn micros(ts: &str) -> Option<i64> {
    chrono::NaiveDateTime::parse_from_str(ts, "%Y%m%d%H%M%S")
        .ok()
        .map(|t| t.and_utc().timestamp_micros())
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_names_as_common_crawl_writes_them() {
        use crate::url::host_as_written as host_name;
        assert_eq!(
            host_name("https://www.Example.com:8080/a?b").as_deref(),
            Some("www.example.com")
        );
        assert_eq!(
            host_name("http://user:pw@example.org./").as_deref(),
            Some("example.org")
        );
        assert_eq!(host_name("http://[::1]:80/x").as_deref(), Some("[::1]"));
        assert_eq!(host_name("dns:example.com"), None);
        assert_eq!(super::hive_value("2026-11 a/b"), "2026-11%20a%2Fb");
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Writes the captures (of `sweep`, or all), the edges and the clusters into `dir`.
pub fn export_parquet(
    index: &Index,
    sweep: Option<u32>,
    dir: &Path,
) -> Result<ParquetExport, IndexError> {
    let labels: BTreeMap<u32, String> = index
        .sweeps()
        .all(&super::everything())?
        .into_iter()
        .map(|(id, s)| (id, s.label))
        .collect();
    let mut report = ParquetExport::default();
    let mut clusters = unionfind::ClusterIds::new(index, super::everything());
    // One open file per sweep: captures come in key order, sweeps interleaved.
    let mut outs: BTreeMap<u32, (Out, CaptureRows)> = BTreeMap::new();
    let mut failure: Option<IndexError> = None;
    super::each_capture(index, sweep, &mut clusters, |surt, ts, c, cluster| {
        let label = labels.get(&c.sweep).cloned().unwrap_or_default();
        if !outs.contains_key(&c.sweep) {
            let rel = format!("captures/sweep={}/part-0.parquet", hive_value(&label));
            match Out::create(dir.join(&rel), capture_schema()) {
                Ok(o) => {
                    report.files.push(rel);
                    outs.insert(c.sweep, (o, CaptureRows::default()));
                }
                Err(e) => {
                    failure = Some(e);
                    return Ok(false);
                }
            }
        }
        let (out, rows) = outs.get_mut(&c.sweep).expect("inserted above");
        rows.len += 1;
        rows.surt.append_value(surt);
        rows.url.append_value(&c.url);
        rows.host.append_option(host_as_written(&c.url));
        rows.time.append_option(micros(ts));
        rows.status.append_option(c.status.map(|s| s as i16));
        rows.digest.append_option(c.digest.as_deref());
        rows.mime.append_option(c.mime.as_deref());
        rows.file.append_value(&c.file);
        rows.offset.append_value(signed(c.offset));
        rows.length.append_value(signed(c.length));
        rows.kind.append_value(c.kind.as_str());
        rows.sweep.append_value(&label);
        rows.doc.append_option(c.doc.map(signed));
        rows.cluster.append_option(cluster.map(signed));
        rows.r_prev.append_option(c.r_prev);
        rows.redirect.append_option(c.redirect.as_deref());
        rows.cr_prev.append_option(c.cr_prev);
        report.captures += 1;
        if rows.len >= ROWS {
            if let Err(e) = out.write_columns(rows.columns()) {
                failure = Some(e);
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    for (_, (mut out, mut rows)) in outs {
        if rows.len > 0 {
            out.write_columns(rows.columns())?;
        }
        out.close()?;
    }
    report.edges = export_edges(index, dir)?;
    report.files.push("edges/part-0.parquet".into());
    report.docs = export_clusters(index, dir, &mut clusters)?;
    report.files.push("clusters/part-0.parquet".into());
    Ok(report)
}

fn export_edges(index: &Index, dir: &Path) -> Result<u64, IndexError> {
    use DataType::{Float32, Int64};
    let schema = Arc::new(Schema::new(vec![
        Field::new("doc_a", Int64, false),
        Field::new("doc_b", Int64, false),
        Field::new("resemblance", Float32, false),
        // The larger of the two containments, then each.
        Field::new("containment", Float32, false),
        Field::new("containment_a_in_b", Float32, false),
        Field::new("containment_b_in_a", Float32, false),
    ]));
    let mut out = Out::create(dir.join("edges/part-0.parquet"), schema)?;
    let columns = |rows: &[(u64, u64, EdgeInfo)]| -> Vec<ArrayRef> {
        let ints = |f: &dyn Fn(&(u64, u64, EdgeInfo)) -> u64| -> ArrayRef {
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| signed(f(r))),
            ))
        };
        let floats = |f: &dyn Fn(&EdgeInfo) -> f32| -> ArrayRef {
            Arc::new(Float32Array::from_iter_values(rows.iter().map(|r| f(&r.2))))
        };
        vec![
            ints(&|r| r.0),
            ints(&|r| r.1),
            floats(&|e| e.resemblance),
            floats(&|e| e.contain_lo_in_hi.max(e.contain_hi_in_lo)),
            floats(&|e| e.contain_lo_in_hi),
            floats(&|e| e.contain_hi_in_lo),
        ]
    };
    let mut rows = Vec::new();
    let mut n = 0u64;
    index.edges().for_each(|hi, list| {
        n += list.len() as u64;
        rows.extend(list.into_iter().map(|(lo, e)| (lo, hi, e)));
        out.write_full(&mut rows, &columns)
    })?;
    out.finish(&rows, &columns)?;
    Ok(n)
}

fn export_clusters(
    index: &Index,
    dir: &Path,
    clusters: &mut unionfind::ClusterIds,
) -> Result<u64, IndexError> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("doc", DataType::Int64, false),
        Field::new("cluster", DataType::Int64, false),
    ]));
    let mut out = Out::create(dir.join("clusters/part-0.parquet"), schema)?;
    let columns = |rows: &[(u64, u64)]| -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| signed(r.0)),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| signed(r.1)),
            )),
        ]
    };
    let mut rows = Vec::new();
    index.docs().for_each(|doc, _| {
        rows.push((doc, clusters.of(doc)?));
        out.write_full(&mut rows, &columns)
    })?;
    let n = rows.len() as u64 + out.rows;
    out.finish(&rows, &columns)?;
    Ok(n)
}
