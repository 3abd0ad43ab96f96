//! Stored canonical texts (`index.store_texts`), for word-level diffs between versions.
//!
//! Each new doc's canonical text is compressed on the scan workers with zstd. Pages of one
//! site share their chrome and near-duplicates share most of their words, so a
//! dictionary trained on the index's own pages pays off: the first ingest that leaves
//! enough texts trains one (stored in `meta`), recompresses what was stored before, and
//! every later text is compressed with it.
//!
//! Value: `[format u8][text length u32 BE][zstd frame]`, format 1 = no dictionary,
//! 2 = the index's dictionary.

use rocksdb::WriteBatch;

use super::codec::{read_u64, u64_key};
use super::{cf, Index, IndexError, Result};

/// Key of the dictionary in `meta`.
pub const DICT_KEY: &[u8] = b"text_dict";

/// Texts stored before a dictionary is trained.
const TRAIN_MIN_TEXTS: usize = 100;
/// Texts sampled for training.
const TRAIN_SAMPLES: usize = 4000;
/// Dictionary size.
const DICT_BYTES: usize = 112 * 1024;
/// Compression level (zstd's default; texts are written once and read rarely).
const LEVEL: i32 = 3;

/// Compresses texts the way the index stores them.
pub struct TextEncoder {
    dict: Option<zstd::dict::EncoderDictionary<'static>>,
}

impl TextEncoder {
    /// The encoder for `index` (with its dictionary, when it has one).
    pub fn new(index: &Index) -> Result<TextEncoder> {
        let dict = index
            .db()
            .get_cf(index.cf(cf::META), DICT_KEY)?
            .map(|d| zstd::dict::EncoderDictionary::copy(&d, LEVEL));
        Ok(TextEncoder { dict })
    }

    /// The stored form of `text`.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let frame = match &self.dict {
            Some(d) => zstd::bulk::Compressor::with_prepared_dictionary(d)
                .and_then(|mut c| c.compress(text.as_bytes())),
            None => zstd::bulk::compress(text.as_bytes(), LEVEL),
        }
        .expect("in-memory compression");
        let mut out = Vec::with_capacity(5 + frame.len());
        out.push(if self.dict.is_some() { 2 } else { 1 });
        out.extend_from_slice(&(text.len() as u32).to_be_bytes());
        out.extend_from_slice(&frame);
        out
    }
}

fn decode(v: &[u8], dict: Option<&[u8]>) -> std::result::Result<String, String> {
    if v.len() < 5 {
        return Err("short text value".into());
    }
    let len = u32::from_be_bytes(v[1..5].try_into().expect("4 bytes")) as usize;
    let bytes = match (v[0], dict) {
        (1, _) => zstd::bulk::decompress(&v[5..], len).map_err(|e| e.to_string())?,
        (2, Some(d)) => zstd::bulk::Decompressor::with_dictionary(d)
            .and_then(|mut z| z.decompress(&v[5..], len))
            .map_err(|e| e.to_string())?,
        (2, None) => return Err("text needs the dictionary, which is missing".into()),
        (f, _) => return Err(format!("text format {f}, this build reads 1 and 2")),
    };
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// Reads stored texts.
pub struct TextReader {
    dict: Option<Vec<u8>>,
}

impl TextReader {
    /// A reader for `index`.
    pub fn new(index: &Index) -> Result<TextReader> {
        Ok(TextReader {
            dict: index.db().get_cf(index.cf(cf::META), DICT_KEY)?,
        })
    }

    /// The canonical text of `doc`, if it was stored.
    pub fn text(&self, index: &Index, doc: u64) -> Result<Option<String>> {
        let Some(v) = index.db().get_cf(index.cf(cf::TEXTS), u64_key(doc))? else {
            return Ok(None);
        };
        decode(&v, self.dict.as_deref())
            .map(Some)
            .map_err(|comment| IndexError::Corruption {
                cf: cf::TEXTS,
                comment: format!("doc {doc}: {comment}"),
            })
    }
}

/// Trains the dictionary once enough texts are stored, and recompresses the texts stored
/// without one. Returns the number of texts recompressed (0: nothing to do yet).
pub fn train_if_ready(index: &Index) -> Result<usize> {
    let db = index.db();
    if db.get_cf(index.cf(cf::META), DICT_KEY)?.is_some() {
        return Ok(0);
    }
    let tcf = index.cf(cf::TEXTS);
    let reader = TextReader { dict: None };
    let mut samples: Vec<String> = Vec::new();
    for item in db.iterator_cf(tcf, rocksdb::IteratorMode::Start) {
        let (k, _) = item?;
        if let Some(t) = reader.text(index, read_u64(&k))? {
            samples.push(t);
        }
        if samples.len() >= TRAIN_SAMPLES {
            break;
        }
    }
    if samples.len() < TRAIN_MIN_TEXTS {
        return Ok(0);
    }
    // Too few or too uniform samples make training fail: texts then stay without a
    // dictionary until a later ingest tries again with more.
    let Ok(dict) = zstd::dict::from_samples(&samples, DICT_BYTES) else {
        return Ok(0);
    };
    drop(samples);
    let enc = TextEncoder {
        dict: Some(zstd::dict::EncoderDictionary::copy(&dict, LEVEL)),
    };
    // The dictionary and the recompressed texts in batches; a text is readable at every
    // moment (its format byte says whether it needs the dictionary, which is written
    // first).
    db.put_cf(index.cf(cf::META), DICT_KEY, &dict)?;
    let mut n = 0usize;
    let mut batch = WriteBatch::default();
    for item in db.iterator_cf(tcf, rocksdb::IteratorMode::Start) {
        let (k, v) = item?;
        if v.first() != Some(&1) {
            continue;
        }
        let text = decode(&v, None).map_err(|comment| IndexError::Corruption {
            cf: cf::TEXTS,
            comment,
        })?;
        batch.put_cf(tcf, &k, enc.encode(&text));
        n += 1;
        if batch.len() >= 1024 {
            db.write(std::mem::take(&mut batch))?;
        }
    }
    db.write(batch)?;
    Ok(n)
}
