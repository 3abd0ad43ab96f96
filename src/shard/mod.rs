//! Sketch shards: the map stage of an ingest, as Parquet files.
//!
//! Reading, canonicalizing and sketching are per record and need no index; only the
//! merge into the index (candidates, edges, unions, captures) needs one writer. A shard
//! is what `tidemark sketch` makes of one WARC/ARC file: one row per record with
//! everything `ingest` needs to commit it without reading the WARC again, and in the
//! file's key-value metadata the sketch parameters, the source file's identity (the
//! same identity `ingest` keys its resume points by) and how its reading ended.
//! `tidemark ingest --sketches` commits shards ([`read`]) through the same writer as
//! WARC files, so the index is the same.
//!
//! The sketch column holds the doc's sketch in the form the index stores it (the
//! `sketches` value: compact values and posting keys, Rice-coded), not as a list of
//! u64: everything an estimate, a candidate search and the index need is in it, and it
//! takes ~1.3–2 KB a new doc where the full 64-bit values take 5–7 KB (they are uniform
//! hashes: Parquet's encodings and zstd do not shrink them). The form depends on the
//! posting target, so that is one of the parameters a shard must share with the index.

pub mod read;
pub mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};

use crate::index::IndexParams;

/// Version of the shard format (`tidemark.shard` in the metadata): 2 since records are
/// read as pywb's indexer reads them (dates, `metadata` captures, non-http records), so a
/// shard of format 1 would give another index than its WARC file; 3 since pages' links
/// are kept (the `links` column, `tidemark.anchor_window`); 4 since a page's window
/// words are kept once (the `links` family's layout, format byte 2); 5 since links carry
/// their origin (format byte 3; a shard of format 4 is still read).
pub const SHARD_FORMAT: u32 = 5;

/// Metadata keys.
mod key {
    pub const FORMAT: &str = "tidemark.shard";
    pub const SCHEME: &str = "tidemark.scheme";
    pub const SHINGLE_WIDTH: &str = "tidemark.shingle_width";
    pub const SEED: &str = "tidemark.seed";
    pub const SAMPLE_TARGET: &str = "tidemark.sample_target";
    pub const POSTING_TARGET: &str = "tidemark.posting_target";
    pub const RECORD_CAP: &str = "tidemark.record_cap";
    pub const ANCHOR_WINDOW: &str = "tidemark.anchor_window";
    pub const TEXTS: &str = "tidemark.texts";
    pub const SOURCE: &str = "tidemark.source";
    pub const SOURCE_IDENTITY: &str = "tidemark.source_identity";
    pub const SOURCE_BYTES: &str = "tidemark.source_bytes";
    pub const RECORDS: &str = "tidemark.records";
    pub const DECOMPRESSED_BYTES: &str = "tidemark.decompressed_bytes";
    pub const ERROR_OFFSET: &str = "tidemark.error_offset";
    pub const ERROR_MESSAGE: &str = "tidemark.error_message";
}

/// The sketch parameters a shard was made with; an index takes only shards made with
/// its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardParams {
    /// Sketch scheme.
    pub scheme: String,
    /// Tokens per shingle.
    pub shingle_width: u32,
    /// Hash seed.
    pub seed: u64,
    /// Sketch sample target T.
    pub sample_target: u32,
    /// Posting target P (the stored sketch's form depends on it).
    pub posting_target: u32,
    /// Bytes of a record kept for analysis (truncation depends on it).
    pub record_cap: u64,
    /// Tokens either side of an anchor kept with each link (`links.window`).
    pub anchor_window: u32,
}

impl ShardParams {
    /// The parameters of an index, with the record cap of an ingest and the index's
    /// anchor window.
    pub fn of_index(p: &IndexParams, record_cap: usize, anchor_window: u32) -> ShardParams {
        ShardParams {
            scheme: p.scheme.clone(),
            shingle_width: p.shingle_width,
            seed: p.seed,
            sample_target: p.sample_target,
            posting_target: p.posting_target,
            record_cap: record_cap as u64,
            anchor_window,
        }
    }

    /// The sketch parameters of the scan.
    pub fn sketch(&self) -> crate::sketch::SketchParams {
        crate::sketch::SketchParams {
            shingle_width: self.shingle_width,
            seed: self.seed,
            sample_target: self.sample_target,
        }
    }

    /// What differs from `want`, as `name: shard has X, index has Y`.
    pub fn diffs(&self, want: &ShardParams) -> Vec<String> {
        let mut d = Vec::new();
        let mut cmp = |name: &str, have: String, want: String| {
            if have != want {
                d.push(format!("{name}: the shard has {have}, the index {want}"));
            }
        };
        cmp("sketch.scheme", self.scheme.clone(), want.scheme.clone());
        cmp(
            "sketch.shingle_width",
            self.shingle_width.to_string(),
            want.shingle_width.to_string(),
        );
        cmp("sketch.seed", self.seed.to_string(), want.seed.to_string());
        cmp(
            "sketch.sample_target",
            self.sample_target.to_string(),
            want.sample_target.to_string(),
        );
        cmp(
            "cluster.posting_target",
            self.posting_target.to_string(),
            want.posting_target.to_string(),
        );
        cmp(
            "ingest.record_cap",
            self.record_cap.to_string(),
            want.record_cap.to_string(),
        );
        cmp(
            "links.window",
            self.anchor_window.to_string(),
            want.anchor_window.to_string(),
        );
        d
    }
}

/// What a shard says of itself and its source file.
#[derive(Debug, Clone)]
pub struct ShardInfo {
    /// The shard's path.
    pub path: PathBuf,
    /// Sketch parameters.
    pub params: ShardParams,
    /// The rows carry canonical texts (for an index that stores them).
    pub texts: bool,
    /// The source file's absolute path when it was sketched.
    pub source: String,
    /// Its identity ([`crate::read::file_identity`]).
    pub identity: [u8; 16],
    /// Its size in bytes.
    pub source_bytes: u64,
    /// Records read from it (rows of the shard).
    pub records: u64,
    /// Decompressed bytes read.
    pub decompressed_bytes: u64,
    /// The damage that ended its reading: offset and message.
    pub error: Option<(u64, String)>,
}

/// A shard that cannot be used, with the file named.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct ShardError {
    /// The shard (or source file).
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

impl ShardError {
    pub(crate) fn new(path: &Path, message: impl Into<String>) -> ShardError {
        ShardError {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// The columns of a shard, in order.
pub fn schema() -> Arc<Schema> {
    use DataType::*;
    let s = |n: &str| Field::new(n, Utf8, true);
    Arc::new(Schema::new(vec![
        // Position of the record in its file (0-based), and where it is.
        Field::new("record", UInt64, false),
        Field::new("offset", UInt64, false),
        Field::new("length", UInt64, false),
        // Decompressed bytes of the record (its declared length, or what was read).
        Field::new("record_bytes", UInt64, false),
        Field::new("record_type", Utf8, false),
        s("url"),
        s("url_surtkey"),
        // 14 digits, UTC.
        s("timestamp"),
        Field::new("status", UInt16, true),
        s("mime"),
        s("payload_digest"),
        s("redirect"),
        s("refers_to_url"),
        s("refers_to_date"),
        // html, text or other: how the payload was canonicalized.
        Field::new("media", Utf8, false),
        Field::new("tokens", UInt32, false),
        Field::new("payload_length", UInt64, false),
        s("title"),
        // 128-bit fingerprint of the canonical text, big-endian.
        Field::new("fingerprint", FixedSizeBinary(16), true),
        // Exact number of distinct shingles.
        Field::new("shingles", UInt32, true),
        // The sketch as the index stores it (see the module's comment).
        Field::new("sketch", Binary, true),
        Field::new("truncated", Boolean, false),
        Field::new(
            "warnings",
            List(Arc::new(Field::new("item", Utf8, true))),
            false,
        ),
        Field::new("file", Utf8, false),
        // The canonical text, only in shards made for an index that stores texts.
        s("text"),
        // The page's outgoing links with their anchor windows, as the `links` family keeps
        // them (`crate::links::PageLinks`, format byte 3); none for a page without.
        Field::new("links", Binary, true),
    ]))
}

/// The shard a source file's rows go to in `dir`.
pub fn shard_path(dir: &Path, source: &Path) -> PathBuf {
    let name = source
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "input".into());
    dir.join(format!("{name}.parquet"))
}
