//! `tidemark sketch`: WARC/ARC files to shards, one Parquet file per input file, on
//! all cores, deterministic (the same input and parameters give the same bytes).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, ListBuilder, StringBuilder, UInt16Builder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::{ArrayRef, FixedSizeBinaryArray, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::EnabledStatistics;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde::Serialize;

use super::{key, schema, shard_path, ShardError, ShardParams, SHARD_FORMAT};
use crate::canon::{Canon, MediaKind};
use crate::capture::Capture;
use crate::index::postings::posting_level;
use crate::packed::{self, StoredSketch};
use crate::read::file_identity;
use crate::read::Record;
use crate::scan::{record_bytes, scan_files_with_skip, ScanEvent, ScanOptions};
use crate::url::surt;

/// Rows per row group: the unit a reader (and an engine's task) decodes at once.
const ROWS_PER_GROUP: usize = 8192;

/// Rows per batch handed to the Parquet writer: small enough that the column builders
/// stay in the cache and never grow to huge pages (with 8,192 rows a batch the sketch
/// column alone took 16 MB, zeroed and copied as it grew).
const ROWS_PER_BATCH: usize = 512;

/// Columns of mostly distinct values: no dictionary (Parquet tries one for every
/// column, hashing every value until the dictionary outgrows its page), no statistics.
const DISTINCT: [&str; 12] = [
    "record",
    "offset",
    "length",
    "record_bytes",
    "url",
    "url_surtkey",
    "payload_digest",
    "fingerprint",
    "sketch",
    "payload_length",
    "title",
    "text",
];

/// How to sketch.
#[derive(Debug, Clone)]
pub struct SketchOptions {
    /// Worker threads.
    pub threads: usize,
    /// Parameters (those of the index the shards are for).
    pub params: ShardParams,
    /// Keep canonical texts (for an index with `store_texts`).
    pub texts: bool,
}

/// One shard written.
#[derive(Debug, Clone, Serialize)]
pub struct ShardWritten {
    /// The source file.
    pub source: String,
    /// The shard.
    pub shard: String,
    /// Records (rows).
    pub records: u64,
    /// Bytes of the shard.
    pub bytes: u64,
    /// The source's damage, if its reading stopped early: offset and message.
    pub error: Option<(u64, String)>,
}

/// What `sketch` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SketchSummary {
    /// Shards written, in input order.
    pub shards: Vec<ShardWritten>,
    /// Records in all.
    pub records: u64,
    /// Records with a sketch.
    pub sketched: u64,
    /// Decompressed bytes read.
    pub bytes: u64,
    /// Bytes of all shards.
    pub shard_bytes: u64,
}

/// What a worker makes of a record beside its capture.
struct Extra {
    sketch: Option<Vec<u8>>,
    text: Option<String>,
}

/// The shard being written for one source file.
struct Open {
    tmp: PathBuf,
    path: PathBuf,
    writer: ArrowWriter<File>,
    rows: Rows,
    record: u64,
}

/// Sketches `files` into one shard each in `out` (created if absent). A source file's
/// shard is written under a temporary name and renamed when complete, so a shard that
/// exists is whole. `progress` gets the compressed bytes consumed and their total.
pub fn sketch_files(
    files: &[PathBuf],
    out: &Path,
    opts: &SketchOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<SketchSummary, ShardError> {
    std::fs::create_dir_all(out)
        .map_err(|e| ShardError::new(out, format!("cannot create the folder: {e}")))?;
    // Identities first: an unreadable file stops everything before anything is written,
    // and two inputs of one name would overwrite each other's shard.
    let mut sources = Vec::with_capacity(files.len());
    let mut total = 0u64;
    let mut names = std::collections::HashMap::new();
    for f in files {
        let id = file_identity(f).map_err(|e| ShardError::new(f, format!("cannot read: {e}")))?;
        let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        total += size;
        let shard = shard_path(out, f);
        if let Some(other) = names.insert(shard.clone(), f.clone()) {
            return Err(ShardError::new(
                f,
                format!(
                    "has the same file name as {}: their shards would both be {}; sketch them into different folders",
                    other.display(),
                    shard.display()
                ),
            ));
        }
        let abs = std::path::absolute(f).unwrap_or_else(|_| f.clone());
        sources.push((abs.display().to_string(), id, size, shard));
    }
    let scan = ScanOptions {
        threads: opts.threads,
        params: opts.params.sketch(),
        record_cap: opts.params.record_cap as usize,
        anchor_window: opts.params.anchor_window as usize,
        read_only: false,
        hold: 0,
    };
    let posting_target = opts.params.posting_target;
    let texts = opts.texts;
    let prepare = |cap: &Capture, canon: &Canon| -> Option<Extra> {
        let sk = cap.sketch.as_ref()?;
        let level = posting_level(sk, posting_target);
        Some(Extra {
            sketch: Some(packed::encode(&StoredSketch::new(sk, level))),
            text: texts.then(|| canon.text.clone()),
        })
    };
    let mut summary = SketchSummary::default();
    let mut open: Option<Open> = None;
    let mut failure: Option<ShardError> = None;
    let (mut done, mut base) = (0u64, 0u64);
    let nothing = crate::capture::Known::NOTHING;
    scan_files_with_skip(files, &[], &scan, &nothing, &prepare, |ev| {
        let r = match ev {
            ScanEvent::FileStart { file } => {
                let (source, id, size, path) = &sources[file];
                start(path, source, id, *size, opts).map(|o| open = Some(o))
            }
            ScanEvent::Record { scanned, .. } => {
                let sc = *scanned;
                done = base + sc.record.offset + sc.record.length;
                let o = open.as_mut().expect("a file's records follow its start");
                summary.records += 1;
                summary.sketched += sc.capture.sketch.is_some() as u64;
                o.rows.push(o.record, &sc.record, &sc.capture, sc.prepared);
                o.record += 1;
                if o.rows.len >= ROWS_PER_BATCH {
                    let path = o.path.clone();
                    o.rows
                        .flush(&mut o.writer)
                        .map_err(|e| ShardError::new(&path, e.to_string()))
                } else {
                    Ok(())
                }
            }
            ScanEvent::Failed {
                file,
                offset,
                message,
            } => Err(ShardError::new(
                &sources[file].3,
                crate::scan::failed_on(offset, &message),
            )),
            ScanEvent::FileEnd {
                file,
                records,
                bytes,
                error,
            } => {
                base += sources[file].2;
                done = base;
                summary.bytes += bytes;
                let o = open.take().expect("a file's end follows its start");
                let error = error.map(|e| (e.offset, e.message));
                finish(o, records, bytes, error.clone()).map(|(shard, size)| {
                    summary.shard_bytes += size;
                    summary.shards.push(ShardWritten {
                        source: sources[file].0.clone(),
                        shard: shard.display().to_string(),
                        records,
                        bytes: size,
                        error,
                    });
                })
            }
        };
        progress(done, total);
        match r {
            Ok(()) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    });
    if let Some(o) = open {
        let _ = std::fs::remove_file(&o.tmp);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

fn start(
    path: &Path,
    source: &str,
    id: &[u8; 16],
    size: u64,
    opts: &SketchOptions,
) -> Result<Open, ShardError> {
    let p = &opts.params;
    let kv = |k: &str, v: String| KeyValue::new(k.to_string(), v);
    let meta = vec![
        kv(key::FORMAT, SHARD_FORMAT.to_string()),
        kv(key::SCHEME, p.scheme.clone()),
        kv(key::SHINGLE_WIDTH, p.shingle_width.to_string()),
        kv(key::SEED, p.seed.to_string()),
        kv(key::SAMPLE_TARGET, p.sample_target.to_string()),
        kv(key::POSTING_TARGET, p.posting_target.to_string()),
        kv(key::RECORD_CAP, p.record_cap.to_string()),
        kv(key::ANCHOR_WINDOW, p.anchor_window.to_string()),
        kv(key::TEXTS, opts.texts.to_string()),
        kv(key::SOURCE, source.to_string()),
        kv(key::SOURCE_IDENTITY, data_encoding::HEXLOWER.encode(id)),
        kv(key::SOURCE_BYTES, size.to_string()),
    ];
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("level 3 is valid"),
        ))
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .set_key_value_metadata(Some(meta));
    for c in DISTINCT {
        let col = ColumnPath::from(c);
        props = props
            .set_column_dictionary_enabled(col.clone(), false)
            .set_column_statistics_enabled(col, EnabledStatistics::None);
    }
    // Record numbers and offsets ascend: deltas take a few bits a row.
    for c in ["record", "offset"] {
        props = props.set_column_encoding(ColumnPath::from(c), Encoding::DELTA_BINARY_PACKED);
    }
    // Sketches are Rice codes of uniform hashes: zstd found nothing to take out of them.
    props = props.set_column_compression(ColumnPath::from("sketch"), Compression::UNCOMPRESSED);
    let props = props.build();
    let tmp = path.with_extension("parquet.partial");
    let file = File::create(&tmp)
        .map_err(|e| ShardError::new(&tmp, format!("cannot create the shard: {e}")))?;
    let writer = ArrowWriter::try_new(file, schema(), Some(props))
        .map_err(|e| ShardError::new(&tmp, e.to_string()))?;
    Ok(Open {
        tmp,
        path: path.to_path_buf(),
        writer,
        rows: Rows {
            name: Path::new(source)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            ..Rows::default()
        },
        record: 0,
    })
}

fn finish(
    mut o: Open,
    records: u64,
    bytes: u64,
    error: Option<(u64, String)>,
) -> Result<(PathBuf, u64), ShardError> {
    let fail = |e: &dyn std::fmt::Display| ShardError::new(&o.tmp, e.to_string());
    o.rows.flush(&mut o.writer).map_err(|e| fail(&e))?;
    let kv = |k: &str, v: String| KeyValue::new(k.to_string(), v);
    o.writer
        .append_key_value_metadata(kv(key::RECORDS, records.to_string()));
    o.writer
        .append_key_value_metadata(kv(key::DECOMPRESSED_BYTES, bytes.to_string()));
    if let Some((offset, message)) = error {
        o.writer
            .append_key_value_metadata(kv(key::ERROR_OFFSET, offset.to_string()));
        o.writer
            .append_key_value_metadata(kv(key::ERROR_MESSAGE, message));
    }
    let file = o.writer.into_inner().map_err(|e| fail(&e))?;
    file.sync_all().map_err(|e| fail(&e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    std::fs::rename(&o.tmp, &o.path).map_err(|e| fail(&e))?;
    Ok((o.path, size))
}

/// Columns being filled, in [`schema`] order.
#[derive(Default)]
struct Rows {
    /// The source's file name (the `file` column, as captures name it).
    name: String,
    len: usize,
    record: UInt64Builder,
    offset: UInt64Builder,
    length: UInt64Builder,
    record_bytes: UInt64Builder,
    record_type: StringBuilder,
    url: StringBuilder,
    url_surtkey: StringBuilder,
    timestamp: StringBuilder,
    status: UInt16Builder,
    mime: StringBuilder,
    payload_digest: StringBuilder,
    redirect: StringBuilder,
    refers_to_url: StringBuilder,
    refers_to_date: StringBuilder,
    media: StringBuilder,
    tokens: UInt32Builder,
    payload_length: UInt64Builder,
    title: StringBuilder,
    /// Fixed-size binary has no default builder: held as bytes until the batch.
    fingerprint: Vec<Option<[u8; 16]>>,
    shingles: UInt32Builder,
    sketch: BinaryBuilder,
    truncated: BooleanBuilder,
    warnings: ListBuilder<StringBuilder>,
    file: StringBuilder,
    text: StringBuilder,
    links: BinaryBuilder,
}

impl Rows {
    fn push(&mut self, no: u64, rec: &Record, cap: &Capture, extra: Option<Extra>) {
        self.len += 1;
        self.record.append_value(no);
        self.offset.append_value(rec.offset);
        self.length.append_value(rec.length);
        self.record_bytes.append_value(record_bytes(rec));
        self.record_type.append_value(rec.kind.as_str());
        self.url.append_option(cap.url.as_deref());
        self.url_surtkey.append_option(cap.url.as_deref().map(surt));
        self.timestamp.append_option(cap.timestamp.as_deref());
        self.status.append_option(cap.status);
        self.mime.append_option(cap.mime.as_deref());
        self.payload_digest
            .append_option(cap.payload_digest.as_deref());
        self.redirect.append_option(cap.redirect.as_deref());
        let (rt_url, rt_date) = match &cap.refers_to {
            Some((u, d)) => (u.as_deref(), d.as_deref()),
            None => (None, None),
        };
        self.refers_to_url.append_option(rt_url);
        self.refers_to_date.append_option(rt_date);
        self.media.append_value(match cap.media {
            MediaKind::Html => "html",
            MediaKind::Text => "text",
            MediaKind::Other => "other",
        });
        self.tokens.append_value(cap.tokens);
        self.payload_length.append_value(cap.payload_len);
        self.title.append_option(cap.title.as_deref());
        self.fingerprint
            .push(cap.text_fingerprint.map(u128::to_be_bytes));
        self.shingles
            .append_option(cap.sketch.as_ref().map(|s| s.shingles));
        let (sketch, text) = match extra {
            Some(e) => (e.sketch, e.text),
            None => (None, None),
        };
        self.sketch.append_option(sketch);
        self.truncated.append_value(cap.truncated);
        for w in rec.warnings.iter().chain(&cap.warnings) {
            self.warnings.values().append_value(w);
        }
        self.warnings.append(true);
        self.file.append_value(&self.name);
        self.text.append_option(text);
        self.links
            .append_option((!cap.links.is_empty()).then_some(&cap.links[..]));
    }

    /// Writes the rows held as one batch.
    fn flush(&mut self, w: &mut ArrowWriter<File>) -> parquet::errors::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.record.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.length.finish()),
            Arc::new(self.record_bytes.finish()),
            Arc::new(self.record_type.finish()),
            Arc::new(self.url.finish()),
            Arc::new(self.url_surtkey.finish()),
            Arc::new(self.timestamp.finish()),
            Arc::new(self.status.finish()),
            Arc::new(self.mime.finish()),
            Arc::new(self.payload_digest.finish()),
            Arc::new(self.redirect.finish()),
            Arc::new(self.refers_to_url.finish()),
            Arc::new(self.refers_to_date.finish()),
            Arc::new(self.media.finish()),
            Arc::new(self.tokens.finish()),
            Arc::new(self.payload_length.finish()),
            Arc::new(self.title.finish()),
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    self.fingerprint.drain(..),
                    16,
                )
                .expect("16 bytes in a 16-byte column"),
            ),
            Arc::new(self.shingles.finish()),
            Arc::new(self.sketch.finish()),
            Arc::new(self.truncated.finish()),
            Arc::new(self.warnings.finish()),
            Arc::new(self.file.finish()),
            Arc::new(self.text.finish()),
            Arc::new(self.links.finish()),
        ];
        self.len = 0;
        let batch = RecordBatch::try_new(schema(), cols)?;
        w.write(&batch)
    }
}
