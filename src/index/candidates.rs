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
use crate::access::Reader;

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
/// [`Index::posting_values`] of a stored doc), as reader `r` may be told of them: a
/// list over the cap only because of docs `r` does not see is the list of those it
/// sees, where the kept part of the list tells it ([`list_seen`]).
pub fn search(
    index: &Index,
    fresh: &Fresh,
    over_cap: &OverCap,
    r: &Reader,
    (level, values): (u8, Vec<u64>),
) -> Result<Candidates> {
    let p = index.params();
    let lookup = postings::lookup(index, &values, over_cap)?;
    let cap_bytes = p.common_shingle_cap as usize * ENTRY;
    let mut shared: U64Map<Shared> = U64Map::default();
    let mut heads: Vec<u64> = Vec::new();
    let mut over = vec![false; values.len()];
    let mut seen_list: Vec<u8>;
    for (i, (v, stored)) in values.iter().zip(lookup.lists()).enumerate() {
        let fresh = fresh.entries(*v);
        let (list, fresh): (&[u8], &[u8]) = match stored {
            Stored::Over(head) => match r.filtered() {
                true => match list_seen(index, r, *v, None, fresh)? {
                    Some(l) => {
                        seen_list = l;
                        (&seen_list, &[])
                    }
                    None => {
                        heads.extend_from_slice(head);
                        over[i] = true;
                        continue;
                    }
                },
                false => {
                    heads.extend_from_slice(head);
                    over[i] = true;
                    continue;
                }
            },
            Stored::Absent => (&[], fresh),
            Stored::List(l) if r.filtered() && l.len() + fresh.len() > cap_bytes => {
                match list_seen(index, r, *v, Some(l), fresh)? {
                    Some(l) => {
                        seen_list = l;
                        (&seen_list, &[])
                    }
                    None => (l, fresh),
                }
            }
            Stored::List(l) => (l, fresh),
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

/// The list of posting value `value` as an index of the captures reader `r` sees would
/// hold it (the entries of the docs `r` sees), when what is kept tells it: the list is
/// kept whole (`stored`, as a lookup found it under the cap, with `fresh`), or past its
/// kept entries (the first cap + 1, read again) every doc is one `r` does not see (docs
/// from [`hidden_from`] on: an embargo on the newest captures). None otherwise: the
/// list stays over the cap, as for every reader.
fn list_seen(
    index: &Index,
    r: &Reader,
    value: u64,
    stored: Option<&[u8]>,
    fresh: &[u8],
) -> Result<Option<Vec<u8>>> {
    let mut kept = Vec::new();
    let list = match stored {
        Some(l) => l,
        None => {
            if postings::kept_list(index, value, &mut kept)? {
                let from = hidden_from(index, r)?;
                let last = kept
                    .len()
                    .checked_sub(ENTRY)
                    .map(|at| entry_fields(&kept[at..]).0);
                if last.is_none_or(|d| d + 1 < from) {
                    return Ok(None);
                }
            }
            &kept
        }
    };
    let mut out = Vec::new();
    for e in list.chunks_exact(ENTRY).chain(fresh.chunks_exact(ENTRY)) {
        if doc_seen(index, r, entry_fields(e).0)? {
            out.extend_from_slice(e);
        }
    }
    Ok(Some(out))
}

/// Whether reader `r` sees doc `doc`: a capture of it that is no revisit (an index
/// of the captures it sees holds the doc exactly then). Kept per view.
fn doc_seen(index: &Index, r: &Reader, doc: u64) -> Result<bool> {
    let kept = r.kept();
    if kept.hidden_from_known().is_some_and(|from| doc >= from) {
        return Ok(false);
    }
    if let Some(seen) = kept.doc_seen(doc) {
        return Ok(seen);
    }
    let seen = super::columns::original_seen(index, r, doc, "99999999999999")?;
    kept.keep_doc_seen(doc, seen);
    Ok(seen)
}

/// Docs [`hidden_from`] looks at, at most, from the newest down.
const HIDDEN_WALK: u64 = 1 << 18;

/// The least doc from which on reader `r` sees none, from the newest doc down (at most
/// [`HIDDEN_WALK`] of them looked at): once per view, whatever the request's budget
/// (a reader asking meanwhile waits for it).
fn hidden_from(index: &Index, r: &Reader) -> Result<u64> {
    r.kept().hidden_from(|| {
        let next = index.counters().next_doc;
        super::budget::Budget::unbounded().run(|| {
            let mut b = next;
            // Not kept one by one: the walk would push every other doc out of the
            // view cache, and the bound answers for the docs past it.
            let seen = |d| super::columns::original_seen(index, r, d, "99999999999999");
            while b > 0 && next - b < HIDDEN_WALK && !seen(b - 1)? {
                b -= 1;
            }
            Ok::<u64, super::IndexError>(b)
        })
    })
}
