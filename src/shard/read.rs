//! Shards back into records and captures, for `ingest --sketches`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use super::{key, schema, ShardError, ShardInfo, ShardParams, SHARD_FORMAT};
use crate::canon::MediaKind;
use crate::capture::Capture;
use crate::packed::{self, StoredSketch};
use crate::read::RecordKind;
use crate::read::{ReadError, Record};
use crate::scan::Batch;

/// One record of a shard, as `ingest` commits it.
#[derive(Debug)]
pub struct ShardRow {
    /// The record (no block, no fields: its type, offset and length).
    pub record: Record,
    /// Its capture (without the sketch: see `stored`).
    pub capture: Capture,
    /// Its sketch in stored form.
    pub stored: Option<StoredSketch>,
    /// Its canonical text, when the shard keeps texts.
    pub text: Option<String>,
}

impl crate::scan::Located for Result<ShardRow, ShardError> {
    fn offset(&self) -> Option<u64> {
        self.as_ref().ok().map(|r| r.record.offset)
    }
}

/// Rows per batch handed to the workers (as the WARC reader's batches).
const BATCH_ROWS: usize = 64;

/// A Parquet file's key-value metadata (keys without a value left out).
pub fn key_values(meta: &parquet::file::metadata::ParquetMetaData) -> HashMap<String, String> {
    meta.file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .filter_map(|k| Some((k.key.clone(), k.value.clone()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Opens a shard and reads what it says of itself: a file that is not a shard, is
/// truncated, or is of another shard format is refused, naming it.
pub fn open(path: &Path) -> Result<ShardInfo, ShardError> {
    let (info, _) = open_reader(path)?;
    Ok(info)
}

fn open_reader(
    path: &Path,
) -> Result<(ShardInfo, ParquetRecordBatchReaderBuilder<File>), ShardError> {
    let err = |m: String| ShardError::new(path, m);
    let file = File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| err(format!("not a readable Parquet file (truncated?): {e}")))?;
    let kv = key_values(builder.metadata());
    let get = |k: &str| -> Result<&str, ShardError> {
        kv.get(k)
            .map(String::as_str)
            .ok_or_else(|| err(format!("not a tidemark shard: no {k} in its metadata")))
    };
    let num = |k: &str| -> Result<u64, ShardError> {
        get(k)?
            .parse::<u64>()
            .map_err(|_| err(format!("damaged shard metadata: {k} is not a number")))
    };
    let format = num(key::FORMAT)?;
    // Format 4 differs only in its links' values (no origin), which are read as they are.
    if format != SHARD_FORMAT as u64 && format != 4 {
        return Err(err(format!(
            "shard format {format}; this tidemark reads formats 4 and {SHARD_FORMAT}: make the shard again with this tidemark's `sketch`"
        )));
    }
    let want = schema();
    let have = builder.schema();
    for f in want.fields() {
        match have.field_with_name(f.name()) {
            Ok(h) if h.data_type() == f.data_type() => {}
            Ok(h) => {
                return Err(err(format!(
                    "damaged shard: column {} is {}, not {}",
                    f.name(),
                    h.data_type(),
                    f.data_type()
                )))
            }
            Err(_) => return Err(err(format!("damaged shard: no column {}", f.name()))),
        }
    }
    let u32_of = |k: &str| -> Result<u32, ShardError> {
        u32::try_from(num(k)?).map_err(|_| err(format!("damaged shard metadata: {k} too large")))
    };
    let params = ShardParams {
        scheme: get(key::SCHEME)?.to_string(),
        shingle_width: u32_of(key::SHINGLE_WIDTH)?,
        seed: num(key::SEED)?,
        sample_target: u32_of(key::SAMPLE_TARGET)?,
        posting_target: u32_of(key::POSTING_TARGET)?,
        record_cap: num(key::RECORD_CAP)?,
        anchor_window: u32_of(key::ANCHOR_WINDOW)?,
    };
    let identity = data_encoding::HEXLOWER
        .decode(get(key::SOURCE_IDENTITY)?.as_bytes())
        .ok()
        .and_then(|v| <[u8; 16]>::try_from(v).ok())
        .ok_or_else(|| err(format!("damaged shard metadata: {}", key::SOURCE_IDENTITY)))?;
    let records = num(key::RECORDS)?;
    let rows = builder.metadata().file_metadata().num_rows();
    if rows < 0 || rows as u64 != records {
        return Err(err(format!(
            "damaged shard: {rows} rows where its metadata says {records} records"
        )));
    }
    let error = match kv.get(key::ERROR_OFFSET) {
        Some(_) => Some((
            num(key::ERROR_OFFSET)?,
            get(key::ERROR_MESSAGE)?.to_string(),
        )),
        None => None,
    };
    let info = ShardInfo {
        path: path.to_path_buf(),
        params,
        texts: get(key::TEXTS)? == "true",
        source: get(key::SOURCE)?.to_string(),
        identity,
        source_bytes: num(key::SOURCE_BYTES)?,
        records,
        decompressed_bytes: num(key::DECOMPRESSED_BYTES)?,
        error,
    };
    Ok((info, builder))
}

/// Reads `shards` in order into batches, dropping the first `skip[i]` rows of shard i
/// (a resumed ingest). A row that cannot be read or decoded is an `Err` item naming
/// the shard and the row: the caller stops there (what it committed stays).
pub fn read_shards(
    shards: &[PathBuf],
    skip: &[u64],
    send: &mut dyn FnMut(Batch<Result<ShardRow, ShardError>>) -> bool,
) {
    let mut seq = 0u64;
    for (fi, path) in shards.iter().enumerate() {
        let mut next = |items, end, start| {
            let b = Batch {
                seq,
                file: fi,
                items,
                end,
                start,
                failed: None,
            };
            seq += 1;
            send(b)
        };
        let skip = skip.get(fi).copied().unwrap_or(0);
        let (info, builder) = match open_reader(path) {
            Ok(x) => x,
            Err(e) => {
                next(vec![Err(e)], None, true);
                return;
            }
        };
        let reader = builder
            .with_batch_size(BATCH_ROWS)
            .with_offset(skip as usize)
            .build();
        let mut rows = match reader {
            Ok(r) => Rows {
                reader: r,
                path,
                row: skip,
            },
            Err(e) => {
                next(vec![Err(ShardError::new(path, e.to_string()))], None, true);
                return;
            }
        };
        let (mut start, mut bytes) = (true, 0u64);
        loop {
            match rows.next_batch() {
                Ok(Some(items)) => {
                    // As the WARC reader counts: the records read in this run.
                    bytes += items.iter().map(|r| r.record.declared_length).sum::<u64>();
                    if !next(items.into_iter().map(Ok).collect(), None, start) {
                        return;
                    }
                    start = false;
                }
                Ok(None) => break,
                Err(e) => {
                    next(vec![Err(e)], None, start);
                    return;
                }
            }
        }
        let end = (
            info.records,
            bytes,
            info.error
                .map(|(offset, message)| ReadError { offset, message }),
        );
        if !next(Vec::new(), Some(end), start) {
            return;
        }
    }
}

struct Rows<'a> {
    reader: ParquetRecordBatchReader,
    path: &'a Path,
    /// Number of the next row in the shard.
    row: u64,
}

impl Rows<'_> {
    fn next_batch(&mut self) -> Result<Option<Vec<ShardRow>>, ShardError> {
        let Some(batch) = self.reader.next() else {
            return Ok(None);
        };
        let batch = batch
            .map_err(|e| ShardError::new(self.path, format!("damaged at row {}: {e}", self.row)))?;
        let out = decode(&batch, self.row)
            .map_err(|(row, m)| ShardError::new(self.path, format!("damaged row {row}: {m}")))?;
        self.row += batch.num_rows() as u64;
        Ok(Some(out))
    }
}

/// The rows of a batch whose first row is number `first`; an error gives the row.
fn decode(b: &RecordBatch, first: u64) -> Result<Vec<ShardRow>, (u64, String)> {
    let col = |n: &str| b.column_by_name(n).expect("columns checked at open");
    let u64s = |n: &str| col(n).as_primitive::<UInt64Type>().clone();
    let strs = |n: &str| col(n).as_string::<i32>().clone();
    let (record, offset, length, record_bytes) = (
        u64s("record"),
        u64s("offset"),
        u64s("length"),
        u64s("record_bytes"),
    );
    let (kind, url, timestamp, mime, digest, redirect, rt_url, rt_date, media, title, text) = (
        strs("record_type"),
        strs("url"),
        strs("timestamp"),
        strs("mime"),
        strs("payload_digest"),
        strs("redirect"),
        strs("refers_to_url"),
        strs("refers_to_date"),
        strs("media"),
        strs("title"),
        strs("text"),
    );
    let status = col("status").as_primitive::<UInt16Type>().clone();
    let tokens = col("tokens").as_primitive::<UInt32Type>().clone();
    let shingles = col("shingles").as_primitive::<UInt32Type>().clone();
    let payload_length = u64s("payload_length");
    let fingerprint = col("fingerprint").as_fixed_size_binary().clone();
    let sketch = col("sketch").as_binary::<i32>().clone();
    let links = col("links").as_binary::<i32>().clone();
    let truncated = col("truncated").as_boolean().clone();
    let warnings = col("warnings").as_list::<i32>().clone();
    let opt =
        |a: &arrow_array::StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_string());
    let mut out = Vec::with_capacity(b.num_rows());
    for i in 0..b.num_rows() {
        let no = first + i as u64;
        if record.value(i) != no {
            return Err((no, format!("numbered {}", record.value(i))));
        }
        let stored = if sketch.is_valid(i) {
            let s = packed::decode(sketch.value(i)).map_err(|e| (no, e))?;
            if shingles.is_null(i) || s.shingles != shingles.value(i) {
                return Err((no, "its sketch and shingle count disagree".into()));
            }
            // A shard's sketch stands alone: only an index stores one against another doc.
            if s.base.is_some() {
                return Err((no, "its sketch refers to a doc of some index".into()));
            }
            Some(s)
        } else {
            None
        };
        let text_fingerprint = if fingerprint.is_valid(i) {
            let v: [u8; 16] = fingerprint
                .value(i)
                .try_into()
                .map_err(|_| (no, "fingerprint of the wrong size".to_string()))?;
            Some(u128::from_be_bytes(v))
        } else {
            None
        };
        if text_fingerprint.is_some() != stored.is_some() {
            return Err((
                no,
                "a fingerprint without a sketch, or a sketch without one".into(),
            ));
        }
        let ts = opt(&timestamp, i);
        if ts
            .as_ref()
            .is_some_and(|t| t.len() != 14 || !t.bytes().all(|c| c.is_ascii_digit()))
        {
            return Err((
                no,
                format!("timestamp {:?} is not 14 digits", ts.unwrap_or_default()),
            ));
        }
        let record_kind = crate::read::RecordKind::parse(kind.value(i));
        let refers_to = (record_kind == crate::read::RecordKind::Revisit)
            .then(|| (opt(&rt_url, i), opt(&rt_date, i)));
        let row_warnings: Vec<String> = {
            let l = warnings.value(i);
            let l = l.as_string::<i32>();
            (0..l.len()).map(|j| l.value(j).to_string()).collect()
        };
        let capture = Capture {
            kind: record_kind.clone(),
            url: opt(&url, i),
            timestamp: ts,
            status: status.is_valid(i).then(|| status.value(i)),
            mime: opt(&mime, i),
            redirect: opt(&redirect, i),
            payload_digest: opt(&digest, i),
            refers_to,
            media: match media.value(i) {
                "html" => MediaKind::Html,
                "text" => MediaKind::Text,
                _ => MediaKind::Other,
            },
            tokens: tokens.value(i),
            text_fingerprint,
            sketch: None,
            links: match links.is_valid(i) {
                true => {
                    let bytes = links.value(i);
                    crate::index::columns::links::with_page_links(bytes, |_| ())
                        .map_err(|e| (no, format!("its links: {e}")))?;
                    bytes.to_vec()
                }
                false => Vec::new(),
            },
            title: opt(&title, i),
            payload_len: payload_length.value(i),
            truncated: truncated.value(i),
            warnings: row_warnings,
            links_kept_in: None,
            payload_doc: None,
        };
        // A `metadata` record was a capture when it was analyzed (it has a media type,
        // never `application/warc-fields` nor `text/anvl`): its type says so again.
        let fields = match (&record_kind, &capture.mime) {
            (RecordKind::Metadata, Some(m)) => {
                vec![("Content-Type".to_string(), m.clone().into_bytes())]
            }
            _ => Vec::new(),
        };
        let record = Record {
            offset: offset.value(i),
            length: length.value(i),
            stream_offset: 0,
            version: String::new(),
            kind: record_kind,
            fields,
            declared_length: record_bytes.value(i),
            block: Vec::new(),
            over_cap: false,
            short: false,
            warnings: Vec::new(),
            // The shard holds the capture's date as the worker found it.
            file_date: None,
        };
        out.push(ShardRow {
            record,
            capture,
            stored,
            text: opt(&text, i),
        });
    }
    Ok(out)
}
