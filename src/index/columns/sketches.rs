//! `sketches`: doc id (u64 BE) → the doc's sketch, packed: `[format 4][level u8]
//! [shingles u32 BE][posting level u8][bytes of the compact part u32 BE][compact part]
//! [posting part]`. The compact part holds the values under the posting level, compact
//! ([`crate::sketch::compact`]: 27 bits and the trailing zeros), one group per number of
//! trailing zeros, most first: the group's count (LEB128) and its 27-bit parts as Rice
//! codes ([`crate::index::rice`]), padded to a byte. The posting part holds the posting
//! values as their posting keys ([`crate::sketch::posting_key`], 48 bits): their count
//! (LEB128) and the keys, Rice-coded.
//!
//! A new doc that keeps at least half of an older doc's values is stored against it
//! (`[format 5]`, the same layout, then `[base doc][values of the base at the doc's
//! level][suffixes][bitmap][16-bit suffixes]`): its compact and posting parts hold only
//! the values the base lacks; the bitmap marks which of the base's values (level-major
//! order) it also holds, and each marked posting value gets the 16 bits of its posting
//! key a compact value lacks. The base is always stored whole, so a read needs at most
//! one more. Lossless; edited pages and template families share most values (llvm-docs:
//! 1,009 → 518 bytes a doc; schema/README.md). Every estimate compares the reduced values
//! ([`crate::sketch::reduce`]) of both sketches. Never through a serializer: every
//! candidate check that misses the writer's cache reads one ([`Col::estimates`]).
//!
//! Written by ingest (a new doc). Read by ingest's candidate checks and its rebuild of
//! the fresh postings after a kill, `similar`, the report's move matching and the
//! service. Sketch values are uniform hashes: RocksDB's zstd saved nothing here and cost
//! a recompression at each compaction; the Rice codes take the bits they can (a value
//! ~21 bits where it took 32, a posting key ~42 where a full value took ~55).

use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use super::{corrupt, Col, Column, Tuning};
use crate::compact::{
    at_least, compact_of, compact_sorted, group_of, into_level_major, level_major, CompactSketch,
    Probe,
};
use crate::index::postings::posting_keys;
use crate::index::postings::U64Map;
use crate::index::rice::{self, BitReader, BitWriter};
use crate::index::Result;
use crate::sketch::{
    compact, compact_of_posting_key, expand, posting_key_tz, Estimate, Sketch, MAX_TZ,
    POSTING_KEY_BYTES,
};

/// Bits of a posting key.
const POSTING_KEY_BITS: u32 = 8 * POSTING_KEY_BYTES as u32;

/// Marker of the `sketches` column family.
pub struct Sketches;

/// The packed form's first byte (1: u64 values, schema 4 and before; 2: compact values
/// as u32, schema 5 and 6; 3: posting values in full, schema 7).
const FORMAT: u8 = 4;

/// The first byte of a sketch stored against a base doc (schema 9).
const FORMAT_AGAINST: u8 = 5;

/// Bytes before the values: format, level, shingles u32, posting level, bytes of the
/// compact part u32.
const HEADER: usize = 11;

/// Bits a compact value keeps of its sample value.
const KEPT: u32 = crate::sketch::KEPT_BITS;

/// A doc's sketch as stored: the values under its posting level compact (4 bytes, all
/// an estimate needs), those at it as their posting keys (48 bits: the keys of its
/// posting lists, which must rarely collide across the whole index, and a killed
/// ingest rebuilds its unstored postings from them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredSketch {
    /// Exact number of distinct shingles.
    pub shingles: u32,
    /// The sample's level.
    pub level: u8,
    /// The posting level ([`crate::index::postings::posting_values`]).
    pub posting_level: u8,
    /// Compact values ([`compact`]) with trailing zeros under the posting level, ascending;
    /// with a `base`, only those the base lacks.
    pub low: Vec<u32>,
    /// The posting values as posting keys ([`posting_key`]), ascending.
    pub posting: Vec<u64>,
    /// The older doc whose values the compact part is stored against, if any.
    pub base: Option<Base>,
    /// The template its content is compared without (a [`crate::template`] id; 0: none),
    /// fixed when the doc is committed.
    pub template: u32,
}

/// Where a sketch stored against a base finds the values it does not hold itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// The base doc (stored in full).
    pub doc: u64,
    /// Values of the base at the doc's level (trailing zeros at least its level).
    pub range: u32,
    /// One bit per value of that range in level-major order, lowest bit first: the doc
    /// holds it too.
    pub kept: Vec<u8>,
    /// Of the kept values at the doc's posting level, in that order, the 16 bits of the
    /// posting key a compact value lacks.
    pub suffixes: Vec<u16>,
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
        // Full values sorted may tie on their kept bits: the compact order, distinct
        // (almost always sorted already).
        if !low.is_sorted_by(|a, b| a < b) {
            low.sort_unstable();
            low.dedup();
        }
        StoredSketch {
            shingles: s.shingles,
            level: s.level,
            posting_level,
            low,
            posting: posting_keys(s.values.iter().copied().filter(|v| v & mask == 0)),
            base: None,
            template: 0,
        }
    }

    /// This sketch (stored in full, `own` its compact form) stored against `base` (an
    /// older doc stored in full): the values the base also holds become bits (and a
    /// posting value the 16 bits of its key that a compact value lacks). `None` when it
    /// shares under half of the base's values at its level: a kept value saves 16 bits or
    /// more and the bitmap costs one per value of the base, but a doc stored against a
    /// base is no base itself, so a weak base costs the docs after it a good one
    /// (llvm-docs: 1,404 bytes per doc with half, 1,430 with a quarter).
    pub fn against(
        &self,
        own: &CompactSketch,
        base: (u64, &CompactSketch),
    ) -> Option<StoredSketch> {
        let range = at_least(base.1.values(), self.level as u32);
        let hi = at_least(range, self.posting_level as u32).len();
        let mut kept = vec![0u8; range.len().div_ceil(8)];
        // Posting values by compact value in level-major order; a compact value two of
        // them share stays explicit (the base could stand for one of them only).
        let mut keys: Vec<(u32, u64)> = self
            .posting
            .iter()
            .map(|k| (level_major(compact_of_posting_key(*k)), *k))
            .collect();
        keys.sort_unstable();
        let (mut posting, mut suffixes) = (Vec::new(), Vec::new());
        let mut i = 0;
        for (n, (lm, k)) in keys.iter().enumerate() {
            let twin =
                (n > 0 && keys[n - 1].0 == *lm) || keys.get(n + 1).is_some_and(|x| x.0 == *lm);
            while i < hi && range[i] < *lm {
                i += 1;
            }
            if !twin && i < hi && range[i] == *lm {
                kept[i / 8] |= 1 << (i % 8);
                suffixes.push(((k >> 5) & 0xffff) as u16);
                i += 1;
            } else {
                posting.push(*k);
            }
        }
        posting.sort_unstable();
        // Compact values under the posting level.
        let mine = compact_range(own.values(), self.level, self.posting_level);
        let (mut i, mut j, mut low) = (hi, 0, Vec::new());
        while j < mine.len() {
            if i < range.len() && range[i] < mine[j] {
                i += 1;
            } else if i < range.len() && range[i] == mine[j] {
                kept[i / 8] |= 1 << (i % 8);
                (i, j) = (i + 1, j + 1);
            } else {
                low.push(compact_of(mine[j]));
                j += 1;
            }
        }
        low.sort_unstable();
        let shared = kept.iter().map(|b| b.count_ones() as usize).sum::<usize>();
        (2 * shared >= range.len()).then_some(StoredSketch {
            shingles: self.shingles,
            level: self.level,
            posting_level: self.posting_level,
            low,
            posting,
            base: Some(Base {
                doc: base.0,
                range: range.len() as u32,
                kept,
                suffixes,
            }),
            template: self.template,
        })
    }

    /// The form candidate checks compare, made in one pass (no sort).
    pub fn compact(&self) -> CompactSketch {
        let mut low = Vec::with_capacity(self.low.len());
        into_level_major(&self.low, &mut low);
        let mut c = CompactSketch::from_parts(self.level, self.posting.iter().copied(), low);
        c.template = self.template;
        c
    }

    /// The sketch every estimate uses: all values reduced ([`Sketch::reduced`]).
    pub fn sketch(&self) -> Sketch {
        let mut c = Vec::with_capacity(self.low.len() + self.posting.len());
        let mut high = Vec::new();
        compact_sorted(
            self.posting.iter().map(|k| compact_of_posting_key(*k)),
            &mut high,
        );
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
        let mut out = Vec::with_capacity(HEADER + 3 * s.low.len() + 7 * s.posting.len() + 8);
        out.push(if s.base.is_some() {
            FORMAT_AGAINST
        } else {
            FORMAT
        });
        out.push(s.level);
        out.extend_from_slice(&s.shingles.to_be_bytes());
        out.push(s.posting_level);
        out.extend_from_slice(&[0; 4]);
        // One group per number of trailing zeros, most first (level-major order).
        let mut lm = Vec::with_capacity(s.low.len());
        into_level_major(&s.low, &mut lm);
        let mut rest = &lm[..];
        for tz in (s.level..s.posting_level.max(s.level)).rev() {
            let g = MAX_TZ - tz as u32;
            let count = rest.partition_point(|v| group_of(*v) == g);
            let (group, tail) = rest.split_at(count);
            rest = tail;
            leb128(&mut out, count as u64);
            let mut w = BitWriter::new(&mut out);
            w.ascending(
                group.iter().map(|v| (v & ((1 << KEPT) - 1)) as u64),
                rice::parameter(count, KEPT),
            );
            w.finish();
        }
        let low_bytes = (out.len() - HEADER) as u32;
        out[7..HEADER].copy_from_slice(&low_bytes.to_be_bytes());
        leb128(&mut out, s.posting.len() as u64);
        let mut w = BitWriter::new(&mut out);
        w.ascending(
            s.posting.iter().copied(),
            rice::parameter(s.posting.len(), POSTING_KEY_BITS),
        );
        w.finish();
        leb128(&mut out, s.template as u64);
        if let Some(b) = &s.base {
            leb128(&mut out, b.doc);
            leb128(&mut out, b.range as u64);
            leb128(&mut out, b.suffixes.len() as u64);
            out.extend_from_slice(&b.kept);
            out.extend(b.suffixes.iter().flat_map(|x| x.to_be_bytes()));
        }
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<StoredSketch, String> {
        Ok(stored_of(parse(b)?))
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
        o.set_bottommost_compression_type(DBCompressionType::None);
    }
}

/// A packed sketch, decoded and its shape checked.
#[derive(Clone)]
struct Packed {
    shingles: u32,
    level: u8,
    posting_level: u8,
    /// The values under the posting level, in [`level_major`] order.
    low: Vec<u32>,
    /// The posting keys, ascending.
    posting: Vec<u64>,
    /// With a base: `low` holds only the values it lacks.
    base: Option<Base>,
    /// Its template id.
    template: u32,
}

/// `v` as LEB128: seven bits a byte, low first.
fn leb128(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A LEB128 number at the start of `b`, and its length.
fn read_leb128(b: &[u8]) -> std::result::Result<(u64, usize), String> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err("a count that does not end".into())
}

fn parse(b: &[u8]) -> std::result::Result<Packed, String> {
    let bad = |why: &str| format!("not a packed sketch ({} bytes): {why}", b.len());
    if b.len() < HEADER || (b[0] != FORMAT && b[0] != FORMAT_AGAINST) {
        return Err(bad("format"));
    }
    let (level, posting_level) = (b[1], b[6]);
    if posting_level as u32 > MAX_TZ || level > posting_level {
        return Err(bad("levels"));
    }
    let low_bytes = u32::from_be_bytes([b[7], b[8], b[9], b[10]]) as usize;
    let low_end = HEADER
        .checked_add(low_bytes)
        .filter(|e| *e <= b.len())
        .ok_or_else(|| bad("length of the compact part"))?;
    let mut low = Vec::new();
    let mut at = HEADER;
    for tz in (level..posting_level).rev() {
        let (count, n) = read_leb128(&b[at..low_end]).map_err(|e| bad(&e))?;
        at += n;
        // Each value takes a bit at least: a count past the bytes left is damage.
        if count > 8 * (low_end - at) as u64 {
            return Err(bad("a group larger than its bytes"));
        }
        let k = rice::parameter(count as usize, KEPT);
        let mut r = BitReader::new(&b[at..low_end]);
        let group = ((MAX_TZ - tz as u32) << KEPT) as u64;
        r.ascending(count as usize, k, (1 << KEPT) - 1, |v| {
            low.push((group | v) as u32)
        })
        .map_err(|e| bad(&e))?;
        at += r.byte_align();
    }
    if at != low_end {
        return Err(bad("bytes after the compact part"));
    }
    let (count, n) = read_leb128(&b[at..]).map_err(|e| bad(&e))?;
    at += n;
    if count > 8 * (b.len() - at) as u64 {
        return Err(bad("more posting values than bytes"));
    }
    let mut posting = Vec::with_capacity(count as usize);
    let mut r = BitReader::new(&b[at..]);
    r.ascending(
        count as usize,
        rice::parameter(count as usize, POSTING_KEY_BITS),
        (1 << POSTING_KEY_BITS) - 1,
        |k| posting.push(k),
    )
    .map_err(|e| bad(&e))?;
    // Every posting key is in the posting level's sample.
    if posting
        .iter()
        .any(|k| posting_key_tz(*k) < posting_level as u32)
    {
        return Err(bad("a posting value under the posting level"));
    }
    at += r.byte_align();
    let (template, n) = read_leb128(&b[at..]).map_err(|e| bad(&e))?;
    at += n;
    let template = u32::try_from(template).map_err(|_| bad("the template id"))?;
    let base = if b[0] == FORMAT_AGAINST {
        let mut number = || -> std::result::Result<u64, String> {
            let (v, n) = read_leb128(&b[at..]).map_err(|e| bad(&e))?;
            at += n;
            Ok(v)
        };
        let (doc, range, n) = (number()?, number()?, number()?);
        let range = u32::try_from(range).map_err(|_| bad("the base's range"))?;
        let bitmap = (range as usize).div_ceil(8);
        if n > range as u64 || at + bitmap + 2 * n as usize != b.len() {
            return Err(bad("a bitmap or suffixes of another length than they say"));
        }
        let kept = b[at..at + bitmap].to_vec();
        let suffixes = b[at + bitmap..]
            .chunks_exact(2)
            .map(|x| u16::from_be_bytes([x[0], x[1]]))
            .collect();
        at = b.len();
        Some(Base {
            doc,
            range,
            kept,
            suffixes,
        })
    } else {
        None
    };
    if at != b.len() {
        return Err(bad("bytes after the posting values"));
    }
    Ok(Packed {
        level,
        shingles: u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
        posting_level,
        low,
        posting,
        base,
        template,
    })
}

/// A packed sketch as [`StoredSketch`]: its compact part back in compact order (by the
/// kept bits, then trailing zeros).
fn stored_of(p: Packed) -> StoredSketch {
    let mut low: Vec<u32> = p.low.iter().map(|lm| compact_of(*lm)).collect();
    low.sort_unstable();
    StoredSketch {
        shingles: p.shingles,
        level: p.level,
        posting_level: p.posting_level,
        low,
        posting: p.posting,
        base: p.base,
        template: p.template,
    }
}

/// Of level-major `values`, those with trailing zeros in `level..posting_level` (a
/// sketch's compact part).
fn compact_range(values: &[u32], level: u8, posting_level: u8) -> &[u32] {
    let start = at_least(values, posting_level as u32).len();
    let end = at_least(values, level as u32).len().max(start);
    &values[start..end]
}

impl Packed {
    /// The whole of a sketch stored against `base` (the base doc's compact sketch): the
    /// values the bitmap marks, merged with its own.
    fn resolved(mut self, base: &CompactSketch) -> std::result::Result<Packed, String> {
        let Some(b) = self.base.take() else {
            return Ok(self);
        };
        let range = at_least(base.values(), self.level as u32);
        if range.len() != b.range as usize {
            return Err(format!(
                "stored against doc {} with {} values at its level, which holds {}",
                b.doc,
                b.range,
                range.len()
            ));
        }
        let hi = at_least(range, self.posting_level as u32).len();
        let kept = |i: &usize| b.kept[i / 8] & (1 << (i % 8)) != 0;
        let mut suffixes = b.suffixes.iter();
        for i in (0..hi).filter(kept) {
            let sfx = suffixes
                .next()
                .ok_or("fewer posting key suffixes than kept posting values")?;
            let c = compact_of(range[i]);
            self.posting
                .push((((c >> 5) as u64) << 21) | ((*sfx as u64) << 5) | (c & 31) as u64);
        }
        if suffixes.next().is_some() {
            return Err("more posting key suffixes than kept posting values".into());
        }
        self.posting.sort_unstable();
        if self.posting.windows(2).any(|w| w[0] == w[1]) {
            return Err(format!(
                "a posting value both kept from doc {} and its own",
                b.doc
            ));
        }
        let mut low = Vec::with_capacity(self.low.len() + range.len() - hi);
        let mut own = self.low.iter().copied().peekable();
        for i in (hi..range.len()).filter(kept) {
            let v = range[i];
            while let Some(o) = own.next_if(|o| *o < v) {
                low.push(o);
            }
            if own.peek() == Some(&v) {
                return Err(format!("a value both kept from doc {} and its own", b.doc));
            }
            low.push(v);
        }
        low.extend(own);
        self.low = low;
        Ok(self)
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

/// The compact form of a packed sketch, its template id with it.
fn compact_of_packed(p: Packed) -> CompactSketch {
    let mut c = CompactSketch::from_parts(p.level, p.posting.iter().copied(), p.low);
    c.template = p.template;
    c
}

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

/// Estimates in doc order, and the base a new doc would be stored against: its doc, and
/// its compact sketch unless the cache keeps it ([`SketchCache::get`]).
type EstimatesAndBase = (Vec<(u64, Estimate)>, Option<(u64, Option<CompactSketch>)>);

impl Col<'_, Sketches> {
    /// Estimates of `sketch` ([`CompactSketch::of`] the doc's) against the stored sketch of each of `docs` (ascending),
    /// the ones not in `cache` read in one batch: `(doc, estimate)` in doc order, with
    /// the doc as `a` (so `containment_a_in_b` is the doc's containment in `sketch`).
    /// Docs without a stored sketch are left out, and with a `cut` = (floor, sigmas),
    /// docs whose coarse comparison shows they cannot reach the floor (ingest's edges;
    /// see [`Probe::estimate`]). Equal to [`crate::sketch::estimate`] of the decoded
    /// sketches and the doc's sketch reduced, whatever the cache holds.
    pub fn estimates(
        &self,
        docs: &[u64],
        sketch: &CompactSketch,
        cache: Option<&mut SketchCache>,
        cut: Option<(f64, f64)>,
    ) -> Result<Vec<(u64, Estimate)>> {
        Ok(self.estimates_and_base(docs, sketch, cache, cut)?.0)
    }

    /// [`Col::estimates`], and the doc stored in full that shares the most values with
    /// `sketch` at their common level (ties: the lowest id), with its compact sketch: the
    /// base a new doc is stored against ([`StoredSketch::against`]).
    pub fn estimates_and_base(
        &self,
        docs: &[u64],
        sketch: &CompactSketch,
        mut cache: Option<&mut SketchCache>,
        cut: Option<(f64, f64)>,
    ) -> Result<EstimatesAndBase> {
        let probe = Probe { own: sketch };
        let mut out = Vec::with_capacity(docs.len());
        let mut best: Option<(u32, u64)> = None;
        let mut consider = |d: u64, c: &CompactSketch, e: &Estimate| {
            let better = best.is_none_or(|(n, b)| e.common > n || (e.common == n && d < b));
            if !c.against && 2.0 * e.containment_a_in_b >= 1.0 && better {
                best = Some((e.common, d));
            }
        };
        let mut misses = Vec::new();
        if let Some(cache) = cache.as_deref_mut() {
            // A touched sketch stays kept through the loop (a new generation drops only
            // the old one, which no touched sketch is left in).
            let (kept, missed): (Vec<u64>, Vec<u64>) = docs.iter().partition(|d| cache.touch(**d));
            misses = missed;
            cache.misses += misses.len() as u64;
            // Each kept sketch is a cache miss away: the next ones are asked for ahead.
            let kept: Vec<(u64, &CompactSketch)> = kept
                .iter()
                .filter_map(|d| Some((*d, cache.get(*d)?)))
                .collect();
            const AHEAD: usize = 2;
            for (i, (d, c)) in kept.iter().enumerate() {
                if let Some((_, next)) = kept.get(i + AHEAD) {
                    crate::index::postings::prefetch(next.values().as_ptr());
                }
                if let Some(e) = probe.estimate(c, cut) {
                    consider(*d, c, &e);
                    out.push((*d, e));
                }
            }
        } else {
            misses.extend_from_slice(docs);
        }
        let mut read = self.read_compact(&misses, cache.as_deref())?;
        for (d, c) in &read {
            if let Some(e) = probe.estimate(c, cut) {
                consider(*d, c, &e);
                out.push((*d, e));
            }
        }
        // The base: a copy unless the cache keeps it and nothing read is given to the
        // cache now (which could push it out): the same base whatever the cache holds.
        let base = best.map(|(_, b)| match read.iter().position(|(d, _)| *d == b) {
            Some(i) if cache.is_none() => (b, Some(read.swap_remove(i).1)),
            Some(i) => (b, Some(read[i].1.clone())),
            None if read.is_empty() => (b, None),
            None => (b, cache.as_deref().and_then(|c| c.get(b)).cloned()),
        });
        if let Some(cache) = cache {
            for (d, c) in read {
                cache.insert(d, c);
            }
        }
        // In doc order, whatever was cached: the writer's batches must not depend on it.
        out.sort_unstable_by_key(|(d, _)| *d);
        Ok((out, base))
    }

    /// The compact sketches of `docs` (ascending; those without a sketch left out), read
    /// in one batch, and the bases of those stored against one in a second (unless
    /// `cache` holds them).
    pub fn read_compact(
        &self,
        docs: &[u64],
        cache: Option<&SketchCache>,
    ) -> Result<Vec<(u64, CompactSketch)>> {
        let mut parsed = Vec::with_capacity(docs.len());
        for (d, p) in docs.iter().zip(self.read_packed(docs)?) {
            if let Some(p) = p {
                parsed.push((*d, p));
            }
        }
        let mut bases: U64Map<CompactSketch> = Default::default();
        let mut wanted: Vec<u64> = Vec::new();
        for (_, p) in &parsed {
            if let Some(b) = &p.base {
                match cache.and_then(|c| c.get(b.doc)) {
                    Some(c) if !c.against => {
                        bases.insert(b.doc, c.clone());
                    }
                    _ => wanted.push(b.doc),
                }
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        for (b, p) in wanted.iter().zip(self.read_packed(&wanted)?) {
            // A base is stored in full; a missing one is left out (its dependant's
            // read below names it).
            if let Some(p) = p {
                if p.base.is_some() {
                    return Err(corrupt::<Sketches>(
                        &b.to_be_bytes(),
                        "a base stored against another doc",
                    ));
                }
                bases.insert(*b, compact_of_packed(p));
            }
        }
        let mut out = Vec::with_capacity(parsed.len());
        for (d, p) in parsed {
            let against = p.base.is_some();
            let p = match p.base.as_ref().map(|b| b.doc) {
                None => p,
                Some(b) => {
                    let base = bases.get(&b).ok_or_else(|| {
                        corrupt::<Sketches>(
                            &d.to_be_bytes(),
                            format!("stored against doc {b}, which has no sketch"),
                        )
                    })?;
                    p.resolved(base)
                        .map_err(|e| corrupt::<Sketches>(&d.to_be_bytes(), e))?
                }
            };
            let mut c = compact_of_packed(p);
            c.against = against;
            out.push((d, c));
        }
        Ok(out)
    }

    /// The packed sketches of `docs`, read in one batch, each shape checked.
    fn read_packed(&self, docs: &[u64]) -> Result<Vec<Option<Packed>>> {
        let keys: Vec<[u8; 8]> = docs.iter().map(|d| d.to_be_bytes()).collect();
        let db = self.index.db();
        keys.iter()
            .zip(db.batched_multi_get_cf(self.handle(), keys.iter(), true))
            .map(|(k, res)| match res? {
                None => Ok(None),
                Some(packed) => parse(&packed)
                    .map(Some)
                    .map_err(|e| corrupt::<Sketches>(k, e)),
            })
            .collect()
    }

    /// The sketch of `doc` whole (the values it shares with its base read from the base
    /// when it is stored against one).
    pub fn whole(&self, doc: u64) -> Result<Option<StoredSketch>> {
        match self.read_packed(&[doc])?.pop().flatten() {
            None => Ok(None),
            Some(p) => Ok(Some(stored_of(self.resolve(doc, p)?))),
        }
    }

    /// `p` (the packed sketch of `doc`) whole: resolved against its base, read now.
    fn resolve(&self, doc: u64, p: Packed) -> Result<Packed> {
        let Some(b) = p.base.as_ref().map(|b| b.doc) else {
            return Ok(p);
        };
        let base = self.read_packed(&[b])?.pop().flatten().ok_or_else(|| {
            corrupt::<Sketches>(
                &doc.to_be_bytes(),
                format!("stored against doc {b}, which has no sketch"),
            )
        })?;
        if base.base.is_some() {
            return Err(corrupt::<Sketches>(
                &b.to_be_bytes(),
                "a base stored against another doc",
            ));
        }
        p.resolved(&compact_of_packed(base))
            .map_err(|e| corrupt::<Sketches>(&doc.to_be_bytes(), e))
    }

    /// Every stored sketch from doc `first` on, in doc order, whole ([`Col::whole`]).
    pub fn from_doc(
        &self,
        first: u64,
        mut each: impl FnMut(u64, StoredSketch) -> Result<()>,
    ) -> Result<()> {
        self.scan_raw(&first.to_be_bytes(), None, false, |k, v| {
            let doc = Sketches::decode_key(k).map_err(|e| corrupt::<Sketches>(k, e))?;
            let p = parse(v).map_err(|e| corrupt::<Sketches>(k, e))?;
            each(doc, stored_of(self.resolve(doc, p)?))?;
            Ok(true)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::postings::posting_values;
    use crate::sketch::{estimate, SketchParams};

    fn sketch_of(words: impl Iterator<Item = String>) -> Sketch {
        let words: Vec<String> = words.collect();
        Sketch::of_tokens(
            words.iter().map(|s| s.as_str()),
            &SketchParams::default(),
            &mut Vec::new(),
        )
    }

    /// Docs of `n` words, of which the first `shared` come from a common pool.
    fn pair(n: usize, shared: usize, seed: usize) -> (Sketch, Sketch) {
        let a = sketch_of((0..n).map(|i| {
            if i < shared {
                format!("s{i}")
            } else {
                format!("a{seed}x{i}")
            }
        }));
        let b = sketch_of((0..n).map(|i| {
            if i < shared {
                format!("s{i}")
            } else {
                format!("b{seed}x{i}")
            }
        }));
        (a, b)
    }

    #[test]
    fn a_sketch_read_back_is_the_sketch_the_writer_kept() {
        for n in [5, 300, 1500, 4000, 30_000] {
            let s = sketch_of((0..n).map(|i| format!("w{i}")));
            let (plevel, _) = posting_values(&s, 64);
            let packed = Sketches::value(&StoredSketch::new(&s, plevel));
            let read = compact_of_packed(parse(&packed).unwrap());
            assert_eq!(
                Sketches::decode_value(&packed).unwrap(),
                StoredSketch::new(&s, plevel)
            );
            let kept = CompactSketch::of(&s);
            assert_eq!(read, kept, "{n} words");
            assert_eq!(StoredSketch::new(&s, plevel).compact(), kept, "{n} words");
            // Each level's sample is the prefix `at` gives, known ends or not.
            let reduced = s.reduced();
            for l in kept.level() as u32..kept.level() as u32 + 8 {
                let mut want: Vec<u32> = reduced
                    .at_level(l as u8)
                    .map(|v| level_major(compact(v)))
                    .collect();
                want.sort_unstable();
                assert_eq!(kept.at(l), &want[..], "{n} words, level {l}");
            }
        }
    }

    #[test]
    fn a_damaged_packed_sketch_is_an_error_never_a_panic() {
        let s = sketch_of((0..3000).map(|i| format!("w{i}")));
        let (plevel, _) = posting_values(&s, 64);
        let packed = Sketches::value(&StoredSketch::new(&s, plevel));
        for cut in 0..packed.len() {
            assert!(
                Sketches::decode_value(&packed[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut seed = 5u64;
        for i in 0..packed.len() * 8 {
            let mut b = packed.clone();
            b[i / 8] ^= 1 << (i % 8);
            // Another sketch or an error; the hot path's decoding too.
            let _ = Sketches::decode_value(&b);
            if let Ok(p) = parse(&b) {
                let _ = compact_of_packed(p);
            }
            seed = crate::sketch::fmix64(seed + i as u64);
            b.truncate(b.len() - (seed % 4) as usize);
            b.extend_from_slice(&seed.to_be_bytes()[..(seed % 3) as usize]);
            let _ = Sketches::decode_value(&b);
        }
    }

    #[test]
    fn a_sketch_stored_against_a_base_reads_back_whole_and_smaller() {
        for seed in 0..40 {
            // Bases of other sizes too, so levels and ranges differ.
            let n = 300 + seed * 211;
            let shared = n * (seed % 10) / 10;
            let (a, b) = pair(n, shared, seed);
            let b_big = sketch_of((0..n + seed * 97).map(|i| {
                if i < shared {
                    format!("s{i}")
                } else {
                    format!("c{seed}x{i}")
                }
            }));
            for base in [&b, &b_big] {
                let (pa, _) = posting_values(&a, 64);
                let whole = StoredSketch::new(&a, pa);
                let (own, base_c) = (whole.compact(), CompactSketch::of(base));
                let Some(against) = whole.against(&own, (7, &base_c)) else {
                    // Under half of the base's values shared: stored in full (never when
                    // a base of the same size shares 80%).
                    assert!(
                        base != &b || shared * 10 < n * 8,
                        "seed {seed}: {shared} of {n} words shared"
                    );
                    continue;
                };
                let packed = Sketches::value(&against);
                assert_eq!(Sketches::decode_value(&packed).unwrap(), against);
                let p = parse(&packed).unwrap();
                assert_eq!(p.base.as_ref().map(|b| b.doc), Some(7));
                let resolved = p.resolved(&base_c).unwrap();
                assert_eq!(stored_of(resolved.clone()), whole, "seed {seed}");
                let read = compact_of_packed(resolved);
                assert_eq!(read, own, "seed {seed}");
                if shared * 10 >= n * 8 && base == &b {
                    let full = Sketches::value(&whole).len();
                    assert!(packed.len() * 2 < full, "{} of {full} bytes", packed.len());
                }
                // Resolved against another doc: an error, or values of no use, never a
                // panic; against a base whose range differs, an error.
                let other = CompactSketch::of(&sketch_of((0..n / 3).map(|i| format!("o{i}"))));
                if at_least(other.values(), whole.level as u32).len()
                    != at_least(base_c.values(), whole.level as u32).len()
                {
                    assert!(parse(&packed).unwrap().resolved(&other).is_err());
                }
                for cut in 0..packed.len() {
                    if let Ok(p) = parse(&packed[..cut]) {
                        let _ = p.resolved(&base_c);
                    }
                }
            }
        }
    }

    #[test]
    fn a_coarse_cut_never_changes_an_estimate_it_lets_through() {
        let (mut cut_off, mut through) = (0, 0);
        for seed in 0..60 {
            let n = 200 + seed * 37;
            let shared = n * (seed % 10) / 10;
            let (a, b) = pair(n, shared, seed);
            let (ca, cb) = (CompactSketch::of(&a), CompactSketch::of(&b));
            let probe = Probe { own: &cb };
            let whole = probe.estimate(&ca, None).unwrap();
            // The compact estimate is the estimate of the reduced sketches.
            assert_eq!(whole, estimate(&a.reduced(), &b.reduced()));
            match probe.estimate(&ca, Some((0.3, 3.0))) {
                Some(e) => {
                    assert_eq!(e, whole);
                    through += 1;
                }
                None => {
                    let top = whole
                        .resemblance
                        .max(whole.containment_a_in_b)
                        .max(whole.containment_b_in_a);
                    assert!(top < 0.3, "seed {seed}: cut a pair at {top}");
                    cut_off += 1;
                }
            }
        }
        assert!(
            cut_off > 10 && through > 10,
            "{cut_off} cut, {through} through"
        );
    }
}
