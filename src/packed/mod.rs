//! A doc's sketch as the index stores it and shards carry it, packed: `[format 4][level u8]
//! [shingles u32 BE][posting level u8][bytes of the compact part u32 BE][compact part]
//! [posting part]`. The compact part holds the values under the posting level, compact
//! ([`crate::sketch::compact`]: 27 bits and the trailing zeros), one group per number of
//! trailing zeros, most first: the group's count (LEB128) and its 27-bit parts as Rice
//! codes ([`rice`]), padded to a byte. The posting part holds the posting
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
//! Pure bytes: the `sketches` column family (`index::columns::sketches`) stores them
//! under the doc id, and the map stage's shards (`shard/`) carry them.

pub mod rice;

use rice::{BitReader, BitWriter};

use crate::compact::{
    at_least, compact_of, compact_sorted, group_of, into_level_major, level_major, CompactSketch,
};
use crate::sketch::{
    compact, compact_of_posting_key, expand, posting_key_tz, posting_keys, Sketch, MAX_TZ,
    POSTING_KEY_BYTES,
};

/// Bits of a posting key.
const POSTING_KEY_BITS: u32 = 8 * POSTING_KEY_BYTES as u32;

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
        let mut kept = vec![0u8; range.len().div_ceil(8)];
        let (mut posting, mut suffixes, mut low) = (Vec::new(), Vec::new(), Vec::new());
        let shared = self.split_against(own, base.1, |part| match part {
            Part::Kept(i, key) => {
                kept[i / 8] |= 1 << (i % 8);
                if let Some(k) = key {
                    suffixes.push(((k >> 5) & 0xffff) as u16);
                }
            }
            Part::Posting(k) => posting.push(k),
            Part::Low(c) => low.push(c),
        });
        if 2 * shared < range.len() {
            return None;
        }
        posting.sort_unstable();
        low.sort_unstable();
        Some(StoredSketch {
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

    /// Whether [`StoredSketch::against`] `base` stores it against it (shares at least
    /// half of the base's values at its level), without encoding: the pair step decides
    /// each new doc's base from these before any is encoded.
    pub fn stores_against(&self, own: &CompactSketch, base: &CompactSketch) -> bool {
        let range = at_least(base.values(), self.level as u32).len();
        2 * self.split_against(own, base, |_| ()) >= range
    }

    /// The walk both take: each of its values either kept by the base (the index of the
    /// base's value at its level, level-major, and the posting key it stands for) or its
    /// own (a posting key, or a compact value under the posting level); returns how
    /// many the base keeps.
    fn split_against(
        &self,
        own: &CompactSketch,
        base: &CompactSketch,
        mut part: impl FnMut(Part),
    ) -> usize {
        let range = at_least(base.values(), self.level as u32);
        let hi = at_least(range, self.posting_level as u32).len();
        let mut shared = 0;
        // Posting values by compact value in level-major order; a compact value two of
        // them share stays explicit (the base could stand for one of them only).
        let keys = level_major_keys(&self.posting);
        let mut i = 0;
        for (n, (lm, k)) in keys.iter().enumerate() {
            let twin =
                (n > 0 && keys[n - 1].0 == *lm) || keys.get(n + 1).is_some_and(|x| x.0 == *lm);
            while i < hi && range[i] < *lm {
                i += 1;
            }
            if !twin && i < hi && range[i] == *lm {
                part(Part::Kept(i, Some(*k)));
                shared += 1;
                i += 1;
            } else {
                part(Part::Posting(*k));
            }
        }
        // Compact values under the posting level.
        let mine = compact_range(own.values(), self.level, self.posting_level);
        let (mut i, mut j) = (hi, 0);
        while j < mine.len() {
            if i < range.len() && range[i] < mine[j] {
                i += 1;
            } else if i < range.len() && range[i] == mine[j] {
                part(Part::Kept(i, None));
                shared += 1;
                (i, j) = (i + 1, j + 1);
            } else {
                part(Part::Low(compact_of(mine[j])));
                j += 1;
            }
        }
        shared
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

/// The packed bytes of a stored sketch (the layout above).
pub fn encode(s: &StoredSketch) -> Vec<u8> {
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

/// A stored sketch from its packed bytes, its shape checked (one against a base still
/// names it: [`StoredSketch::base`]).
pub fn decode(b: &[u8]) -> std::result::Result<StoredSketch, String> {
    Ok(stored_of(parse(b)?))
}

/// A packed sketch, decoded and its shape checked.
#[derive(Clone)]
pub(crate) struct Packed {
    pub(crate) shingles: u32,
    pub(crate) level: u8,
    pub(crate) posting_level: u8,
    /// The values under the posting level, in [`level_major`] order.
    pub(crate) low: Vec<u32>,
    /// The posting keys, ascending.
    pub(crate) posting: Vec<u64>,
    /// With a base: `low` holds only the values it lacks.
    pub(crate) base: Option<Base>,
    /// Its template id.
    pub(crate) template: u32,
}

/// `v` as LEB128 (seven bits a byte, low first), by the `leb128` crate.
fn leb128(out: &mut Vec<u8>, v: u64) {
    leb128::write::unsigned(out, v).expect("writing to a Vec");
}

/// A LEB128 number at the start of `b`, and its length.
fn read_leb128(b: &[u8]) -> std::result::Result<(u64, usize), String> {
    let mut rest = b;
    match leb128::read::unsigned(&mut rest) {
        Ok(v) => Ok((v, b.len() - rest.len())),
        Err(leb128::read::Error::Overflow) => Err("a count over 64 bits".into()),
        Err(_) => Err("a count that does not end".into()),
    }
}

pub(crate) fn parse(b: &[u8]) -> std::result::Result<Packed, String> {
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
pub(crate) fn stored_of(p: Packed) -> StoredSketch {
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
/// One value of a sketch stored against a base ([`StoredSketch::against`]).
enum Part {
    /// The base holds it: the index of the base's value, and the posting key it stands
    /// for (a posting value).
    Kept(usize, Option<u64>),
    /// A posting key of its own.
    Posting(u64),
    /// A compact value of its own, under the posting level.
    Low(u32),
}

/// Posting keys with their compact values in level-major order, by that value then key.
/// Keys ascending are each trailing-zeros group's in that order already, so a stable
/// distribution by trailing zeros, one pass (as [`into_level_major`]); a sort of them
/// was a third of a base's fit check (rd100k redesign sweep).
fn level_major_keys(posting: &[u64]) -> Vec<(u32, u64)> {
    let keyed = |k: &u64| (level_major(compact_of_posting_key(*k)), *k);
    if !posting.is_sorted() {
        let mut keys: Vec<(u32, u64)> = posting.iter().map(keyed).collect();
        keys.sort_unstable();
        return keys;
    }
    let group = |k: &u64| (MAX_TZ - (*k & 31) as u32) as usize;
    let mut starts = [0usize; 33];
    for k in posting {
        starts[group(k) + 1] += 1;
    }
    for g in 1..33 {
        starts[g] += starts[g - 1];
    }
    let mut out = vec![(0u32, 0u64); posting.len()];
    for k in posting {
        let g = group(k);
        out[starts[g]] = keyed(k);
        starts[g] += 1;
    }
    out
}

fn compact_range(values: &[u32], level: u8, posting_level: u8) -> &[u32] {
    let start = at_least(values, posting_level as u32).len();
    let end = at_least(values, level as u32).len().max(start);
    &values[start..end]
}

impl Packed {
    /// The whole of a sketch stored against `base` (the base doc's compact sketch): the
    /// values the bitmap marks, merged with its own.
    pub(crate) fn resolved(mut self, base: &CompactSketch) -> std::result::Result<Packed, String> {
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
pub(crate) fn compact_of_packed(p: Packed) -> CompactSketch {
    let mut c = CompactSketch::from_parts(p.level, p.posting.iter().copied(), p.low);
    c.template = p.template;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::fmix64;

    #[test]
    fn posting_keys_in_level_major_order_as_a_sort_puts_them() {
        for n in [0u64, 1, 7, 300, 5000] {
            // Sample values at levels 3 and up (trailing zeros), some sharing their kept
            // bits (twins), as posting keys: ascending, distinct.
            let values = (0..n).map(|i| {
                let v = fmix64(i / 2) & !((1 << (3 + i % 5)) - 1);
                if i % 2 == 0 {
                    v
                } else {
                    v | (1 << (3 + i % 5))
                }
            });
            let keys = posting_keys(values);
            let mut sorted: Vec<(u32, u64)> = (keys.iter())
                .map(|k| (level_major(compact_of_posting_key(*k)), *k))
                .collect();
            sorted.sort_unstable();
            assert_eq!(level_major_keys(&keys), sorted, "n {n}");
            // Out of order (not a stored sketch's keys): sorted all the same.
            let mut shuffled = keys.clone();
            shuffled.reverse();
            assert_eq!(level_major_keys(&shuffled), sorted, "n {n}");
        }
    }
}
