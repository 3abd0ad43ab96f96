//! Structured values of the index: bincode (2.0.1, pinned) behind a leading
//! format-version byte. Hot data (keys, sketches, postings, doc ids) is fixed-width
//! big-endian bytes and never goes through a serializer: its layouts are in
//! [`super::columns`], one file per column family.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::read::RecordKind;

/// Version byte in front of every bincode value.
pub const VALUE_FORMAT: u8 = 1;

/// Encodes a structured value.
pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = vec![VALUE_FORMAT];
    let body = bincode::serde::encode_to_vec(v, bincode::config::standard())
        .expect("in-memory encoding cannot fail");
    out.extend_from_slice(&body);
    out
}

/// Encodes a value whose family reads two layouts behind its own format byte `format`
/// (not [`VALUE_FORMAT`]).
pub fn encode_as<T: Serialize>(format: u8, v: &T) -> Vec<u8> {
    let mut out = encode(v);
    out[0] = format;
    out
}

/// [`decode_borrowed`] of a value written by [`encode_as`] with `format`.
pub fn decode_borrowed_as<'a, T: Deserialize<'a>>(
    format: u8,
    bytes: &'a [u8],
) -> Result<T, String> {
    match bytes.first() {
        Some(v) if *v == format => bincode::serde::borrow_decode_from_slice(&bytes[1..], config())
            .map(|(v, _)| v)
            .map_err(|e| format!("undecodable value: {e}")),
        Some(v) => Err(format!("value format {v}, expected {format}")),
        None => Err("empty value".into()),
    }
}

/// [`decode_borrowed_as`], refusing bytes left over after the value (a value that grew
/// is damaged, not read as its first part).
pub fn decode_borrowed_whole_as<'a, T: Deserialize<'a>>(
    format: u8,
    bytes: &'a [u8],
) -> Result<T, String> {
    match bytes.first() {
        Some(v) if *v == format => {
            let (v, n) = bincode::serde::borrow_decode_from_slice(&bytes[1..], config())
                .map_err(|e| format!("undecodable value: {e}"))?;
            match bytes.len() - 1 - n {
                0 => Ok(v),
                left => Err(format!("{left} bytes after the value")),
            }
        }
        Some(v) => Err(format!("value format {v}, expected {format}")),
        None => Err("empty value".into()),
    }
}

/// Most bytes a decoded value may claim. bincode believes the lengths it reads and
/// allocates them before reading: a damaged length of 4 GB was a 4 GB allocation
/// (found by fuzzing). No value of the index comes near this.
const DECODE_LIMIT: usize = 16 << 20;

/// Decodes a structured value; a wrong version byte or bad bytes are corruption.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    bincode::serde::decode_from_slice(body(bytes)?, config())
        .map(|(v, _)| v)
        .map_err(|e| format!("undecodable value: {e}"))
}

/// The bincode bytes behind the version byte.
fn body(bytes: &[u8]) -> Result<&[u8], String> {
    match bytes.first() {
        Some(&VALUE_FORMAT) => Ok(&bytes[1..]),
        Some(v) => Err(format!("value format {v}, this build reads {VALUE_FORMAT}")),
        None => Err("empty value".into()),
    }
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<DECODE_LIMIT>()
}

/// [`decode`] into a value that borrows its strings from `bytes` (a scan that reads
/// every value once allocates none).
pub fn decode_borrowed<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, String> {
    bincode::serde::borrow_decode_from_slice(body(bytes)?, config())
        .map(|(v, _)| v)
        .map_err(|e| format!("undecodable value: {e}"))
}

/// What an ingest counts: kept per sweep in `sweeps`, and reported per run (the
/// difference over the run, [`Counts::since`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    /// Records read.
    pub records: u64,
    /// Captures stored.
    pub captures: u64,
    /// Docs first seen.
    pub new_docs: u64,
    /// Captures whose content was already known.
    pub known_docs: u64,
    /// Pairs found at or above the edge floor (in resemblance or containment); the index
    /// stores those a spanning forest needs (`ingest::forest`).
    pub edges: u64,
    /// Unions that merged two clusters.
    pub unions: u64,
    /// Records not stored as captures, by reason.
    pub skipped: std::collections::BTreeMap<String, u64>,
}

impl Counts {
    /// What was counted after `before` (an earlier state of the same counts).
    pub fn since(&self, before: &Counts) -> Counts {
        let mut skipped = self.skipped.clone();
        for (reason, n) in &before.skipped {
            if let Some(m) = skipped.get_mut(reason) {
                *m = m.saturating_sub(*n);
            }
        }
        skipped.retain(|_, n| *n > 0);
        Counts {
            records: self.records - before.records,
            captures: self.captures - before.captures,
            new_docs: self.new_docs - before.new_docs,
            known_docs: self.known_docs - before.known_docs,
            edges: self.edges - before.edges,
            unions: self.unions - before.unions,
            skipped,
        }
    }
}

/// Per-sweep record in the `sweeps` column family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SweepInfo {
    /// Label given at ingest.
    pub label: String,
    /// 14-digit date.
    pub date: String,
    /// Files of the sweep so far (the next file gets this number); their names are in
    /// `files`.
    pub files: u64,
    /// What its ingests counted.
    pub counts: Counts,
}

/// Per-file progress in the `files` column family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileState {
    /// Sweep id.
    pub sweep: u32,
    /// Its number in the sweep (part of capture keys).
    pub file_no: u32,
    /// Name as given.
    pub name: String,
    /// Records committed (resume point).
    pub records: u64,
    /// Read to its end (or to its damage).
    pub complete: bool,
    /// Damage: (offset, message).
    pub error: Option<(u64, String)>,
}

/// Per-doc facts in the `docs` column family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DocInfo {
    /// Distinct shingles.
    pub shingles: u32,
    /// Canonical tokens.
    pub tokens: u32,
    /// Decoded payload bytes.
    pub bytes: u64,
    /// Date of the capture that created the doc (14 digits). When and how often the
    /// content was captured later is in `doc_captures` (a prefix scan), not here: a
    /// known capture writes nothing to `docs`.
    pub created: String,
    /// `<title>`.
    pub title: Option<String>,
}

/// One capture in the `captures` column family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CaptureInfo {
    /// Original URL.
    pub url: String,
    /// Sweep id.
    pub sweep: u32,
    /// Record type (stored as its text).
    pub kind: RecordKind,
    /// Doc id of the content (2xx captures of text content).
    pub doc: Option<u64>,
    /// HTTP status.
    pub status: Option<u16>,
    /// Media type.
    pub mime: Option<String>,
    /// `sha1:BASE32` payload digest.
    pub digest: Option<String>,
    /// Absolute redirect target of a 3xx.
    pub redirect: Option<String>,
    /// WARC file name.
    pub file: String,
    /// Record offset in the file.
    pub offset: u64,
    /// Record length in the file.
    pub length: u64,
    /// Estimated resemblance to the previous capture of the same URL that had content.
    pub r_prev: Option<f32>,
    /// The record was cut at the cap.
    pub truncated: bool,
    /// Estimated content resemblance to that capture: with the templates of the host in
    /// both sweeps left out ([`crate::template`]); written at the end of the ingest of
    /// the sweep, when its templates are known. `None` as `r_prev` is, and where neither
    /// page holds anything but template.
    pub cr_prev: Option<f32>,
}

/// An edge in the `edges` column family.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct EdgeInfo {
    /// Estimated resemblance.
    pub resemblance: f32,
    /// Containment of the lower doc id in the higher.
    pub contain_lo_in_hi: f32,
    /// Containment of the higher doc id in the lower.
    pub contain_hi_in_lo: f32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_versions_are_checked() {
        let d = DocInfo {
            shingles: 3,
            title: Some("t".into()),
            ..Default::default()
        };
        let b = encode(&d);
        assert_eq!(b[0], VALUE_FORMAT);
        assert_eq!(decode::<DocInfo>(&b).unwrap(), d);
        let mut bad = b.clone();
        bad[0] = 9;
        assert!(decode::<DocInfo>(&bad).unwrap_err().contains("format 9"));
    }

    #[test]
    fn a_record_kind_is_stored_as_its_text_was() {
        // Captures written when the kind was a String read back, and are written the same.
        for s in ["revisit", "response", "x-custom", ""] {
            let old = encode(&s.to_string());
            let kind = if s.is_empty() {
                RecordKind::default()
            } else {
                RecordKind::parse(s)
            };
            assert_eq!(encode(&kind), old);
            assert_eq!(decode::<RecordKind>(&old).unwrap(), kind);
        }
    }
}
