//! Sketching: shingles of the canonical token stream, the size-classed MOD sample of
//! their permuted fingerprints (Broder et al.'s V(D) with size classes), and the
//! resemblance and containment estimators.
//!
//! The hashing is fixed and part of the on-disk format (see `schema/`):
//! - token hash: `xxh3_64_with_seed(token_utf8, seed)`;
//! - shingle fingerprint of tokens t₀…t_{w−1}: Σ h(tᵢ)·B^{w−1−i} mod 2⁶⁴ with
//!   B = 0x9E3779B97F4A7C15 (a Rabin–Karp polynomial over token hashes, rolled in O(1)
//!   per token);
//! - permutation: `fmix64(fp ^ perm_seed)` (MurmurHash3's finalizer is a bijection on
//!   u64, so this is a seeded permutation of fingerprints), with
//!   `perm_seed = seed.rotate_left(32) ^ 0xD6E8FEB86659FD93`.
//!
//! The sample: with n distinct shingles, level ℓ is the smallest with n / 2^ℓ < 2·T
//! (T = `sample_target`), and the sketch keeps the permuted values ≡ 0 mod 2^ℓ, sorted.
//! A doc with fewer than 2·T shingles keeps them all. Two sketches are compared after
//! reducing both to the larger level; the estimates are then
//! r = |V(A)∩V(B)| / |V(A)∪V(B)| and c(A in B) = |V(A)∩V(B)| / |V(A)|.

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64_with_seed};

/// Name of the sketch scheme, stored with an index so that sketches of another scheme
/// are never compared with these.
pub const SKETCH_SCHEME: &str = "mod2-sizeclass-v1";

pub(crate) const BASE: u64 = 0x9E37_79B9_7F4A_7C15;
pub(crate) const PERM_MIX: u64 = 0xD6E8_FEB8_6659_FD93;

/// The parameters every sketch of an index shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SketchParams {
    /// Tokens per shingle (w; the paper uses 10).
    pub shingle_width: u32,
    /// Seed of the token hash and the permutation.
    pub seed: u64,
    /// T: a sketch keeps between T and 2T values (all shingles for smaller docs).
    pub sample_target: u32,
}

impl Default for SketchParams {
    fn default() -> Self {
        SketchParams {
            shingle_width: 10,
            seed: 0x7469_6465_6d61_726b,
            sample_target: 512,
        }
    }
}

/// MurmurHash3 fmix64: a bijection on u64 with good avalanche.
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The 128-bit fingerprint of a canonical text: equal for lexically equal documents.
pub fn text_fingerprint(canonical_text: &str, seed: u64) -> u128 {
    xxh3_128_with_seed(canonical_text.as_bytes(), seed)
}

/// Permuted fingerprints of every w-shingle of the token stream, sorted and distinct,
/// into `out` (cleared first). A stream of 1 ≤ n < w tokens gives one shingle.
pub fn shingles<'a>(tokens: impl Iterator<Item = &'a str>, p: &SketchParams, out: &mut Vec<u64>) {
    out.clear();
    let w = p.shingle_width.max(1) as usize;
    let perm_seed = p.seed.rotate_left(32) ^ PERM_MIX;
    let top = BASE.wrapping_pow(w as u32 - 1);
    let mut window = [0u64; 64];
    let wmask = 63usize;
    debug_assert!(w <= 64);
    let mut h: u64 = 0;
    let mut n = 0usize;
    for t in tokens {
        let th = xxh3_64_with_seed(t.as_bytes(), p.seed);
        if n >= w {
            h = h.wrapping_sub(window[(n - w) & wmask].wrapping_mul(top));
        }
        h = h.wrapping_mul(BASE).wrapping_add(th);
        window[n & wmask] = th;
        n += 1;
        if n >= w {
            out.push(fmix64(h ^ perm_seed));
        }
    }
    if n > 0 && n < w {
        out.push(fmix64(h ^ perm_seed));
    }
    out.sort_unstable();
    out.dedup();
}

/// A document's sample of permuted shingle fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sketch {
    /// Exact number of distinct shingles of the document.
    pub shingles: u32,
    /// The sample keeps values ≡ 0 mod 2^level.
    pub level: u8,
    /// Kept values, ascending.
    pub values: Vec<u64>,
}

impl Sketch {
    /// Samples sorted distinct permuted shingles.
    pub fn from_shingles(sorted: &[u64], sample_target: u32) -> Sketch {
        let n = sorted.len() as u64;
        let t2 = 2 * sample_target.max(1) as u64;
        let mut level = 0u8;
        while (n >> level) >= t2 && level < 63 {
            level += 1;
        }
        let mask = (1u64 << level) - 1;
        let values = if level == 0 {
            sorted.to_vec()
        } else {
            sorted.iter().copied().filter(|v| v & mask == 0).collect()
        };
        Sketch {
            shingles: n.min(u32::MAX as u64) as u32,
            level,
            values,
        }
    }

    /// Canonical tokens → sketch (convenience over [`shingles`]).
    pub fn of_tokens<'a>(
        tokens: impl Iterator<Item = &'a str>,
        p: &SketchParams,
        scratch: &mut Vec<u64>,
    ) -> Sketch {
        shingles(tokens, p, scratch);
        Sketch::from_shingles(scratch, p.sample_target)
    }

    /// The sketch as an index keeps it: every value [`reduce`]d (ascending, distinct).
    pub fn reduced(&self) -> Sketch {
        let mut values: Vec<u64> = self.values.iter().map(|v| reduce(*v)).collect();
        // Reduction keeps the top bits, so the order changes only among values that
        // share them: nearly sorted already.
        values.sort_unstable();
        values.dedup();
        Sketch {
            shingles: self.shingles,
            level: self.level,
            values,
        }
    }

    /// The values kept at a coarser level.
    pub fn at_level(&self, level: u8) -> impl Iterator<Item = u64> + '_ {
        let mask = if level >= 64 {
            u64::MAX
        } else {
            (1u64 << level) - 1
        };
        self.values.iter().copied().filter(move |v| v & mask == 0)
    }
}

/// Bits of a value an index keeps above its trailing zeros (see [`reduce`]).
pub const KEPT_BITS: u32 = 27;

/// Trailing zeros an index tells apart: more than any level reaches (a level is at
/// most 32 − log₂(2T) for a u32 shingle count).
pub const MAX_TZ: u32 = 31;

const HIGH: u64 = !((1u64 << (64 - KEPT_BITS)) - 1);

/// The value as an index keeps it: its top 27 bits and its lowest set bit (trailing
/// zeros capped at 31). It belongs to the same levels as `v` (≡ 0 mod 2^ℓ for the same
/// ℓ ≤ 31), and two distinct values of one doc collide only when both agree, which for
/// the ≤ 1,024 values of a level costs far less than the estimate's own error (about
/// 4·10⁻⁶ of a common value per pair). It fits a u32 ([`compact`]): half the bytes.
#[inline]
pub fn reduce(v: u64) -> u64 {
    (v & HIGH) | (1u64 << v.trailing_zeros().min(MAX_TZ))
}

/// A reduced value in 32 bits: the top 27 bits, then the trailing zeros. Sorting
/// compact values sorts the reduced values alike.
#[inline]
pub fn compact(v: u64) -> u32 {
    (((v >> (64 - KEPT_BITS)) as u32) << 5) | v.trailing_zeros().min(MAX_TZ)
}

/// The reduced value of a compact one.
#[inline]
pub fn expand(c: u32) -> u64 {
    ((c as u64 >> 5) << (64 - KEPT_BITS)) | (1u64 << (c & 31))
}

/// Bits of a sample value a posting key keeps above its trailing zeros
/// ([`posting_key`]).
pub const POSTING_KEPT_BITS: u32 = 43;

/// Bytes of a posting key.
pub const POSTING_KEY_BYTES: usize = 6;

/// A sample value as postings key it: its top 43 bits, then its trailing zeros (capped
/// at 31), in 48 bits — like [`compact`] with more bits, since posting lists are shared
/// by the whole index: two of its N posting values share a key by chance with
/// probability about N/2⁴³ (a few in ten thousand at a billion pages), which costs one
/// more candidate to compare. Keys are ordered as their big-endian bytes
/// ([`posting_key_bytes`]); a posting value is its key everywhere past the sketch.
#[inline]
pub fn posting_key(v: u64) -> u64 {
    ((v >> (64 - POSTING_KEPT_BITS)) << 5) | v.trailing_zeros().min(MAX_TZ) as u64
}

/// The trailing zeros of the value a posting key keeps: it is in the samples of the
/// levels up to them.
#[inline]
pub fn posting_key_tz(k: u64) -> u32 {
    (k & 31) as u32
}

/// The [`compact`] form of the value a posting key keeps.
#[inline]
pub fn compact_of_posting_key(k: u64) -> u32 {
    (((k >> (5 + POSTING_KEPT_BITS - KEPT_BITS)) << 5) | (k & 31)) as u32
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

/// A posting key as bytes, big-endian.
#[inline]
pub fn posting_key_bytes(k: u64) -> [u8; POSTING_KEY_BYTES] {
    let b = k.to_be_bytes();
    let mut out = [0u8; POSTING_KEY_BYTES];
    out.copy_from_slice(&b[8 - POSTING_KEY_BYTES..]);
    out
}

/// The posting key of its bytes ([`posting_key_bytes`] undone).
#[inline]
pub fn posting_key_of_bytes(b: [u8; POSTING_KEY_BYTES]) -> u64 {
    let mut k = [0u8; 8];
    k[8 - POSTING_KEY_BYTES..].copy_from_slice(&b);
    u64::from_be_bytes(k)
}

/// Values two ascending, distinct samples share: a branch-free merge (every candidate
/// check of an ingest runs it).
pub fn common_sorted(a: &[u32], b: &[u32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { common_avx2(a, b) };
    }
    common_by(a.len(), |i| a[i], b)
}

/// [`common_sorted`] eight values at a time: each block of `a` is compared with all
/// eight rotations of the current block of `b`, and the block with the smaller last
/// value moves on (Lemire, Boytsov and Kurz, "SIMD compression and the intersection of
/// sorted integers", 2016). Every pair of blocks whose ranges overlap meets once, so
/// each common value is counted once; the tails are merged as scalars.
///
/// The loop's only dependency from one step to the next is which blocks come next, so
/// that is all it waits for: the two last values are loaded as scalars (volatile reads,
/// else the compiler takes them out of the vectors: two more shuffles, ~6 cycles, on
/// every step), and matches are summed in a vector, not counted per step. Half the time
/// of extracting and counting per step (1.2 → 0.57 µs for two samples of 500–1,000).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn common_avx2(a: &[u32], b: &[u32]) -> u32 {
    use std::arch::x86_64::*;
    let (na, nb) = (a.len() & !7, b.len() & !7);
    let (mut i, mut j) = (0usize, 0usize);
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut matches = _mm256_setzero_si256();
    while i < na && j < nb {
        // SAFETY: i + 8 <= a.len() and j + 8 <= b.len(); unaligned loads.
        let (last_a, last_b, va, vb) = unsafe {
            (
                std::ptr::read_volatile(pa.add(i + 7)),
                std::ptr::read_volatile(pb.add(j + 7)),
                _mm256_loadu_si256(pa.add(i) as *const __m256i),
                _mm256_loadu_si256(pb.add(j) as *const __m256i),
            )
        };
        // The eight rotations: three within each 128-bit lane, then the lanes swapped.
        let swapped = _mm256_permute2x128_si256(vb, vb, 1);
        let eq = |x: __m256i| _mm256_cmpeq_epi32(va, x);
        let within = _mm256_or_si256(
            _mm256_or_si256(eq(vb), eq(_mm256_shuffle_epi32(vb, 0x39))),
            _mm256_or_si256(
                eq(_mm256_shuffle_epi32(vb, 0x4e)),
                eq(_mm256_shuffle_epi32(vb, 0x93)),
            ),
        );
        let across = _mm256_or_si256(
            _mm256_or_si256(eq(swapped), eq(_mm256_shuffle_epi32(swapped, 0x39))),
            _mm256_or_si256(
                eq(_mm256_shuffle_epi32(swapped, 0x4e)),
                eq(_mm256_shuffle_epi32(swapped, 0x93)),
            ),
        );
        // A match is -1 in its lane.
        matches = _mm256_sub_epi32(matches, _mm256_or_si256(within, across));
        i += ((last_a <= last_b) as usize) << 3;
        j += ((last_b <= last_a) as usize) << 3;
    }
    let mut lanes = [0u32; 8];
    // SAFETY: 32 bytes into an array of eight u32.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, matches) };
    lanes.iter().sum::<u32>() + common_by(a.len() - i, |k| a[i + k], &b[j..])
}

/// [`common_sorted`] with the first sample's `n` values given by `a(i)` (e.g. read in
/// place from packed bytes).
#[inline]
pub fn common_by(n: usize, a: impl Fn(usize) -> u32, b: &[u32]) -> u32 {
    let (mut i, mut j, mut common) = (0usize, 0usize, 0u32);
    while i < n && j < b.len() {
        let (x, y) = (a(i), b[j]);
        common += (x == y) as u32;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    common
}

/// The estimate from two ascending compact samples already reduced to one level.
pub fn estimate_compact(a: &[u32], b: &[u32]) -> Estimate {
    Estimate::from_counts(common_sorted(a, b), a.len() as u32, b.len() as u32)
}

/// Estimated resemblance and containments of two documents.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// r(A,B).
    pub resemblance: f64,
    /// c(A in B): the share of A's shingles found in B.
    pub containment_a_in_b: f64,
    /// c(B in A).
    pub containment_b_in_a: f64,
    /// Sample values the two share at the common level.
    pub common: u32,
    /// Sample values in the union at the common level.
    pub union: u32,
}

impl Estimate {
    /// The estimate of samples of `na` and `nb` values (at one level) sharing `common`.
    pub fn from_counts(common: u32, na: u32, nb: u32) -> Estimate {
        let union = na + nb - common;
        let ratio = |num: u32, den: u32| {
            if den == 0 {
                0.0
            } else {
                num as f64 / den as f64
            }
        };
        Estimate {
            resemblance: ratio(common, union),
            containment_a_in_b: ratio(common, na),
            containment_b_in_a: ratio(common, nb),
            common,
            union,
        }
    }
}

/// Whether a measure estimated at `est` from a sample of `m` values may still be at or
/// above `floor` when measured on the full samples: within `sigmas` standard deviations
/// of a proportion at the floor (plus one value's worth). The candidate prefilters use
/// it: a pair at the floor is dropped with probability about that of a normal variable
/// past `sigmas` (3: 0.13%), pairs well above the floor almost never.
pub fn within_reach(est: f64, m: f64, floor: f64, sigmas: f64) -> bool {
    let m = m.max(1.0);
    est + sigmas * (floor * (1.0 - floor) / m).sqrt() + 1.0 / m >= floor
}

/// Compares two sketches at the larger of their levels.
pub fn estimate(a: &Sketch, b: &Sketch) -> Estimate {
    let level = a.level.max(b.level);
    estimate_sorted(a.at_level(level), b.at_level(level))
}

/// The estimate from two ascending samples already reduced to one level.
pub fn estimate_sorted(a: impl Iterator<Item = u64>, b: impl Iterator<Item = u64>) -> Estimate {
    let mut ia = a.peekable();
    let mut ib = b.peekable();
    let (mut common, mut only_a, mut only_b) = (0u32, 0u32, 0u32);
    loop {
        match (ia.peek(), ib.peek()) {
            (Some(x), Some(y)) => {
                if x == y {
                    common += 1;
                    ia.next();
                    ib.next();
                } else if x < y {
                    only_a += 1;
                    ia.next();
                } else {
                    only_b += 1;
                    ib.next();
                }
            }
            (Some(_), None) => {
                only_a += 1;
                ia.next();
            }
            (None, Some(_)) => {
                only_b += 1;
                ib.next();
            }
            (None, None) => break,
        }
    }
    Estimate::from_counts(common, common + only_a, common + only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        s.split(' ').collect()
    }

    #[test]
    fn short_docs_get_one_shingle_and_windows_roll() {
        let p = SketchParams {
            shingle_width: 3,
            ..Default::default()
        };
        let mut out = Vec::new();
        shingles(toks("a b").into_iter(), &p, &mut out);
        assert_eq!(out.len(), 1);
        shingles(toks("a b c d a b c").into_iter(), &p, &mut out);
        // abc bcd cda dab abc → 4 distinct
        assert_eq!(out.len(), 4);
        // The rolled value equals the value computed from scratch.
        let mut direct = Vec::new();
        shingles(toks("d a b").into_iter(), &p, &mut direct);
        assert!(out.contains(&direct[0]));
        shingles(std::iter::empty(), &p, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn identical_and_disjoint() {
        let p = SketchParams::default();
        let mut s = Vec::new();
        let words: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
        let a = Sketch::of_tokens(words.iter().map(|s| s.as_str()), &p, &mut s);
        let b = Sketch::of_tokens(words.iter().map(|s| s.as_str()), &p, &mut s);
        assert_eq!(estimate(&a, &b).resemblance, 1.0);
        let other: Vec<String> = (0..3000).map(|i| format!("x{i}")).collect();
        let c = Sketch::of_tokens(other.iter().map(|s| s.as_str()), &p, &mut s);
        assert_eq!(estimate(&a, &c).resemblance, 0.0);
        assert!(a.level >= 1 && a.values.len() >= 512 && a.values.len() < 1024 + 200);
    }

    #[test]
    fn common_values_counted_alike_by_every_path() {
        let mut seed = 7u64;
        let mut next = || {
            seed = fmix64(seed.wrapping_add(0x9E37_79B9_7F4A_7C15));
            seed
        };
        for round in 0..2000 {
            let universe = 1 + (next() % 4000) as u32;
            let pick = |n: usize, next: &mut dyn FnMut() -> u64| {
                let mut v: Vec<u32> = (0..n).map(|_| (next() % universe as u64) as u32).collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let a = pick((next() % 1200) as usize, &mut next);
            let b = pick((next() % 1200) as usize, &mut next);
            let scalar = common_by(a.len(), |i| a[i], &b);
            let exact = a.iter().filter(|x| b.binary_search(x).is_ok()).count() as u32;
            assert_eq!(scalar, exact, "round {round}");
            assert_eq!(common_sorted(&a, &b), exact, "round {round}");
            assert_eq!(common_sorted(&b, &a), exact, "round {round}");
        }
    }

    #[test]
    fn reduced_values_keep_levels_order_and_compact_losslessly() {
        let p = SketchParams::default();
        let mut s = Vec::new();
        let words: Vec<String> = (0..5000).map(|i| format!("w{}", i % 4000)).collect();
        let a = Sketch::of_tokens(words.iter().map(|s| s.as_str()), &p, &mut s);
        let b = Sketch::of_tokens(words[700..].iter().map(|s| s.as_str()), &p, &mut s);
        let (ra, rb) = (a.reduced(), b.reduced());
        for (full, red) in [(&a, &ra), (&b, &rb)] {
            assert!(red.values.windows(2).all(|w| w[0] < w[1]));
            for l in 0..12u8 {
                assert_eq!(full.at_level(l).count(), red.at_level(l).count());
            }
            for v in &red.values {
                assert_eq!(expand(compact(*v)), *v);
                assert_eq!(reduce(*v), *v);
            }
            let c: Vec<u32> = red.values.iter().map(|v| compact(*v)).collect();
            assert!(
                c.windows(2).all(|w| w[0] < w[1]),
                "compact order = reduced order"
            );
        }
        // Compact estimates equal the estimates of the reduced sketches, which are the
        // full sketches' estimates here (no two values of these docs collide).
        let level = ra.level.max(rb.level);
        let ca: Vec<u32> = ra.at_level(level).map(compact).collect();
        let cb: Vec<u32> = rb.at_level(level).map(compact).collect();
        assert_eq!(estimate_compact(&ca, &cb), estimate(&ra, &rb));
        assert_eq!(estimate(&ra, &rb), estimate(&a, &b));
        // Values whose trailing zeros pass the cap keep every level up to it.
        assert_eq!(reduce(0), 1u64 << MAX_TZ);
        assert_eq!(compact(1u64 << 40) & 31, MAX_TZ);
    }

    #[test]
    fn posting_keys_keep_trailing_zeros_compact_form_and_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut vals: Vec<u64> = (0..20_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Every number of trailing zeros, values with none set under bit 21,
                // and pairs that differ only under it.
                match i % 3 {
                    0 => x << (i % 40),
                    1 => x & !((1 << 40) - 1),
                    _ => (x & !((1 << 21) - 1)) | (1 << (i % 21)),
                }
            })
            .collect();
        vals.push(0);
        let mut keys: Vec<u64> = vals.iter().map(|v| posting_key(*v)).collect();
        for (v, k) in vals.iter().zip(&keys) {
            assert!(*k < 1 << (8 * POSTING_KEY_BYTES));
            assert_eq!(posting_key_tz(*k), v.trailing_zeros().min(MAX_TZ), "{v:x}");
            assert_eq!(compact_of_posting_key(*k), compact(*v), "{v:x}");
            assert_eq!(posting_key_of_bytes(posting_key_bytes(*k)), *k);
        }
        keys.sort_unstable();
        let bytes: Vec<_> = keys.iter().map(|k| posting_key_bytes(*k)).collect();
        assert!(
            bytes.windows(2).all(|w| w[0] <= w[1]),
            "byte order is key order"
        );
    }
}
