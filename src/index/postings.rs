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
//! A lookup ([`lookup`]) reads the stored lists and the mark under one snapshot, so it can
//! run on the scan workers ahead of the writer; the writer completes it with the fresh
//! entries ([`Fresh::entries`]), which gives exactly the lists a lookup at commit time
//! would give, for any number of threads. A lookup made under an older mark (a spill
//! happened in between) is redone by the writer.
//!
//! After a killed ingest the fresh lists are gone, but they are a pure function of the
//! sketches of docs from the mark on: [`Fresh::load`] rebuilds them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::RwLock;

use rocksdb::{IngestExternalFileOptions, ReadOptions, SstFileWriter};

use super::codec::{self, read_u64, u64_key, POSTING_ENTRY};
use super::{cf, Index, IndexError, Result};
use crate::sketch::Sketch;

/// Key of the mark (9 bytes: after every 8-byte value key): the first doc id whose
/// postings are not stored yet.
pub const MARK_KEY: [u8; 9] = [0xff; 9];

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

/// One posting entry: doc, its posting level, its number of posting values.
pub fn entry(doc: u64, level: u8, count: u16) -> [u8; POSTING_ENTRY] {
    let mut e = [0u8; POSTING_ENTRY];
    e[..8].copy_from_slice(&doc.to_be_bytes());
    e[8] = level;
    e[9..11].copy_from_slice(&count.to_be_bytes());
    e
}

/// The values of a sketch that go into postings: those ≡ 0 mod 2^ℓ for the smallest
/// ℓ ≥ the sketch's level that leaves fewer than 2P of them.
pub fn posting_values(s: &Sketch, posting_target: u32) -> (u8, Vec<u64>) {
    let mut level = s.level;
    loop {
        let vals: Vec<u64> = s.at_level(level).collect();
        if (vals.len() as u64) < 2 * posting_target as u64 || level >= 63 {
            return (level, vals);
        }
        level += 1;
    }
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
    let mark = db
        .get_cf_opt(pcf, MARK_KEY, &ro)?
        .as_deref()
        .map(read_u64)
        .unwrap_or(0);
    let mut lists: Vec<Stored> = values
        .iter()
        .map(|v| match over.get(*v) {
            Some(head) => Stored::Over(head),
            None => Stored::Absent,
        })
        .collect();
    let ask: Vec<(usize, [u8; 8])> = values
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(lists[*i], Stored::Absent))
        .map(|(i, v)| (i, u64_key(*v)))
        .collect();
    let got = db.batched_multi_get_cf_opt(pcf, ask.iter().map(|(_, k)| k), true, &ro);
    for ((i, _), res) in ask.iter().zip(got) {
        let Some(list) = res? else { continue };
        lists[*i] = if list.len() > cap * POSTING_ENTRY {
            let head = heads_of(&list);
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
        .map(|e| read_u64(&e[..8]))
        .collect()
}

/// Posting entries of docs from the mark on, not stored yet.
#[derive(Default)]
pub struct Fresh {
    mark: u64,
    /// Value → (no stored list existed when the first entry came, entries).
    lists: U64Map<(bool, Vec<u8>)>,
    entries: usize,
}

impl Fresh {
    /// The fresh lists of `index`: rebuilt from the sketches of docs from the mark on.
    pub fn load(index: &Index) -> Result<Fresh> {
        let db = index.db();
        let mark = db
            .get_cf(index.cf(cf::POSTINGS), MARK_KEY)?
            .as_deref()
            .map(read_u64)
            .unwrap_or(0);
        let mut fresh = Fresh {
            mark,
            ..Default::default()
        };
        let target = index.params().posting_target;
        let start = u64_key(mark);
        for item in db.iterator_cf(
            index.cf(cf::SKETCHES),
            rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward),
        ) {
            let (k, v) = item?;
            let doc = read_u64(&k);
            let sketch = codec::unpack_sketch(&v).map_err(|comment| IndexError::Corruption {
                cf: cf::SKETCHES,
                comment,
            })?;
            if sketch.values.is_empty() {
                continue;
            }
            let (level, values) = posting_values(&sketch, target);
            // Whether a stored list exists is not known here: written as merge operands.
            fresh.add(doc, level, values.len(), values.iter().map(|v| (*v, false)));
        }
        Ok(fresh)
    }

    /// First doc id not in the stored lists.
    pub fn mark(&self) -> u64 {
        self.mark
    }

    /// Fresh entries of value `v`.
    pub fn entries(&self, v: u64) -> &[u8] {
        self.lists
            .get(&v)
            .map(|(_, l)| l.as_slice())
            .unwrap_or_default()
    }

    /// Adds `doc`, whose posting sample has `count` values, under `values` (a subset),
    /// each with whether the stored lists had nothing for it. Such a list is written
    /// whole rather than as a merge operand, so compactions copy it instead of calling
    /// the merge operator — for the great majority of values, which occur in one doc.
    pub fn add(
        &mut self,
        doc: u64,
        level: u8,
        count: usize,
        values: impl Iterator<Item = (u64, bool)>,
    ) {
        let e = entry(doc, level, count.min(u16::MAX as usize) as u16);
        for (v, absent) in values {
            self.lists
                .entry(v)
                .or_insert_with(|| (absent, Vec::new()))
                .1
                .extend_from_slice(&e);
            self.entries += 1;
        }
    }

    /// Approximate memory held, in bytes.
    pub fn memory(&self) -> usize {
        // Entry bytes, plus the map slot and the list's allocation per value.
        self.entries * POSTING_ENTRY + self.lists.len() * 64
    }

    /// Stores the fresh lists and the new mark `next_doc` in one atomic file ingestion.
    pub fn spill(&mut self, index: &Index, next_doc: u64) -> Result<()> {
        if self.lists.is_empty() && self.mark == next_doc {
            return Ok(());
        }
        let db = index.db();
        // Every record the lists cover must be in the log before they are stored: a
        // resumed run must never find postings of docs it is about to create again.
        db.flush_wal(false)?;
        let path = index.path().join("postings-spill.sst");
        let _ = std::fs::remove_file(&path);
        // Uncompressed: the file lands in level 0 and is compacted down (to zstd) later.
        let mut opts = index.postings_options();
        opts.set_bottommost_compression_type(rocksdb::DBCompressionType::None);
        let mut w = SstFileWriter::create(&opts);
        w.open(&path)?;
        let mut lists: Vec<(u64, (bool, Vec<u8>))> =
            std::mem::take(&mut self.lists).into_iter().collect();
        lists.sort_unstable_by_key(|(k, _)| *k);
        for (k, (absent, list)) in &lists {
            if *absent {
                w.put(u64_key(*k), list)?;
            } else {
                w.merge(u64_key(*k), list)?;
            }
        }
        w.put(MARK_KEY, u64_key(next_doc))?;
        w.finish()?;
        let mut io = IngestExternalFileOptions::default();
        io.set_move_files(true);
        db.ingest_external_file_cf_opts(index.cf(cf::POSTINGS), &io, vec![&path])?;
        self.entries = 0;
        self.mark = next_doc;
        Ok(())
    }
}
