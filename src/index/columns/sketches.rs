//! `sketches`: doc id (u64 BE) → the doc's sketch, packed ([`crate::packed`]: its
//! layout, the compact part Rice-coded, a sketch stored against a base).
//!
//! Written by ingest (a new doc). Read by ingest's candidate checks and its rebuild of
//! the fresh postings after a kill, `similar`, the report's move matching and the
//! service. Sketch values are uniform hashes: RocksDB's zstd saved nothing here and cost
//! a recompression at each compaction; the Rice codes take the bits they can (a value
//! ~21 bits where it took 32, a posting key ~42 where a full value took ~55).
use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use super::{corrupt, Col, Column, Tuning};
use crate::compact::{CompactSketch, Probe};
use crate::index::postings::U64Map;
use crate::index::sketch_cache::SketchCache;
use crate::index::Result;
use crate::packed::{self, compact_of_packed, parse, stored_of, Packed};
pub use crate::packed::{Base, StoredSketch};
use crate::sketch::Estimate;

/// Marker of the `sketches` column family.
pub struct Sketches;

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
        packed::encode(s)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<StoredSketch, String> {
        packed::decode(b)
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
        // Uniform hashes, Rice-coded: nothing for zstd, and read by point lookups, for
        // which a block larger than RocksDB's 4 KiB only copies more.
        o.set_compression_type(DBCompressionType::None);
        o.set_bottommost_compression_type(DBCompressionType::None);
        t.set_block_size(4 << 10);
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

    /// The stored values of docs `first..end`, in doc order, undecoded (for
    /// [`Col::decode_whole`] on several threads).
    pub fn raw_range(&self, first: u64, end: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        self.scan_raw(
            &first.to_be_bytes(),
            Some(&end.to_be_bytes()),
            false,
            |k, v| {
                let doc = Sketches::decode_key(k).map_err(|e| corrupt::<Sketches>(k, e))?;
                out.push((doc, v.to_vec()));
                Ok(true)
            },
        )?;
        Ok(out)
    }

    /// A stored value of `doc` ([`Col::raw_range`]) whole.
    pub fn decode_whole(&self, doc: u64, value: &[u8]) -> Result<StoredSketch> {
        let p = parse(value).map_err(|e| corrupt::<Sketches>(&doc.to_be_bytes(), e))?;
        Ok(stored_of(self.resolve(doc, p)?))
    }

    /// Every stored sketch from doc `first` on (below `end`), in doc order, whole
    /// ([`Col::whole`]).
    pub fn from_doc(
        &self,
        first: u64,
        end: Option<u64>,
        mut each: impl FnMut(u64, StoredSketch) -> Result<()>,
    ) -> Result<()> {
        let end = end.map(u64::to_be_bytes);
        self.scan_raw(
            &first.to_be_bytes(),
            end.as_ref().map(|e| &e[..]),
            false,
            |k, v| {
                let doc = Sketches::decode_key(k).map_err(|e| corrupt::<Sketches>(k, e))?;
                let p = parse(v).map_err(|e| corrupt::<Sketches>(k, e))?;
                each(doc, stored_of(self.resolve(doc, p)?))?;
                Ok(true)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::{at_least, level_major};
    use crate::index::postings::posting_values;
    use crate::sketch::{compact, Sketch};
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
