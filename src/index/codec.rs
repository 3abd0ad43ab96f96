//! Values of the index. Structured values go through bincode (2.0.1, pinned) behind a
//! leading format-version byte; hot data (keys, sketches, postings, doc ids) is
//! fixed-width big-endian bytes and never goes through a serializer.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::sketch::Sketch;

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

/// Decodes a structured value; a wrong version byte or bad bytes are corruption.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    match bytes.first() {
        Some(&VALUE_FORMAT) => {
            bincode::serde::decode_from_slice(&bytes[1..], bincode::config::standard())
                .map(|(v, _)| v)
                .map_err(|e| format!("undecodable value: {e}"))
        }
        Some(v) => Err(format!("value format {v}, this build reads {VALUE_FORMAT}")),
        None => Err("empty value".into()),
    }
}

/// A u64 as 8 big-endian bytes.
pub fn u64_key(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// Reads 8 big-endian bytes.
pub fn read_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Packs a sketch: [format 1][level u8][shingles u32 BE][values u64 BE…].
pub fn pack_sketch(s: &Sketch) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + 8 * s.values.len());
    out.push(1);
    out.push(s.level);
    out.extend_from_slice(&s.shingles.to_be_bytes());
    for v in &s.values {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

/// A packed sketch's level, and its values at `level` (≥ its own), without unpacking.
pub fn packed_values_at(b: &[u8], level: u8) -> impl Iterator<Item = u64> + '_ {
    let mask = if level >= 64 {
        u64::MAX
    } else {
        (1u64 << level) - 1
    };
    b.get(6..)
        .unwrap_or_default()
        .chunks_exact(8)
        .map(read_u64)
        .filter(move |v| v & mask == 0)
}

/// The level stored in a packed sketch.
pub fn packed_level(b: &[u8]) -> Option<u8> {
    (b.len() >= 6 && b[0] == 1).then(|| b[1])
}

/// Unpacks a sketch.
pub fn unpack_sketch(b: &[u8]) -> Result<Sketch, String> {
    if b.len() < 6 || b[0] != 1 || (b.len() - 6) % 8 != 0 {
        return Err(format!("bad sketch value ({} bytes)", b.len()));
    }
    let level = b[1];
    let shingles = u32::from_be_bytes([b[2], b[3], b[4], b[5]]);
    let values = b[6..].chunks_exact(8).map(read_u64).collect();
    Ok(Sketch {
        shingles,
        level,
        values,
    })
}

/// One entry of a posting list: doc id u64, the doc's posting level u8 and its number
/// of posting values u16 (so a candidate's expected overlap is known without reading it).
pub const POSTING_ENTRY: usize = 11;

/// Bytes a stored posting list keeps at most: cap + 1 entries.
pub fn posting_list_limit(cap: usize) -> usize {
    (cap + 1) * POSTING_ENTRY
}

/// Posting-list merge: operands are appended in write order (doc ids increase, so the
/// list stays sorted); a list keeps at most `cap + 1` entries, enough to know it is
/// over the cap (a boilerplate value, not expanded into candidates).
pub fn merge_postings(
    existing: Option<&[u8]>,
    operands: &mut dyn Iterator<Item = &[u8]>,
    cap: usize,
) -> Vec<u8> {
    let limit = posting_list_limit(cap);
    let mut out = existing.map(|e| e.to_vec()).unwrap_or_default();
    for op in operands {
        if out.len() >= limit {
            break;
        }
        let room = limit - out.len();
        out.extend_from_slice(&op[..op.len().min(room)]);
    }
    out
}

/// Per-sweep record in the `sweeps` column family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SweepInfo {
    /// Label given at ingest.
    pub label: String,
    /// 14-digit date.
    pub date: String,
    /// File names in ingest order.
    pub files: Vec<String>,
    /// Captures stored.
    pub captures: u64,
    /// Docs first seen in this sweep.
    pub new_docs: u64,
    /// Captures whose content was already known.
    pub known_docs: u64,
    /// Edges stored.
    pub edges: u64,
    /// Unions that merged two clusters.
    pub unions: u64,
    /// Records read.
    pub records: u64,
    /// Records not stored as captures, by reason.
    pub skipped: std::collections::BTreeMap<String, u64>,
}

/// Per-file progress in the `files` column family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FileState {
    /// Sweep id.
    pub sweep: u32,
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
    /// Record type (`response`, `revisit`, `resource`…).
    pub kind: String,
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
        let s = Sketch {
            shingles: 7,
            level: 2,
            values: vec![4, 8, 1 << 40],
        };
        assert_eq!(unpack_sketch(&pack_sketch(&s)).unwrap(), s);
    }

    #[test]
    fn posting_lists_stop_growing_past_the_cap() {
        let ops: Vec<Vec<u8>> = (0..10u64)
            .map(|d| [&d.to_be_bytes()[..], &[0, 0, 5]].concat())
            .collect();
        let merged = merge_postings(None, &mut ops.iter().map(|v| v.as_slice()), 3);
        assert_eq!(merged.len(), 4 * POSTING_ENTRY);
        assert_eq!(read_u64(&merged[POSTING_ENTRY..]), 1);
    }
}
