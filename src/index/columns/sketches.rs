//! `sketches`: doc id (u64 BE) → the doc's sketch, packed: `[format 2][level u8]
//! [shingles u32 BE][posting level u8][n u32 BE][n compact values u32 BE…][posting
//! values u64 BE…]`, each part ascending. The values under the posting level are kept
//! compact ([`crate::sketch::compact`]: 27 bits and the trailing zeros, 4 bytes instead
//! of 8); the posting values in full (see [`StoredSketch`]). Every estimate compares the
//! reduced values ([`crate::sketch::reduce`]) of both sketches. Never through a
//! serializer: every candidate check reads one, and compares it packed
//! ([`Col::estimates`]).
//!
//! Written by ingest (a new doc). Read by ingest's candidate checks and its rebuild of
//! the fresh postings after a kill, `similar`, the report's move matching and the
//! service. Sketch values are uniform hashes: RocksDB's zstd saved nothing here and cost
//! a recompression at each compaction.

use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use super::{corrupt, Col, Column, Tuning};
use crate::index::postings::U64Map;
use crate::index::Result;
use crate::sketch::{common_sorted, compact, expand, Estimate, Sketch, MAX_TZ};

/// Marker of the `sketches` column family.
pub struct Sketches;

/// The packed form's first byte (1: u64 values, schema 4 and before).
const FORMAT: u8 = 2;

/// Bytes before the values: format, level, shingles u32, posting level, count of
/// compact values u32.
const HEADER: usize = 11;

/// A doc's sketch as stored: the values under its posting level compact (4 bytes, all
/// an estimate needs), those at it in full (8 bytes: they are the keys of its posting
/// lists, which must not collide across the whole index, and a killed ingest rebuilds
/// its unstored postings from them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredSketch {
    /// Exact number of distinct shingles.
    pub shingles: u32,
    /// The sample's level.
    pub level: u8,
    /// The posting level ([`crate::index::postings::posting_values`]).
    pub posting_level: u8,
    /// Compact values ([`compact`]) with trailing zeros under the posting level, ascending.
    pub low: Vec<u32>,
    /// The posting values, in full, ascending.
    pub posting: Vec<u64>,
}

impl StoredSketch {
    /// The stored form of a doc's (full) sketch with its posting level.
    pub fn new(s: &Sketch, posting_level: u8) -> StoredSketch {
        let mask = if posting_level >= 64 {
            u64::MAX
        } else {
            (1u64 << posting_level) - 1
        };
        let mut low: Vec<u32> = s
            .values
            .iter()
            .filter(|v| *v & mask != 0)
            .map(|v| compact(*v))
            .collect();
        // Full values sorted may tie on their kept bits: the compact order, distinct.
        low.sort_unstable();
        low.dedup();
        StoredSketch {
            shingles: s.shingles,
            level: s.level,
            posting_level,
            low,
            posting: s.values.iter().copied().filter(|v| v & mask == 0).collect(),
        }
    }

    /// The sketch every estimate uses: all values reduced ([`Sketch::reduced`]).
    pub fn sketch(&self) -> Sketch {
        let mut c = Vec::with_capacity(self.low.len() + self.posting.len());
        let mut high = Vec::new();
        compact_sorted(self.posting.iter().copied(), &mut high);
        merge_compact(&self.low, &high, &mut c);
        Sketch {
            shingles: self.shingles,
            level: self.level,
            values: c.into_iter().map(expand).collect(),
        }
    }
}

impl Column for Sketches {
    const NAME: &'static str = "sketches";
    type Key = u64;
    type Value = StoredSketch;

    fn key(k: &u64) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(s: &StoredSketch) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + 4 * s.low.len() + 8 * s.posting.len());
        out.push(FORMAT);
        out.push(s.level);
        out.extend_from_slice(&s.shingles.to_be_bytes());
        out.push(s.posting_level);
        out.extend_from_slice(&(s.low.len() as u32).to_be_bytes());
        for c in &s.low {
            out.extend_from_slice(&c.to_be_bytes());
        }
        for v in &s.posting {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<StoredSketch, String> {
        let p = parse(b)?;
        Ok(StoredSketch {
            shingles: p.shingles,
            level: p.level,
            posting_level: p.posting_level,
            low: p.low().collect(),
            posting: p.posting().collect(),
        })
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
        o.set_bottommost_compression_type(DBCompressionType::None);
    }
}

/// A packed sketch, its shape checked, read in place.
struct Packed<'a> {
    shingles: u32,
    level: u8,
    posting_level: u8,
    low: &'a [u8],
    posting: &'a [u8],
}

impl Packed<'_> {
    fn low(&self) -> impl Iterator<Item = u32> + '_ {
        self.low
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")))
    }

    fn posting(&self) -> impl Iterator<Item = u64> + '_ {
        self.posting
            .chunks_exact(8)
            .map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes")))
    }
}

fn parse(b: &[u8]) -> std::result::Result<Packed<'_>, String> {
    let bad = || format!("not a packed sketch ({} bytes)", b.len());
    if b.len() < HEADER || b[0] != FORMAT {
        return Err(bad());
    }
    let n_low = u32::from_be_bytes([b[7], b[8], b[9], b[10]]) as usize;
    let low_end = n_low
        .checked_mul(4)
        .and_then(|n| n.checked_add(HEADER))
        .filter(|e| *e <= b.len())
        .ok_or_else(bad)?;
    if !(b.len() - low_end).is_multiple_of(8) {
        return Err(bad());
    }
    Ok(Packed {
        level: b[1],
        shingles: u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
        posting_level: b[6],
        low: &b[HEADER..low_end],
        posting: &b[low_end..],
    })
}

/// The compact values of full values, ascending and distinct, into `out` (cleared):
/// values in full order may tie on the bits a compact value keeps.
fn compact_sorted(values: impl Iterator<Item = u64>, out: &mut Vec<u32>) {
    out.clear();
    out.extend(values.map(compact));
    if !out.is_sorted_by(|a, b| a < b) {
        out.sort_unstable();
        out.dedup();
    }
}

/// Merges ascending compact values `a` and `b` (disjoint: they differ in trailing zeros)
/// into `out`.
fn merge_compact(a: &[u32], b: &[u32], out: &mut Vec<u32>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] < b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// A sketch's values as a candidate check compares them: compact ([`compact`]),
/// ascending, with the sample's level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactSketch {
    level: u8,
    values: Box<[u32]>,
}

impl CompactSketch {
    /// The compact form of a sketch (full or reduced values).
    pub fn of(s: &Sketch) -> CompactSketch {
        let mut v: Vec<u32> = s.values.iter().map(|v| compact(*v)).collect();
        v.sort_unstable();
        v.dedup();
        CompactSketch {
            level: s.level,
            values: v.into_boxed_slice(),
        }
    }

    fn from_packed(p: &Packed) -> CompactSketch {
        let low: Vec<u32> = p.low().collect();
        let mut high = Vec::new();
        compact_sorted(p.posting(), &mut high);
        let mut all = Vec::with_capacity(low.len() + high.len());
        merge_compact(&low, &high, &mut all);
        CompactSketch {
            level: p.level,
            values: all.into_boxed_slice(),
        }
    }

    /// Memory held, in bytes (with a map entry's share).
    fn bytes(&self) -> usize {
        4 * self.values.len() + 64
    }
}

/// The sketch candidates are compared with, compact, at each level it meets (made once
/// per new doc or query).
struct Probe {
    own: u8,
    /// Index ℓ − own: the values ≡ 0 mod 2^ℓ.
    at: Vec<Vec<u32>>,
    scratch: Vec<u32>,
}

impl Probe {
    fn new(s: &Sketch) -> Probe {
        let c = CompactSketch::of(s);
        Probe {
            own: c.level,
            at: vec![c.values.into_vec()],
            scratch: Vec::new(),
        }
    }

    fn at(&mut self, level: u8) -> &[u32] {
        let k = level.saturating_sub(self.own) as usize;
        while self.at.len() <= k {
            let l = ((self.own as usize + self.at.len()) as u32).min(MAX_TZ);
            let next: Vec<u32> = self.at[0]
                .iter()
                .copied()
                .filter(|c| (c & 31) >= l)
                .collect();
            self.at.push(next);
        }
        &self.at[k]
    }

    /// The estimate with the candidate as `a`, at the larger of the two levels.
    fn estimate(&mut self, c: &CompactSketch) -> Estimate {
        let level = c.level.max(self.own);
        let min_tz = (level as u32).min(MAX_TZ);
        let mut theirs = std::mem::take(&mut self.scratch);
        let slice: &[u32] = if min_tz <= c.level as u32 {
            // Compared at its own level (the usual case): every value counts.
            &c.values
        } else {
            theirs.clear();
            theirs.extend(c.values.iter().copied().filter(|v| (v & 31) >= min_tz));
            &theirs
        };
        let n = slice.len() as u32;
        let mine = self.at(level);
        let e = Estimate::from_counts(common_sorted(slice, mine), n, mine.len() as u32);
        self.scratch = theirs;
        e
    }
}

/// Sketches compared lately, compact, within a memory budget: the docs a new doc is
/// compared with come back (the members of its host's template families, the heads
/// of boilerplate lists), and a hit costs no RocksDB read (a read and its copy out of a
/// memtable or block were half of a candidate check). Two generations: a hit moves a
/// sketch to the young one; when the young one holds half the budget, the old one is
/// dropped. Writer-side, one thread.
#[derive(Default)]
pub struct SketchCache {
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

    fn get(&mut self, doc: u64) -> Option<&CompactSketch> {
        if !self.young.contains_key(&doc) {
            let c = self.old.remove(&doc)?;
            self.insert(doc, c);
        }
        self.young.get(&doc)
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

impl Col<'_, Sketches> {
    /// Estimates of `sketch` against the stored sketch of each of `docs` (ascending),
    /// the ones not in `cache` read in one batch: `(doc, estimate)` in doc order, with
    /// the doc as `a` (so `containment_a_in_b` is the doc's containment in `sketch`).
    /// Docs without a stored sketch are left out. Equal to [`crate::sketch::estimate`]
    /// of the decoded sketches and `sketch` reduced, whatever the cache holds.
    pub fn estimates(
        &self,
        docs: &[u64],
        sketch: &Sketch,
        mut cache: Option<&mut SketchCache>,
    ) -> Result<Vec<(u64, Estimate)>> {
        let mut probe = Probe::new(sketch);
        let mut out = Vec::with_capacity(docs.len());
        let mut misses = Vec::new();
        for d in docs {
            match cache.as_deref_mut().and_then(|c| c.get(*d)) {
                Some(c) => out.push((*d, probe.estimate(c))),
                None => misses.push(*d),
            }
        }
        let keys: Vec<[u8; 8]> = misses.iter().map(|d| d.to_be_bytes()).collect();
        let db = self.index.db();
        for ((d, k), res) in
            misses
                .iter()
                .zip(&keys)
                .zip(db.batched_multi_get_cf(self.handle(), keys.iter(), true))
        {
            let Some(packed) = res? else { continue };
            let p = parse(&packed).map_err(|e| corrupt::<Sketches>(k, e))?;
            let c = CompactSketch::from_packed(&p);
            out.push((*d, probe.estimate(&c)));
            if let Some(cache) = cache.as_deref_mut() {
                cache.insert(*d, c);
            }
        }
        // In doc order, whatever was cached: the writer's batches must not depend on it.
        out.sort_unstable_by_key(|(d, _)| *d);
        Ok(out)
    }

    /// Every stored sketch from doc `first` on, in doc order.
    pub fn from_doc(
        &self,
        first: u64,
        mut each: impl FnMut(u64, StoredSketch) -> Result<()>,
    ) -> Result<()> {
        self.scan_raw(&first.to_be_bytes(), None, false, |k, v| {
            let doc = Sketches::decode_key(k).map_err(|e| corrupt::<Sketches>(k, e))?;
            let s = Sketches::decode_value(v).map_err(|e| corrupt::<Sketches>(k, e))?;
            each(doc, s)?;
            Ok(true)
        })
    }
}
