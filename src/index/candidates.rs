//! The one-doc candidate search of `similar` and the report: the docs that share posting
//! values with a sketch, counted, from the stored lists (read under one snapshot, see
//! [`super::postings::lookup`]) completed with the in-memory fresh lists; a value whose
//! list is over the common-shingle cap (boilerplate) adds no candidates, but the heads
//! of such lists do when most of the sketch is boilerplate, so a family larger than the
//! cap still finds its first members. Ingest finds the same candidates for a batch of
//! new docs at once, as a join ([`crate::ingest::pairs`]), by the same rules.

use super::postings::{self, Fresh, OverCap, Stored, U64Map, COMMON_HEAD};
use super::postings::{entry_fields, ENTRY};
use super::{Index, Result};

/// A doc sharing posting values with the sketch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shared {
    /// The doc.
    pub doc: u64,
    /// Posting values in common.
    pub count: u32,
    /// The doc's posting level.
    pub level: u8,
    /// The doc's number of posting values.
    pub values: u16,
}

/// What the search found for one sketch.
pub struct Candidates {
    /// The sketch's posting level.
    pub level: u8,
    /// The sketch's posting values (ascending).
    pub values: Vec<u64>,
    /// Docs sharing values, by doc id.
    pub shared: Vec<Shared>,
    /// First docs of the over-cap lists among the values (duplicates possible).
    pub heads: Vec<u64>,
    /// Which values have over-cap lists (in the order of `values`).
    pub over: Vec<bool>,
}

impl Candidates {
    /// Whether most of the sketch's values are boilerplate: then the heads of their
    /// lists are compared too.
    pub fn mostly_common(&self) -> bool {
        mostly_common(&self.over, &self.heads)
    }

    /// The docs to compare: the shared docs that `keep` accepts, and the heads when the
    /// sketch is mostly boilerplate; ascending, each once.
    pub fn to_compare(&self, keep: impl Fn(&Shared) -> bool) -> Vec<u64> {
        let kept = self
            .shared
            .iter()
            .filter(|s| keep(s))
            .map(|s| s.doc)
            .collect();
        with_heads(kept, &self.over, &self.heads)
    }
}

/// Whether most of a sketch's posting values (`over`: which have over-cap lists) are
/// boilerplate: then the heads of their lists are compared too.
pub fn mostly_common(over: &[bool], heads: &[u64]) -> bool {
    let n = over.iter().filter(|o| **o).count();
    2 * n >= over.len() && !heads.is_empty()
}

/// The docs to compare: `kept` (ascending), and the `heads` of over-cap lists when the
/// sketch is mostly boilerplate ([`mostly_common`]); ascending, each once.
pub fn with_heads(mut kept: Vec<u64>, over: &[bool], heads: &[u64]) -> Vec<u64> {
    if mostly_common(over, heads) {
        kept.extend_from_slice(heads);
        kept.sort_unstable();
        kept.dedup();
    }
    kept
}

/// Searches the candidates of a doc by its posting level and values (in full: from
/// [`super::postings::posting_values`] of a sketch made now, or
/// [`Index::posting_values`] of a stored doc).
pub fn search(
    index: &Index,
    fresh: &Fresh,
    over_cap: &OverCap,
    (level, values): (u8, Vec<u64>),
) -> Result<Candidates> {
    let p = index.params();
    let lookup = postings::lookup(index, &values, over_cap)?;
    let cap_bytes = p.common_shingle_cap as usize * ENTRY;
    let mut shared: U64Map<Shared> = U64Map::default();
    let mut heads: Vec<u64> = Vec::new();
    let mut over = vec![false; values.len()];
    for (i, (v, stored)) in values.iter().zip(lookup.lists()).enumerate() {
        let fresh = fresh.entries(*v);
        let list: &[u8] = match stored {
            Stored::Over(head) => {
                heads.extend_from_slice(head);
                over[i] = true;
                continue;
            }
            Stored::Absent => &[],
            Stored::List(l) => l,
        };
        let entries = list.chunks_exact(ENTRY).chain(fresh.chunks_exact(ENTRY));
        if list.len() + fresh.len() > cap_bytes {
            heads.extend(entries.take(COMMON_HEAD).map(|e| entry_fields(e).0));
            over[i] = true;
            continue;
        }
        for e in entries {
            let (doc, level, count) = entry_fields(e);
            shared
                .entry(doc)
                .or_insert(Shared {
                    doc,
                    count: 0,
                    level,
                    values: count,
                })
                .count += 1;
        }
    }
    let mut shared: Vec<Shared> = shared.into_values().collect();
    shared.sort_unstable_by_key(|s| s.doc);
    Ok(Candidates {
        level,
        values,
        shared,
        heads,
        over,
    })
}
