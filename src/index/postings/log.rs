//! Posting entries kept in the order they come and sorted only when spilled, for an
//! ingest whose pair step reads none of them (`ingest --pairs`: the pairs come from
//! files). [`Fresh`] keeps each value's list in a hash table so the local pair step can
//! look it up; here an add is an append, and a spill sorts each key range (on every
//! thread) into the run [`Fresh::spill`] would write for the same entries. The inserts
//! into the table were most of the postings thread's time (rd100k first sweep: ~0.6 of
//! its 1.0–1.2 CPU-s).

use super::fresh::{shard_of, store_run, SHARDS};
use super::run::{entry, list_limit, ENTRY};
use super::Fresh;
use crate::index::{Index, Result};

/// Entries of docs from the mark on, by key range, each as its key (48 bits) above
/// its entry's 7 bytes: sorted as numbers, by key then doc.
pub struct AddLog {
    /// The buffer it was made from, emptied (its mark follows the spills).
    fresh: Fresh,
    shards: Vec<Vec<u128>>,
    entries: usize,
}

#[inline]
fn pack(key: u64, e: &[u8]) -> u128 {
    let mut b = [0u8; 8];
    b[1..].copy_from_slice(&e[..ENTRY]);
    (key as u128) << 56 | u64::from_be_bytes(b) as u128
}

#[inline]
fn unpack(x: u128) -> (u64, [u8; ENTRY]) {
    let b = (x as u64).to_be_bytes();
    let mut e = [0u8; ENTRY];
    e.copy_from_slice(&b[1..]);
    ((x >> 56) as u64, e)
}

impl AddLog {
    /// The entries of `fresh` (docs from its mark on), kept from now on as they come.
    pub fn new(mut fresh: Fresh) -> AddLog {
        let mut shards: Vec<Vec<u128>> = vec![Vec::new(); SHARDS];
        let mut entries = 0;
        fresh.drain(|i, key, e| {
            shards[i].push(pack(key, e));
            entries += 1;
        });
        AddLog {
            fresh,
            shards,
            entries,
        }
    }

    /// Adds each of `adds` (doc, level, count, values) in order: the doc under each of
    /// its values.
    pub fn add_batch(&mut self, adds: &[(u64, u8, usize, Vec<u64>)]) {
        for (doc, level, count, values) in adds {
            let e = entry(*doc, *level, (*count).min(u16::MAX as usize) as u16);
            for v in values {
                self.shards[shard_of(*v)].push(pack(*v, &e));
            }
            self.entries += values.len();
        }
    }

    /// Whether it should be spilled before `values` more entries are added: with them
    /// it could pass `budget` bytes (a vector holds up to twice its entries as it grows).
    pub fn full(&self, budget: usize, values: usize) -> bool {
        (self.entries + values) * 16 * 2 > budget
    }

    /// Stores the entries as one more run, with the new mark `next_doc`: the run
    /// [`Fresh::spill`] writes for them (each key's entries in doc order, cut to the
    /// cap). Each key range is sorted and encoded on one of `threads` threads.
    pub fn spill(&mut self, index: &Index, next_doc: u64, threads: usize) -> Result<()> {
        let per = SHARDS.div_ceil(threads.clamp(1, SHARDS));
        std::thread::scope(|s| {
            for group in self.shards.chunks_mut(per) {
                s.spawn(move || group.iter_mut().for_each(|v| v.sort_unstable()));
            }
        });
        let max = list_limit(index.params().common_shingle_cap as usize) / ENTRY;
        let shards = &self.shards;
        let empty = self.entries == 0;
        let bytes = store_run(
            index,
            (empty, next_doc),
            self.entries,
            threads,
            |i, part| {
                let (mut last, mut kept) = (None, 0);
                for x in &shards[i] {
                    let (key, e) = unpack(*x);
                    if last != Some(key) {
                        (last, kept) = (Some(key), 0);
                    }
                    if kept < max {
                        part.push(key, &e)?;
                        kept += 1;
                    }
                }
                Ok(())
            },
        )?;
        if let Some(bytes) = bytes {
            // Freed, not kept: the next entries grow the vectors again.
            self.shards.iter_mut().for_each(|s| *s = Vec::new());
            self.entries = 0;
            self.fresh.spilled_to(next_doc, bytes);
        }
        Ok(())
    }

    /// The buffer it was made from, with the entries not spilled (none after a spill).
    pub fn into_fresh(mut self) -> Fresh {
        for shard in &mut self.shards {
            shard.sort_unstable();
            for x in shard.iter() {
                let (key, e) = unpack(*x);
                let (doc, level, count) = super::entry_fields(&e);
                self.fresh
                    .add(doc, level, count as usize, std::iter::once(key));
            }
        }
        self.fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// Adds of docs `docs`, a few hundred values each from a small range (long lists,
    /// some past the cap, over every key range).
    fn adds(docs: std::ops::Range<u64>) -> Vec<(u64, u8, usize, Vec<u64>)> {
        docs.map(|d| {
            let values: Vec<u64> = (0..300u64)
                .map(|i| ((d * 7 + i * 13) % 5000).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16)
                .collect::<std::collections::BTreeSet<u64>>()
                .into_iter()
                .collect();
            (d, (d % 3) as u8, values.len() + d as usize % 400, values)
        })
        .collect()
    }

    fn runs(index: &Index) -> Vec<Vec<u8>> {
        let store = index.postings_store().unwrap();
        (store.runs().iter())
            .map(|r| std::fs::read(r.path()).unwrap())
            .collect()
    }

    #[test]
    fn a_spilled_log_is_the_run_the_fresh_lists_make() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| Index::open(&dir.path().join(name), &Config::default(), true);
        let (a, b) = (open("a").unwrap(), open("b").unwrap());
        // Docs 0..40 in the buffer before, 40..100 and 100..130 added after.
        let (before, batches) = (adds(0..40), [adds(40..100), adds(100..130)]);
        let mut fresh = Fresh::default();
        fresh.add_batch(&before, 2);
        for batch in &batches {
            fresh.add_batch(batch, 2);
        }
        fresh.spill(&a, 130, 2).unwrap();
        let mut given = Fresh::default();
        given.add_batch(&before, 1);
        let mut log = AddLog::new(given);
        for batch in &batches {
            log.add_batch(batch);
        }
        assert!(log.full(1 << 20, 0) && !log.full(1 << 30, 0));
        log.spill(&b, 130, 3).unwrap();
        assert_eq!(runs(&a), runs(&b));
        assert_eq!(runs(&b).len(), 1);
        let left = log.into_fresh();
        assert_eq!(left.mark(), 130);
        // Entries not spilled go back into the buffer, in their lists' order.
        let mut log = AddLog::new(left);
        log.add_batch(&adds(130..140));
        let mut fresh = log.into_fresh();
        let mut want = Fresh::default();
        want.add_batch(&adds(130..140), 1);
        let v = adds(130..131)[0].3[5];
        assert_eq!(fresh.entries(v), want.entries(v));
        fresh.spill(&b, 140, 1).unwrap();
        want.spill(&a, 140, 1).unwrap();
        assert_eq!(runs(&a), runs(&b));
    }
}
