//! `url_last`: SURT → the timestamp (14 ASCII digits), doc id (u64 BE) and sweep id (u32
//! BE) of the URL's latest capture with content (26 bytes). The previous capture of a URL is then one
//! point lookup when captures arrive in time order (a reverse scan of `captures` when
//! they do not).
//!
//! Written and read by ingest only (the resemblance to the previous capture).

use rocksdb::{BlockBasedOptions, Options};

use super::{Column, Tuning};

/// Marker of the `url_last` column family.
pub struct UrlLast;

/// The latest capture with content of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Last {
    /// 14-digit timestamp.
    pub timestamp: String,
    /// Its doc.
    pub doc: u64,
    /// Its sweep.
    pub sweep: u32,
}

/// Bytes of a value.
pub const LEN: usize = 26;

impl Column for UrlLast {
    const NAME: &'static str = "url_last";
    type Key = String;
    type Value = Last;

    fn key(k: &String) -> Vec<u8> {
        k.as_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<String, String> {
        String::from_utf8(b.to_vec()).map_err(|_| "a SURT that is not UTF-8".into())
    }

    fn value(v: &Last) -> Vec<u8> {
        let mut out = Vec::with_capacity(LEN);
        out.extend_from_slice(v.timestamp.as_bytes());
        out.extend_from_slice(&v.doc.to_be_bytes());
        out.extend_from_slice(&v.sweep.to_be_bytes());
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Last, String> {
        if b.len() != LEN || !b[..14].iter().all(|c| c.is_ascii_digit()) {
            return Err(format!(
                "not a timestamp, doc id and sweep id ({} bytes)",
                b.len()
            ));
        }
        Ok(Last {
            timestamp: String::from_utf8(b[..14].to_vec()).expect("digits"),
            doc: super::be_u64(&b[14..22])?,
            sweep: super::be_u32(&b[22..])?,
        })
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
    }
}
