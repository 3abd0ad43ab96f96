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
        merge_compact(&self.low, &high, 0, &mut c);
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
/// into `out`, keeping those with at least `min_tz` trailing zeros.
fn merge_compact(a: &[u32], b: &[u32], min_tz: u32, out: &mut Vec<u32>) {
    let keep = |c: &u32| (c & 31) >= min_tz;
    let mut a = a.iter().copied().filter(keep).peekable();
    for y in b.iter().copied().filter(keep) {
        while let Some(x) = a.next_if(|x| *x < y) {
            out.push(x);
        }
        out.push(y);
    }
    out.extend(a);
}

/// A sketch's compact values, split as each candidate is compared with them: at a level
/// ℓ, those under a candidate's posting level and those at or above it (values of the
/// two parts never meet: equal values have equal trailing zeros). Made once per sketch.
struct Mine {
    all: Vec<u32>,
    /// ((level, split), (values with tz in [level, split), values with tz ≥ both)).
    parts: Vec<((u32, u32), (Vec<u32>, Vec<u32>))>,
}

impl Mine {
    fn new(s: &Sketch) -> Mine {
        let mut all: Vec<u32> = s.values.iter().map(|v| compact(*v)).collect();
        all.sort_unstable();
        all.dedup();
        Mine {
            all,
            parts: Vec::new(),
        }
    }

    fn parts(&mut self, min_tz: u32, split: u32) -> (&[u32], &[u32]) {
        let key = (min_tz, split.max(min_tz));
        let i = match self.parts.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                let (low, high): (Vec<u32>, Vec<u32>) = self
                    .all
                    .iter()
                    .filter(|c| (*c & 31) >= key.0)
                    .partition(|c| (*c & 31) < key.1);
                self.parts.push((key, (low, high)));
                self.parts.len() - 1
            }
        };
        let (low, high) = &self.parts[i].1;
        (low, high)
    }
}

impl Col<'_, Sketches> {
    /// Estimates of `sketch` against the stored sketch of each of `docs` (ascending),
    /// read in one batch and compared packed: `(doc, estimate)` with the doc as `a` (so
    /// `containment_a_in_b` is the doc's containment in `sketch`). Docs without a stored
    /// sketch are left out. Equal to [`crate::sketch::estimate`] of the decoded
    /// sketches and `sketch` reduced.
    pub fn estimates(&self, docs: &[u64], sketch: &Sketch) -> Result<Vec<(u64, Estimate)>> {
        let keys: Vec<[u8; 8]> = docs.iter().map(|d| d.to_be_bytes()).collect();
        let db = self.index.db();
        let mut out = Vec::with_capacity(docs.len());
        let mut mine = Mine::new(sketch);
        let (mut low, mut high) = (Vec::new(), Vec::new());
        for ((d, k), res) in
            docs.iter()
                .zip(&keys)
                .zip(db.batched_multi_get_cf(self.handle(), keys.iter(), true))
        {
            let Some(packed) = res? else { continue };
            let p = parse(&packed).map_err(|e| corrupt::<Sketches>(k, e))?;
            let min_tz = (p.level.max(sketch.level) as u32).min(MAX_TZ);
            let split = p.posting_level as u32;
            compact_sorted(p.posting(), &mut high);
            high.retain(|c| (c & 31) >= min_tz);
            let (my_low, my_high) = mine.parts(min_tz, split);
            let mut common = common_sorted(&high, my_high);
            let mut theirs = high.len() as u32;
            low.clear();
            if min_tz <= p.level as u32 {
                // Compared at its own level (the usual case): every value counts.
                low.extend(p.low());
            } else if min_tz < split {
                low.extend(p.low().filter(|c| (c & 31) >= min_tz));
            }
            common += common_sorted(&low, my_low);
            theirs += low.len() as u32;
            let mine_n = (my_low.len() + my_high.len()) as u32;
            out.push((*d, Estimate::from_counts(common, theirs, mine_n)));
        }
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
