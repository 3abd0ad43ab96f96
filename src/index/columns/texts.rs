//! `texts` (with `index.store_texts`): doc id u64 BE → the doc's canonical text,
//! compressed: `[format u8][text length u32 BE][zstd frame]`; format 1 = no dictionary,
//! 2 = the index's dictionary (in `meta`). The codec and the dictionary's training are
//! in [`crate::index::texts`].
//!
//! Written by ingest (a new doc; compressed on the workers) and the dictionary's training
//! (recompresses what was stored before it). Read by `history --diff`. The values are
//! zstd frames already: RocksDB's zstd would only recompress them.

use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use super::{Column, Tuning};

/// Marker of the `texts` column family.
pub struct Texts;

/// Longest text a value may declare (a damaged length must not allocate gigabytes).
pub const MAX_TEXT: usize = 256 << 20;

/// A stored text, still compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// 1 = no dictionary, 2 = the index's dictionary.
    pub format: u8,
    /// Length of the text, in bytes.
    pub len: usize,
    /// The zstd frame.
    pub frame: Vec<u8>,
}

impl Column for Texts {
    const NAME: &'static str = "texts";
    type Key = u64;
    type Value = Stored;

    fn key(k: &u64) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(v: &Stored) -> Vec<u8> {
        let mut out = Vec::with_capacity(5 + v.frame.len());
        out.push(v.format);
        out.extend_from_slice(&(v.len as u32).to_be_bytes());
        out.extend_from_slice(&v.frame);
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Stored, String> {
        if b.len() < 5 {
            return Err(format!("a text value of {} bytes", b.len()));
        }
        let format = b[0];
        if format != 1 && format != 2 {
            return Err(format!("text format {format}, this build reads 1 and 2"));
        }
        let len = super::be_u32(&b[1..5])? as usize;
        if len > MAX_TEXT {
            return Err(format!("a text of {len} bytes declared"));
        }
        Ok(Stored {
            format,
            len,
            frame: b[5..].to_vec(),
        })
    }

    fn tune(o: &mut Options, _t: &mut BlockBasedOptions, _cx: &Tuning) {
        // Each value is a zstd frame already.
        o.set_compression_type(DBCompressionType::None);
        o.set_bottommost_compression_type(DBCompressionType::None);
    }
}
