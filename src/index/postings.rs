//! Posting lists: a sampled sketch value → the docs whose posting sample holds it.
//!
//! Lists live in two places. Docs below the *mark* are in the `postings` column family;
//! docs from the mark on (added since the last spill) are in memory, in [`Fresh`]. A
//! spill writes the fresh lists as one sorted SST file that RocksDB ingests atomically
//! together with the new mark, at the end of every ingest and whenever the buffer
//! reaches its budget. Why not merge operands through the memtable: the keys are random
//! 8-byte values, so every append is a random insert into a large memtable and every
//! flush re-sorts it — measured at a fifth of all CPU of a later sweep (20k pages, 2
//! cores), for data that is only ever appended and looked up.
//!
//! A lookup ([`lookup`]) reads the stored lists and the mark under one snapshot; the
//! fresh entries ([`Fresh::entries`]) complete them. Ingest's pair step looks up a
//! batch's values by key range while no spill can happen (spills fall between batches),
//! and checks the mark it read against the buffer's.
//!
//! After a killed ingest the fresh lists are gone, but they are a pure function of the
//! sketches of docs from the mark on: [`Fresh::load`] rebuilds them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::RwLock;

use rocksdb::{IngestExternalFileOptions, ReadOptions, SstFileWriter};

use super::columns::postings::{self as layout, entry_doc, ENTRY as POSTING_ENTRY, MARK_KEY};
use super::{cf, Index, Result};
use crate::sketch::{posting_key, posting_key_bytes, Sketch, MAX_TZ, POSTING_KEY_BYTES};

/// Docs remembered from the head of each over-cap list: a doc made mostly of over-cap
/// values (a member of a family larger than the cap) is compared with these, so such
/// families keep growing as one cluster.
pub const COMMON_HEAD: usize = 8;

/// Over-cap values remembered (with their heads).
const OVER_CAP_LIMIT: usize = 1 << 18;

/// Hasher for keys that are already well-mixed 64-bit values (sketch values) or small
/// integers (doc ids): one multiply instead of SipHash, which the writer felt.
#[derive(Default)]
pub struct U64Hasher(u64);

impl Hasher for U64Hasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by u64 with [`U64Hasher`].
pub type U64Map<V> = HashMap<u64, V, BuildHasherDefault<U64Hasher>>;

pub use layout::entry;

/// The values of a sketch that go into postings: those ≡ 0 mod 2^ℓ for the smallest
/// ℓ ≥ the sketch's level that leaves fewer than 2P of them, as their posting keys
/// ([`posting_key`]), ascending and distinct.
pub fn posting_values(s: &Sketch, posting_target: u32) -> (u8, Vec<u64>) {
    let level = posting_level(s, posting_target);
    (level, posting_keys(s.at_level(level)))
}

/// The level of [`posting_values`] alone (what [`StoredSketch::new`] needs).
///
/// [`StoredSketch::new`]: crate::index::columns::sketches::StoredSketch::new
pub fn posting_level(s: &Sketch, posting_target: u32) -> u8 {
    let mut level = s.level;
    loop {
        let n = s.at_level(level).count();
        // Reduced values tell trailing zeros apart up to MAX_TZ: no level beyond.
        if (n as u64) < 2 * posting_target as u64 || level as u32 >= MAX_TZ {
            return level;
        }
        level += 1;
    }
}

/// The posting keys of sample values, ascending and distinct.
pub fn posting_keys(values: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut keys: Vec<u64> = values.map(posting_key).collect();
    // Values in full order tie on their kept bits only by chance: almost always sorted.
    if !keys.is_sorted_by(|a, b| a < b) {
        keys.sort_unstable();
        keys.dedup();
    }
    keys
}

/// A stored list as a lookup saw it.
#[derive(Debug, Clone)]
pub enum Stored {
    /// No stored entries.
    Absent,
    /// The entries (at most the cap).
    List(Vec<u8>),
    /// Over the cap: only the first docs.
    Over(Vec<u64>),
}

/// Stored lists of some values, and the mark they were read under.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// First doc id not in the stored lists.
    pub mark: u64,
    /// One per value, in the order asked.
    pub lists: Vec<Stored>,
}

/// Values whose stored lists are over the cap, with their heads. Lists only grow and
/// keep their first entries, so what is over the cap once stays so, with the same head:
/// shared by all threads without changing any answer.
#[derive(Default)]
pub struct OverCap(RwLock<U64Map<Vec<u64>>>);

impl OverCap {
    fn get(&self, v: u64) -> Option<Vec<u64>> {
        self.0.read().ok()?.get(&v).cloned()
    }

    fn insert(&self, v: u64, head: Vec<u64>) {
        if let Ok(mut m) = self.0.write() {
            if m.len() < OVER_CAP_LIMIT {
                m.insert(v, head);
            }
        }
    }
}

/// Reads the stored lists of `values` (sorted ascending) and the mark, under one snapshot.
pub fn lookup(index: &Index, values: &[u64], over: &OverCap) -> Result<Lookup> {
    let db = index.db();
    let pcf = index.cf(cf::POSTINGS);
    let cap = index.params().common_shingle_cap as usize;
    let snap = db.snapshot();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    let mark = match db.get_cf_opt(pcf, MARK_KEY, &ro)? {
        Some(v) => layout::mark(&v)?,
        None => 0,
    };
    let mut lists: Vec<Stored> = values
        .iter()
        .map(|v| match over.get(*v) {
            Some(head) => Stored::Over(head),
            None => Stored::Absent,
        })
        .collect();
    let ask: Vec<(usize, [u8; POSTING_KEY_BYTES])> = values
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(lists[*i], Stored::Absent))
        .map(|(i, v)| (i, posting_key_bytes(*v)))
        .collect();
    let got = db.batched_multi_get_cf_opt(pcf, ask.iter().map(|(_, k)| k), true, &ro);
    for ((i, _), res) in ask.iter().zip(got) {
        let Some(list) = res? else { continue };
        let list = layout::entries(values[*i], &list)?;
        lists[*i] = if list.len() > cap * POSTING_ENTRY {
            let head = heads_of(list);
            over.insert(values[*i], head.clone());
            Stored::Over(head)
        } else {
            Stored::List(list.to_vec())
        };
    }
    Ok(Lookup { mark, lists })
}

fn heads_of(list: &[u8]) -> Vec<u64> {
    list.chunks_exact(POSTING_ENTRY)
        .take(COMMON_HEAD)
        .map(entry_doc)
        .collect()
}

/// A fresh list: the stored part as read, then the fresh entries. Most values are in one
/// doc's sample only, so the first two entries are kept in the map's slot: a heap
/// allocation per value was a tenth of a first sweep's writer time.
type FreshList = smallvec::SmallVec<[u8; 2 * POSTING_ENTRY + 2]>;

/// Marks a list whose stored part is not known (rebuilt by [`Fresh::load`]): the spill
/// writes its entries as a merge operand.
const UNKNOWN_BASE: u32 = u32::MAX;

/// How a spilled run of postings is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// A run that may stay as it is: zstd-compressed like every compacted run.
    Kept,
    /// A run the ingest merges with the others before it ends: uncompressed (the
    /// merge compresses its output), as the writer waits for every spill.
    Transient,
}

/// Posting entries of docs from the mark on, not stored yet, in [`SHARDS`] key ranges.
pub struct Fresh {
    mark: u64,
    /// The lists by key range, in key order: a batch's adds run on every core
    /// ([`Fresh::add_batch`]), and the spill writes the shards one after another.
    shards: Vec<Shard>,
    /// Lists a shard may hold before a spill ([`Fresh::size_for`]).
    max_lists: usize,
    /// Files written by [`Fresh::spill`] since this was made, and their bytes.
    spilled: (usize, u64),
    /// Of those, files written uncompressed ([`Run::Transient`]).
    transient: usize,
}

/// Key ranges of the postings buffer: a posting key's top four bits (of 48).
const SHARDS: usize = 16;

#[inline]
fn shard_of(v: u64) -> usize {
    ((v >> (8 * POSTING_KEY_BYTES - 4)) as usize) & (SHARDS - 1)
}

/// The fresh lists of one key range.
#[derive(Default)]
struct Shard {
    /// Value → (bytes of the stored list at the front, or [`UNKNOWN_BASE`]; the stored
    /// list as the lookup read it followed by the fresh entries). Most values are in
    /// one doc, so most lists stay in their slot ([`FreshList`]), and the map is most of
    /// the buffer.
    lists: U64Map<(u32, FreshList)>,
    /// Bytes of fresh entries in lists grown out of their slot (on the heap).
    heap_bytes: usize,
    base_bytes: usize,
}

impl Shard {
    /// Appends entry `e` to `v`'s list, which starts from `stored` when it is new here.
    fn add(&mut self, v: u64, stored: Option<&Stored>, e: &[u8; POSTING_ENTRY]) {
        let mut created = false;
        let slot = self.lists.entry(v).or_insert_with(|| {
            created = true;
            match stored {
                Some(Stored::Absent) => (0, FreshList::new()),
                Some(Stored::List(l)) => (l.len() as u32, FreshList::from_slice(l)),
                Some(Stored::Over(_)) | None => (UNKNOWN_BASE, FreshList::new()),
            }
        });
        if created && slot.0 != UNKNOWN_BASE {
            self.base_bytes += slot.0 as usize;
        }
        let inline = !slot.1.spilled();
        slot.1.extend_from_slice(e);
        if slot.1.spilled() {
            // On the heap from now on: all of it the first time, then each entry.
            self.heap_bytes += if inline { slot.1.len() } else { e.len() };
        }
    }

    /// See [`Fresh::memory`].
    fn memory(&self) -> usize {
        let table = self.lists.capacity() / 7 * 8 * Fresh::SLOT;
        table + (self.heap_bytes + self.base_bytes) * 5 / 4
    }
}

impl Default for Fresh {
    fn default() -> Self {
        Fresh {
            mark: 0,
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            max_lists: usize::MAX,
            spilled: (0, 0),
            transient: 0,
        }
    }
}

impl Fresh {
    /// The fresh lists of `index`: rebuilt from the sketches of docs from the mark on.
    pub fn load(index: &Index) -> Result<Fresh> {
        let mark = match index.db().get_cf(index.cf(cf::POSTINGS), MARK_KEY)? {
            Some(v) => layout::mark(&v)?,
            None => 0,
        };
        let mut fresh = Fresh {
            mark,
            ..Fresh::default()
        };
        index.sketches().from_doc(mark, |doc, stored| {
            let (level, values) = (stored.posting_level, stored.posting);
            if values.is_empty() {
                return Ok(());
            }
            // The stored lists are not read here: these are written as merge operands.
            fresh.add(
                doc,
                level,
                values.len(),
                values.iter().map(|v| (*v, None::<&Stored>)),
            );
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

    /// Bytes of one slot of the map's table: key, base and list, and a control byte.
    const SLOT: usize = std::mem::size_of::<(u64, (u32, FreshList))>() + 1;

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
            Some((UNKNOWN_BASE, l)) => l,
            Some((base, l)) => &l[*base as usize..],
            None => &[],
        }
    }

    /// Adds `doc`, whose posting sample has `count` values, under `values` (a subset),
    /// each with what the lookup under the current mark found stored for it (`None`:
    /// not looked up). The spill then writes each list whole — the stored entries
    /// followed by the fresh ones — so neither reads nor compactions ever call the merge
    /// operator: a newer whole list simply shadows the older one.
    pub fn add<'a>(
        &mut self,
        doc: u64,
        level: u8,
        count: usize,
        values: impl Iterator<Item = (u64, Option<&'a Stored>)>,
    ) {
        let e = entry(doc, level, count.min(u16::MAX as usize) as u16);
        for (v, stored) in values {
            self.shards[shard_of(v)].add(v, stored, &e);
        }
    }

    /// [`Fresh::add`] of each of `adds` (doc, level, count, values) in order, each value
    /// with its stored list in `lists` (absent when not there), on `threads` threads:
    /// each takes a range of shards and adds the values that fall in it, doc by doc, so
    /// every list gets its entries in the same order. The adds were a serial pass over a
    /// table too large for the cache (rd100k steady sweep: 0.6 s of the commit).
    pub fn add_batch(
        &mut self,
        adds: &[(u64, u8, usize, Vec<u64>)],
        lists: &U64Map<Stored>,
        threads: usize,
    ) {
        let per = SHARDS.div_ceil(threads.clamp(1, SHARDS));
        let work = |group: &mut [Shard], first: usize| {
            let range = first..first + group.len();
            for (d, level, count, values) in adds {
                let e = entry(*d, *level, (*count).min(u16::MAX as usize) as u16);
                for v in values {
                    let s = shard_of(*v);
                    if range.contains(&s) {
                        let stored = lists.get(v).unwrap_or(&Stored::Absent);
                        group[s - first].add(*v, Some(stored), &e);
                    }
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

    /// Memory held, in bytes: the map's table as allocated (slots of key, base and list
    /// plus a control byte, at most 7/8 full) and the lists grown out of their slot, where each
    /// allocation is rounded up to the allocator's size classes (about a quarter more).
    pub fn memory(&self) -> usize {
        self.shards.iter().map(Shard::memory).sum()
    }

    /// Files spilled since this was made, and their bytes.
    pub fn spilled(&self) -> (usize, u64) {
        self.spilled
    }

    /// Files spilled uncompressed since this was made: the ingest must merge them.
    pub fn transient(&self) -> usize {
        self.transient
    }

    /// Stores the fresh lists and the new mark `next_doc` in one atomic file ingestion,
    /// as a run that stays ([`Run::Kept`]: zstd) or one the ingest merges before it ends
    /// ([`Run::Transient`]: uncompressed; a 100k-page first sweep's spills 2.7 → 2.0 s).
    ///
    /// A kept run's blocks are compressed on `threads` threads beside the one that
    /// writes the file (RocksDB's parallel compression): zstd was two fifths of the
    /// spill that ends a steady 100k-page sweep, on the committing thread.
    pub fn spill(&mut self, index: &Index, next_doc: u64, run: Run, threads: usize) -> Result<()> {
        if self.shards.iter().all(|s| s.lists.is_empty()) && self.mark == next_doc {
            return Ok(());
        }
        let db = index.db();
        // Every record the lists cover must be in the log before they are stored: a
        // resumed run must never find postings of docs it is about to create again.
        db.flush_wal(false)?;
        let path = index.path().join("postings-spill.sst");
        let _ = std::fs::remove_file(&path);
        let mut opts = index.postings_options();
        if run == Run::Transient {
            // The writer's file takes the bottommost type.
            opts.set_compression_type(rocksdb::DBCompressionType::None);
            opts.set_bottommost_compression_type(rocksdb::DBCompressionType::None);
        } else if threads > 1 {
            opts.set_compression_options_parallel_threads(threads.min(16) as i32);
        }
        let mut w = SstFileWriter::create(&opts);
        w.open(&path)?;
        // In key order, read from the map in place: the table keeps its size for the
        // next lists. The slots are taken in table order and sorted, and each slot and
        // its list are fetched a few keys ahead: looking every key up again in a table
        // of millions, then its list, stalled on two cache misses per value (the spill
        // of a 20k-page first sweep, 1.7M lists: 0.9 s, now 0.47 s).
        // Exactly what the merge operator would make of the stored list and the entries.
        let limit = layout::list_limit(index.params().common_shingle_cap as usize);
        const AHEAD: usize = 8;
        // The shards are key ranges, in order.
        for shard in &self.shards {
            let mut slots: Vec<(u64, &(u32, FreshList))> =
                shard.lists.iter().map(|(k, l)| (*k, l)).collect();
            slots.sort_unstable_by_key(|(k, _)| *k);
            for (i, (k, (base, list))) in slots.iter().enumerate() {
                // Two misses a value, started ahead: the table slot, then its list.
                if let Some((_, slot)) = slots.get(i + 2 * AHEAD) {
                    prefetch(*slot);
                }
                if let Some((_, (_, next))) = slots.get(i + AHEAD) {
                    prefetch(next.as_ptr());
                }
                if *base == UNKNOWN_BASE {
                    w.merge(posting_key_bytes(*k), list)?;
                } else {
                    w.put(posting_key_bytes(*k), &list[..list.len().min(limit)])?;
                }
            }
        }
        w.put(MARK_KEY, next_doc.to_be_bytes())?;
        w.finish()?;
        let mut io = IngestExternalFileOptions::default();
        io.set_move_files(true);
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        db.ingest_external_file_cf_opts(index.cf(cf::POSTINGS), &io, vec![&path])?;
        for s in &mut self.shards {
            s.lists.clear();
            s.heap_bytes = 0;
            s.base_bytes = 0;
        }
        self.spilled.0 += 1;
        self.spilled.1 += bytes;
        self.transient += (run == Run::Transient) as usize;
        self.mark = next_doc;
        Ok(())
    }
}

/// Asks the CPU to start loading the cache line at `p` (a hint; nothing elsewhere).
#[inline]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
