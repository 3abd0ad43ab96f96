//! The sketches the ingest compared lately, kept in memory within a budget, so that a
//! sketch asked for again costs no RocksDB read ([`super::columns::sketches`] reads
//! through it).

use crate::compact::CompactSketch;
use crate::index::postings::U64Map;

/// Sketches compared lately, compact, within a memory budget: the docs a new doc is
/// compared with come back (the members of its host's template families, the heads
/// of boilerplate lists), and a hit costs no RocksDB read (a read and its copy out of a
/// memtable or block were half of a candidate check). Two generations: a hit moves a
/// sketch to the young one; when the young one holds half the budget, the old one is
/// dropped. Writer-side, one thread.
#[derive(Default)]
pub struct SketchCache {
    /// Sketches asked for and not kept (read from RocksDB), so far.
    pub misses: u64,
    young: U64Map<CompactSketch>,
    old: U64Map<CompactSketch>,
    young_bytes: usize,
    budget: usize,
}

impl SketchCache {
    /// An empty cache of at most about `budget` bytes (0: none).
    pub fn new(budget: usize) -> SketchCache {
        SketchCache {
            budget,
            ..Default::default()
        }
    }

    /// Marks `doc` as used now (into the young generation); whether it is kept.
    pub fn touch(&mut self, doc: u64) -> bool {
        if self.young.contains_key(&doc) {
            return true;
        }
        match self.old.remove(&doc) {
            Some(c) => {
                self.insert(doc, c);
                true
            }
            None => false,
        }
    }

    /// The kept sketch of `doc`, if it is kept.
    pub fn get(&self, doc: u64) -> Option<&CompactSketch> {
        self.young.get(&doc).or_else(|| self.old.get(&doc))
    }

    /// A copy of the kept sketch of `doc`, if it is kept.
    pub fn kept(&self, doc: u64) -> Option<CompactSketch> {
        self.get(doc).cloned()
    }

    /// Keeps `c` as the sketch of `doc`.
    pub fn insert(&mut self, doc: u64, c: CompactSketch) {
        if self.budget == 0 {
            return;
        }
        self.young_bytes += c.bytes();
        self.young.insert(doc, c);
        if self.young_bytes > self.budget / 2 {
            self.old = std::mem::take(&mut self.young);
            self.young_bytes = 0;
        }
    }
}
