//! Stored canonical texts (`index.store_texts`), for word-level diffs between versions.
//!
//! Each new doc's canonical text is compressed on the scan workers with zstd. Pages of one
//! site share their chrome and near-duplicates share most of their words, so a
//! dictionary trained on the index's own pages pays off: the first ingest that leaves
//! enough texts trains one (stored in `meta`), recompresses what was stored before, and
//! every later text is compressed with it.
//!
//! The stored form is in [`super::columns::texts`].

use super::columns::meta::MetaKey;
use super::columns::texts::{Stored, Texts};
use super::columns::{corrupt, Batch};
use super::{Index, Result};

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
            .meta()
            .text_dict()?
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
        <Texts as super::columns::Column>::value(&Stored {
            format: if self.dict.is_some() { 2 } else { 1 },
            len: text.len(),
            frame,
        })
    }
}

/// A stored text, decompressed (`dict`: the index's dictionary, when it has one).
pub fn decode(v: &Stored, dict: Option<&[u8]>) -> std::result::Result<String, String> {
    let bytes = match (v.format, dict) {
        (1, _) => zstd::bulk::decompress(&v.frame, v.len).map_err(|e| e.to_string())?,
        (2, Some(d)) => zstd::bulk::Decompressor::with_dictionary(d)
            .and_then(|mut z| z.decompress(&v.frame, v.len))
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
            dict: index.meta().text_dict()?,
        })
    }

    /// The canonical text of `doc`, if it was stored.
    pub fn text(&self, index: &Index, doc: u64) -> Result<Option<String>> {
        let Some(v) = index.texts().get(&doc)? else {
            return Ok(None);
        };
        decode(&v, self.dict.as_deref())
            .map(Some)
            .map_err(|e| corrupt::<Texts>(&doc.to_be_bytes(), e))
    }
}

/// Trains the dictionary once enough texts are stored, and recompresses the texts stored
/// without one. Returns the number of texts recompressed (0: nothing to do yet).
pub fn train_if_ready(index: &Index) -> Result<usize> {
    if index.meta().text_dict()?.is_some() {
        return Ok(0);
    }
    let mut samples: Vec<String> = Vec::new();
    index.texts().for_each(|doc, v| {
        samples.push(decode(&v, None).map_err(|e| corrupt::<Texts>(&doc.to_be_bytes(), e))?);
        Ok(samples.len() < TRAIN_SAMPLES)
    })?;
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
    index.meta().put_now(&MetaKey::TextDict, &dict)?;
    let mut n = 0usize;
    let mut batch = Batch::default();
    index.texts().for_each(|doc, v| {
        if v.format != 1 {
            return Ok(true);
        }
        let text = decode(&v, None).map_err(|e| corrupt::<Texts>(&doc.to_be_bytes(), e))?;
        batch.put_raw::<Texts>(index, &doc.to_be_bytes(), &enc.encode(&text));
        n += 1;
        if batch.len() >= 1024 {
            index.write(std::mem::take(&mut batch))?;
        }
        Ok(true)
    })?;
    index.write(batch)?;
    Ok(n)
}
