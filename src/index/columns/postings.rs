//! `postings`: a sampled sketch value's posting key ([`crate::sketch::posting_key`]: 48
//! bits BE, the value's top 43 bits and its trailing zeros) → its posting list, the docs whose
//! posting sample holds the value, in doc order: entries of [`ENTRY`] bytes (doc id in
//! 40 bits BE, the doc's posting level u8, its number of posting values u8, at most
//! 255: a larger count only makes the prefilter read more), at most cap + 1 of them (a longer list is boilerplate: only its head is used). One more key,
//! [`MARK_KEY`] (nine 0xff bytes, after every value key), holds the mark: the first doc
//! id whose postings are not stored yet (u64 BE).
//!
//! Written only by ingest's spills ([`crate::index::postings::Fresh::spill`]): whole lists
//! in a sorted file that RocksDB ingests atomically with the new mark. A list whose
//! stored part the writer did not read (rebuilt after a kill) is written as a merge
//! operand, which [`merge`] appends. Read by the candidate search
//! ([`crate::index::postings::lookup`]) for ingest, `similar` and the report.

use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use super::{corrupt, Column, Tuning};
use crate::index::Result;
use crate::sketch::{posting_key_bytes, posting_key_of_bytes, POSTING_KEY_BYTES};

/// Marker of the `postings` column family.
pub struct Postings;

/// Bytes of one posting entry (11 in schema 4: doc u64, count u16).
pub const ENTRY: usize = 7;

/// Doc ids postings can name: 2⁴⁰ (a trillion).
pub const MAX_DOCS: u64 = 1 << 40;

/// Key of the mark.
pub const MARK_KEY: [u8; 9] = [0xff; 9];

/// A key of `postings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostingKey {
    /// The list of a posting key.
    Value(u64),
    /// The mark.
    Mark,
}

impl Column for Postings {
    const NAME: &'static str = "postings";
    type Key = PostingKey;
    /// Raw: a list of entries (checked by [`entries`]) or, at the mark, a doc id.
    type Value = Vec<u8>;

    fn key(k: &PostingKey) -> Vec<u8> {
        match k {
            PostingKey::Value(v) => posting_key_bytes(*v).to_vec(),
            PostingKey::Mark => MARK_KEY.to_vec(),
        }
    }

    fn decode_key(b: &[u8]) -> std::result::Result<PostingKey, String> {
        if b == MARK_KEY {
            return Ok(PostingKey::Mark);
        }
        match <[u8; POSTING_KEY_BYTES]>::try_from(b) {
            Ok(k) => Ok(PostingKey::Value(posting_key_of_bytes(k))),
            Err(_) => Err(format!(
                "{} bytes where a {POSTING_KEY_BYTES}-byte posting key was expected",
                b.len()
            )),
        }
    }

    fn value(v: &Vec<u8>) -> Vec<u8> {
        v.clone()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<u8>, String> {
        Ok(b.to_vec())
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, cx: &Tuning) {
        super::point_lookups(o, t);
        // 16 KiB data blocks, not 4: zstd finds more to share in a larger block and the
        // index holds a quarter of the entries (rd100k × 3: postings 836 → 786 bytes per
        // doc; rd20k × 3: 1,265 → 1,184), at no ingest time measurable on 2 cores (two
        // alternating rounds each, noise ±8%). Dropping the blocks' hash index and a
        // ribbon filter instead of the bloom filter saved 60 bytes per doc more but cost
        // the first sweep ~2 s.
        t.set_block_size(16 << 10);
        let cap = cx.cap;
        o.set_merge_operator_associative("tidemark-postings-v1", move |_k, existing, ops| {
            Some(merge(existing, &mut ops.iter(), cap))
        });
        // Written only by ingesting sorted files, never through the memtable.
        o.set_write_buffer_size(4 << 20);
        // Keys are random 64-bit values, so under levelled compaction every level-0 file
        // overlaps the whole last level and each compaction rewrote all postings (13.6 s
        // of CPU in the fourth 100k-page sweep). Size-tiered ("universal") compaction
        // merges runs of similar size instead: each entry is rewritten O(log n) times.
        // Lists only grow, so there is no space amplification to chase.
        o.set_compaction_style(rocksdb::DBCompactionStyle::Universal);
        let mut u = rocksdb::UniversalCompactOptions::default();
        u.set_max_size_amplification_percent(1000);
        o.set_universal_compaction_options(&u);
        // zstd on every run, spilled (the writer's SST files take the bottommost type)
        // or compacted: universal compaction compares run sizes, which only means
        // something when both are measured alike. Most lists hold one 7-byte entry under
        // a 16-byte internal key whose sequence number is zero: 24 bytes an entry
        // uncompressed, 14 with zstd (rd20k × 3: 2,462 → 1,443 bytes per doc; llvm-docs
        // 1,017 → 558). It cost an eighth of compaction CPU when compactions rewrote
        // every list; tiered, they rewrite each O(log n) times.
        o.set_compression_type(DBCompressionType::Zstd);
        o.set_bottommost_compression_type(DBCompressionType::Zstd);
    }
}

/// One posting entry: doc (under [`MAX_DOCS`]), its posting level, its number of
/// posting values (kept up to 255). The prefilter reads a larger count as 255: it then
/// takes the doc's sample for smaller than it is, which only lets more candidates through.
pub fn entry(doc: u64, level: u8, count: u16) -> [u8; ENTRY] {
    debug_assert!(doc < MAX_DOCS);
    let mut e = [0u8; ENTRY];
    e[..5].copy_from_slice(&doc.to_be_bytes()[3..]);
    e[5] = level;
    e[6] = count.min(255) as u8;
    e
}

/// The fields of one entry (exactly [`ENTRY`] bytes, as [`entries`] yields them).
pub fn entry_fields(e: &[u8]) -> (u64, u8, u16) {
    let mut doc = [0u8; 8];
    doc[3..].copy_from_slice(&e[..5]);
    (u64::from_be_bytes(doc), e[5], e[6] as u16)
}

/// The doc of one entry.
pub fn entry_doc(e: &[u8]) -> u64 {
    entry_fields(e).0
}

/// A stored list checked for shape: whole entries only.
pub fn entries(value: u64, list: &[u8]) -> Result<&[u8]> {
    if !list.len().is_multiple_of(ENTRY) {
        return Err(corrupt::<Postings>(
            &posting_key_bytes(value),
            format!(
                "a list of {} bytes, not whole {ENTRY}-byte entries",
                list.len()
            ),
        ));
    }
    Ok(list)
}

/// The mark's value.
pub fn mark(v: &[u8]) -> Result<u64> {
    super::be_u64(v).map_err(|e| corrupt::<Postings>(&MARK_KEY, e))
}

/// Bytes a stored list keeps at most: cap + 1 entries.
pub fn list_limit(cap: usize) -> usize {
    (cap + 1) * ENTRY
}

/// The merge: operands are appended in write order (doc ids increase, so the list stays
/// sorted); a list keeps at most `cap + 1` entries, enough to know it is over the cap.
pub fn merge(
    existing: Option<&[u8]>,
    operands: &mut dyn Iterator<Item = &[u8]>,
    cap: usize,
) -> Vec<u8> {
    let limit = list_limit(cap);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_stop_growing_past_the_cap() {
        let ops: Vec<Vec<u8>> = (0..10u64).map(|d| entry(d, 0, 5).to_vec()).collect();
        let merged = merge(None, &mut ops.iter().map(|v| v.as_slice()), 3);
        assert_eq!(merged.len(), 4 * ENTRY);
        assert_eq!(entry_doc(&merged[ENTRY..2 * ENTRY]), 1);
    }

    #[test]
    fn entries_keep_doc_level_and_count() {
        for (doc, level, count) in [(0, 0, 0), (1, 3, 127), (MAX_DOCS - 1, 31, 255)] {
            assert_eq!(entry_fields(&entry(doc, level, count)), (doc, level, count));
        }
        // A count past 255 is read as 255 (the prefilter then lets more through).
        assert_eq!(entry_fields(&entry(9, 2, 4000)), (9, 2, 255));
    }
}
