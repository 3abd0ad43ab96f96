//! The fresh lists: posting entries of docs from the mark on, in memory until a spill
//! writes them as a run.

use super::run::{self, entry, list_limit, ENTRY};
use super::store::Store;
use super::{hash_u64, prefetch, U64Map};
use crate::index::{Index, Result};

/// A fresh list: its entries, in doc order. Most values are in one doc's sample only,
/// so the first two entries are kept in the map's slot: a heap allocation per value was
/// a tenth of a first sweep's writer time.
type FreshList = smallvec::SmallVec<[u8; 2 * ENTRY + 2]>;

/// Posting entries of docs from the mark on, not stored yet, in [`SHARDS`] key ranges.
pub struct Fresh {
    mark: u64,
    /// The lists by key range, in key order: a batch's adds run on every core
    /// ([`Fresh::add_batch`]), and the spill writes the shards one after another.
    shards: Vec<Shard>,
    /// Lists a shard may hold before a spill ([`Fresh::size_for`]).
    max_lists: usize,
    /// Runs written by [`Fresh::spill`] since this was made, and their bytes.
    spilled: (usize, u64),
}

/// Key ranges of the postings buffer: a posting key's top four bits (of 48).
pub(super) const SHARDS: usize = 16;

#[inline]
pub(super) fn shard_of(v: u64) -> usize {
    ((v >> (8 * crate::sketch::POSTING_KEY_BYTES - 4)) as usize) & (SHARDS - 1)
}

/// The fresh lists of one key range.
#[derive(Default)]
struct Shard {
    /// Value → its fresh entries. Most values are in one doc, so most lists stay in
    /// their slot ([`FreshList`]), and the map is most of the buffer.
    lists: U64Map<FreshList>,
    /// Bytes of fresh entries in lists grown out of their slot (on the heap).
    heap_bytes: usize,
    /// Entries held (sizes the spilled run's table without a pass over the lists).
    entries: usize,
}

impl Shard {
    /// Appends entry `e` to `v`'s list.
    fn add(&mut self, v: u64, e: &[u8; ENTRY]) {
        let list = self.lists.entry(v).or_default();
        let inline = !list.spilled();
        list.extend_from_slice(e);
        self.entries += 1;
        if list.spilled() {
            // On the heap from now on: all of it the first time, then each entry.
            self.heap_bytes += if inline { list.len() } else { e.len() };
        }
    }

    /// The slots of its table, less one: a key's first slot is its hash's low bits
    /// (hashbrown's layout; only an order for walking the table, never for answers).
    fn slot_mask(&self) -> u64 {
        (self.lists.capacity() * 8 / 7).next_power_of_two() as u64 - 1
    }

    /// See [`Fresh::memory`].
    fn memory(&self) -> usize {
        let table = self.lists.capacity() / 7 * 8 * Fresh::SLOT;
        table + self.heap_bytes * 5 / 4
    }
}

impl Default for Fresh {
    fn default() -> Self {
        Fresh {
            mark: 0,
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            max_lists: usize::MAX,
            spilled: (0, 0),
        }
    }
}

impl Fresh {
    /// The fresh lists of `index`: rebuilt from the sketches of docs from the mark on,
    /// below `end` (the docs from there on wait for their pairs: they have no postings).
    pub fn load(index: &Index, end: Option<u64>) -> Result<Fresh> {
        let mark = index.postings_mark()?;
        let mut fresh = Fresh {
            mark,
            ..Fresh::default()
        };
        // Entries count what the pair step counted: with edges on content, the values
        // outside the doc's template.
        let templates = match index.params().resemblance {
            crate::config::Resemblance::Content => Some(index.template_values().all()?),
            crate::config::Resemblance::Full => None,
        };
        index.sketches().from_doc(mark, end, |doc, stored| {
            let (level, values) = (stored.posting_level, stored.posting);
            let count = match &templates {
                None => values.len(),
                Some(t) => {
                    let t = t.get(stored.template);
                    let inside = |v: &&u64| crate::template::holds_posting_key(t, **v);
                    values.len() - values.iter().filter(inside).count()
                }
            };
            if !values.is_empty() {
                fresh.add(doc, level, count, values.iter().copied());
            }
            Ok(())
        })?;
        Ok(fresh)
    }

    /// Sizes the tables for a buffer of `budget` bytes: together at most half of it.
    /// Each shard's table grows as its lists come and the buffer is spilled before one
    /// would pass that size ([`Fresh::full`]). Growing a table holds the old and the
    /// doubled one at once: with one table for the whole buffer that was ~500 MB over
    /// the budget at 245k pages, so it was made whole at the start, and a small sweep
    /// then touched a page of it for nearly every value it added (llvm-docs: a third of
    /// the committing thread's time in page faults); a shard's growth holds a
    /// sixteenth of that.
    pub fn size_for(&mut self, budget: usize) {
        let buckets = (budget / 2 / Self::SLOT / SHARDS).max(64);
        let buckets = 1usize << buckets.ilog2();
        // Hash tables fill buckets to 7/8 before they grow.
        self.max_lists = buckets / 8 * 7;
    }

    /// Bytes of one slot of the map's table: key and list, and a control byte.
    const SLOT: usize = std::mem::size_of::<(u64, FreshList)>() + 1;

    /// Whether the buffer should be spilled before a batch that adds `values` posting
    /// values is added: over `budget`, or a shard too near the size of table it may grow
    /// to for them to fit ([`Fresh::size_for`]).
    pub fn full(&self, budget: usize, values: usize) -> bool {
        // More than any doc's posting values (the posting target times a few levels).
        const ONE_DOC: usize = 4096;
        // The values spread over the shards as hashes do: twice an even share is room.
        let room = 2 * (values + ONE_DOC) / SHARDS;
        self.memory() > budget
            || (self.shards.iter()).any(|s| s.lists.len() + room > self.max_lists)
    }

    /// First doc id not in the stored lists.
    pub fn mark(&self) -> u64 {
        self.mark
    }

    /// Fresh entries of value `v`.
    pub fn entries(&self, v: u64) -> &[u8] {
        match self.shards[shard_of(v)].lists.get(&v) {
            Some(l) => l,
            None => &[],
        }
    }

    /// [`Fresh::entries`] of each of `values`, in their order, looked up in the order of
    /// their slots in the tables: one walk over each table, not a cache miss at nearly
    /// every value (rd100k first sweep, perf: 3.4 → 1.5% of the ingest's CPU with the
    /// sort).
    pub fn entries_all(&self, values: &[u64]) -> Vec<&[u8]> {
        let slots: Vec<u64> = self.shards.iter().map(Shard::slot_mask).collect();
        let mut order: Vec<(u64, u32)> = (values.iter().enumerate())
            .map(|(i, v)| {
                let s = shard_of(*v);
                ((s as u64) << 56 | (hash_u64(*v) & slots[s]), i as u32)
            })
            .collect();
        order.sort_unstable();
        let mut out: Vec<&[u8]> = vec![&[]; values.len()];
        for (_, i) in order {
            out[i as usize] = self.entries(values[i as usize]);
        }
        out
    }

    /// Adds `doc`, whose posting sample has `count` values, under `values` (a subset).
    pub fn add(&mut self, doc: u64, level: u8, count: usize, values: impl Iterator<Item = u64>) {
        let e = entry(doc, level, count.min(u16::MAX as usize) as u16);
        for v in values {
            self.shards[shard_of(v)].add(v, &e);
        }
    }

    /// [`Fresh::add`] of each of `adds` (doc, level, count, values) in order, on
    /// `threads` threads: each takes a range of shards and adds the values that fall in
    /// it, doc by doc, so every list gets its entries in the same order. The adds were a
    /// serial pass over a table too large for the cache (rd100k steady sweep: 0.6 s of
    /// the commit). Each shard takes its values in the order of their slots in its
    /// table (a value's entries still in doc order), so the inserts walk the table
    /// once instead of missing the cache at nearly every one (rd100k first sweep, perf:
    /// `Shard::add` 5.7 → 3.6% of the ingest's CPU, the sorts 0.7% more).
    pub fn add_batch(&mut self, adds: &[(u64, u8, usize, Vec<u64>)], threads: usize) {
        let per = SHARDS.div_ceil(threads.clamp(1, SHARDS));
        let work = |group: &mut [Shard], first: usize| {
            let range = first..first + group.len();
            let mut mine: Vec<Vec<(u64, u32)>> = vec![Vec::new(); group.len()];
            for (k, (_, _, _, values)) in adds.iter().enumerate() {
                for v in values {
                    let s = shard_of(*v);
                    if range.contains(&s) {
                        mine[s - first].push((*v, k as u32));
                    }
                }
            }
            for (shard, values) in group.iter_mut().zip(mine) {
                // Slot, then position: a value's entries keep their (doc) order.
                let mask = shard.slot_mask();
                let mut order: Vec<u64> = (values.iter().enumerate())
                    .map(|(i, (v, _))| (hash_u64(*v) & mask) << 32 | i as u64)
                    .collect();
                order.sort_unstable();
                for o in order {
                    let (v, k) = values[(o & 0xffff_ffff) as usize];
                    let (d, level, count, _) = &adds[k as usize];
                    let e = entry(*d, *level, (*count).min(u16::MAX as usize) as u16);
                    shard.add(v, &e);
                }
            }
        };
        let mut groups = self.shards.chunks_mut(per);
        let Some(mine) = groups.next() else {
            return;
        };
        std::thread::scope(|scope| {
            for (i, group) in groups.enumerate() {
                let work = &work;
                scope.spawn(move || work(group, (i + 1) * per));
            }
            // This thread takes the first range.
            work(mine, 0);
        });
    }

    /// Memory held, in bytes: the map's table as allocated (slots of key and list plus
    /// a control byte, at most 7/8 full) and the lists grown out of their slot, where
    /// each allocation is rounded up to the allocator's size classes (about a quarter
    /// more).
    pub fn memory(&self) -> usize {
        self.shards.iter().map(Shard::memory).sum()
    }

    /// Runs spilled since this was made, and their bytes.
    pub fn spilled(&self) -> (usize, u64) {
        self.spilled
    }

    /// Stores the fresh lists as one more run, with the new mark `next_doc`, and makes
    /// it the index's postings; the buffer is then empty. The shards (key ranges) are
    /// encoded on `threads` threads, and the run is the same for any number.
    pub fn spill(&mut self, index: &Index, next_doc: u64, threads: usize) -> Result<()> {
        let empty = self.shards.iter().all(|s| s.lists.is_empty());
        let expect = self.shards.iter().map(|s| s.entries).sum();
        let shards = &self.shards;
        let max = list_limit(index.params().common_shingle_cap as usize);
        let bytes = store_run(index, (empty, next_doc), expect, threads, |i, part| {
            // In key order, read from the map in place: the table keeps its size for
            // the next lists. The slots are taken in table order and sorted, and each
            // slot and its list are fetched a few keys ahead: looking every key up
            // again in a table of millions, then its list, stalled on two cache
            // misses per value.
            const AHEAD: usize = 8;
            let mut slots: Vec<(u64, &FreshList)> =
                shards[i].lists.iter().map(|(k, l)| (*k, l)).collect();
            slots.sort_unstable_by_key(|(k, _)| *k);
            for (i, (k, list)) in slots.iter().enumerate() {
                if let Some((_, slot)) = slots.get(i + 2 * AHEAD) {
                    prefetch(*slot);
                }
                if let Some((_, next)) = slots.get(i + AHEAD) {
                    prefetch(next.as_ptr());
                }
                for e in list[..list.len().min(max)].chunks_exact(ENTRY) {
                    part.push(*k, e)?;
                }
            }
            Ok(())
        })?;
        let Some(bytes) = bytes else {
            return Ok(());
        };
        for s in &mut self.shards {
            s.lists.clear();
            s.heap_bytes = 0;
            s.entries = 0;
        }
        self.spilled.0 += 1;
        self.spilled.1 += bytes;
        self.mark = next_doc;
        Ok(())
    }

    /// Takes every entry out, each as (key, entry) in key range order and, within a
    /// key, in doc order; the buffer is then empty.
    pub(super) fn drain(&mut self, mut each: impl FnMut(usize, u64, &[u8])) {
        for (i, s) in self.shards.iter_mut().enumerate() {
            for (k, list) in s.lists.drain() {
                for e in list.chunks_exact(ENTRY) {
                    each(i, k, e);
                }
            }
            s.heap_bytes = 0;
            s.entries = 0;
        }
    }

    /// Records a run spilled from elsewhere ([`super::log::AddLog`]): the new mark and
    /// the run's bytes.
    pub(super) fn spilled_to(&mut self, next_doc: u64, bytes: u64) {
        self.spilled.0 += 1;
        self.spilled.1 += bytes;
        self.mark = next_doc;
    }
}

/// Stores posting entries of the docs from the mark to `next_doc` as one more run and
/// makes it the index's postings: `expect` records (before lists are cut to the cap),
/// in [`SHARDS`] key ranges, range `i`'s records pushed by `fill(i, part)` (lists cut
/// to `max` bytes, [`list_limit`]) on `threads` threads. `empty`: none is held, and
/// nothing is done when the mark is `next_doc` already (`None`); else the run's bytes.
pub(super) fn store_run(
    index: &Index,
    (empty, next_doc): (bool, u64),
    expect: usize,
    threads: usize,
    fill: impl Fn(usize, &mut run::RunPart) -> Result<()> + Sync,
) -> Result<Option<u64>> {
    let store = index.postings_store()?;
    if empty && store.mark() == next_doc {
        return Ok(None);
    }
    // Every record the lists cover must be in the log before they are stored: a
    // resumed run must never find postings of docs it is about to create again.
    index.db().flush_wal(true)?;
    let limit = list_limit(index.params().common_shingle_cap as usize);
    let written = store.with_run(next_doc, expect, (limit, threads), |w| {
        // The shards are key ranges, in order: one part each.
        run::write_parts(w, SHARDS, threads, &fill)
    })?;
    let bytes = written.bytes().saturating_sub(store.bytes());
    index.set_postings_store(written);
    Ok(Some(bytes))
}

/// The postings of `index` settled at the end of an ingest: the newest runs merged
/// size-tiered ([`Store::settled`]), on `threads` threads. Returns the bytes the merges
/// wrote.
pub fn settle(index: &Index, threads: usize) -> Result<u64> {
    let store = index.postings_store()?;
    let limit = list_limit(index.params().common_shingle_cap as usize);
    let (settled, written): (Store, u64) = store.settled(limit, threads)?;
    index.set_postings_store(settled);
    Ok(written)
}
