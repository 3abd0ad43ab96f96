//! A sketch as candidate checks compare it: its values compact ([`compact`]: 27 bits
//! and the trailing zeros, a u32), distinct, in level-major order (the values of any
//! coarser level are a prefix), with the sample's level; and the comparison of two
//! such sketches, a coarse part first. Pure: the index stores sketches packed
//! (`index::columns::sketches`) and reads them into this form; the pair step, the
//! queries, the report and template learning compare in it.

use crate::sketch::{
    common_sorted, compact, compact_of_posting_key, within_reach, Estimate, Sketch, MAX_TZ,
};

/// Bits a compact value keeps of its sample value.
const KEPT: u32 = crate::sketch::KEPT_BITS;

/// A compact value ([`compact`]) as candidate checks order them: trailing zeros first,
/// most first, then the kept bits. A bijection, so equal values stay equal; and the
/// values of a sample at any coarser level (more trailing zeros) are a prefix, so a
/// check takes any level's sample as a slice ([`at_least`]) and compares a coarse part
/// first ([`Probe::estimate`]).
pub fn level_major(c: u32) -> u32 {
    ((MAX_TZ - (c & 31)) << KEPT) | (c >> 5)
}

/// The trailing-zeros group of a level-major value (0: the most trailing zeros).
pub(crate) fn group_of(lm: u32) -> u32 {
    lm >> KEPT
}

/// The trailing zeros of a level-major value (as [`CompactSketch::values`] hold them).
pub fn tz_of(lm: u32) -> u32 {
    MAX_TZ - group_of(lm)
}

/// The compact value of a level-major one ([`level_major`] undone).
pub(crate) fn compact_of(lm: u32) -> u32 {
    ((lm & ((1 << KEPT) - 1)) << 5) | (MAX_TZ - group_of(lm))
}

/// The prefix of level-major `values` with at least `tz` trailing zeros.
pub fn at_least(values: &[u32], tz: u32) -> &[u32] {
    if tz == 0 {
        return values;
    }
    let last_group = MAX_TZ - tz.min(MAX_TZ);
    &values[..values.partition_point(|v| group_of(*v) <= last_group)]
}

/// Ascending compact values (each trailing-zeros group ascending) into level-major
/// order: a stable distribution by trailing zeros, one pass.
pub(crate) fn into_level_major(compact_sorted: &[u32], out: &mut Vec<u32>) {
    let mut starts = [0usize; 33];
    for c in compact_sorted {
        starts[(MAX_TZ - (c & 31)) as usize + 1] += 1;
    }
    for g in 1..33 {
        starts[g] += starts[g - 1];
    }
    out.clear();
    out.resize(compact_sorted.len(), 0);
    for c in compact_sorted {
        let g = (MAX_TZ - (c & 31)) as usize;
        out[starts[g]] = level_major(*c);
        starts[g] += 1;
    }
}

/// Levels above its own at which a [`CompactSketch`] knows where its sample ends.
const KNOWN_LEVELS: usize = 4;

/// A sketch's values as a candidate check compares them: compact ([`compact`]),
/// distinct, in [`level_major`] order, with the sample's level and the length of its
/// sample at each of the next levels (a binary search for them was most of a check's
/// cache misses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactSketch {
    level: u8,
    ends: [u32; KNOWN_LEVELS],
    values: Box<[u32]>,
    /// Stored against a base doc (so it cannot be a base itself).
    pub against: bool,
    /// Its template id (`StoredSketch::template` in the index).
    pub template: u32,
}

impl CompactSketch {
    /// The compact form of a sketch (full or reduced values).
    pub fn of(s: &Sketch) -> CompactSketch {
        let mut v: Vec<u32> = s.values.iter().map(|v| level_major(compact(*v))).collect();
        v.sort_unstable();
        v.dedup();
        CompactSketch::new(s.level, v)
    }

    fn new(level: u8, values: Vec<u32>) -> CompactSketch {
        let mut ends = [0u32; KNOWN_LEVELS];
        for (k, e) in ends.iter_mut().enumerate() {
            *e = at_least(&values, level as u32 + k as u32 + 1).len() as u32;
        }
        CompactSketch {
            level,
            ends,
            values: values.into_boxed_slice(),
            against: false,
            template: 0,
        }
    }

    /// The level of the sample (values ≡ 0 mod 2^level).
    pub fn level(&self) -> u8 {
        self.level
    }

    /// Every sampled value, in [`level_major`] order ([`tz_of`] gives each one's
    /// trailing zeros).
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// The sample at level `tz` (at least the sketch's own): a prefix of [`Self::values`].
    pub fn at(&self, tz: u32) -> &[u32] {
        match tz.checked_sub(self.level as u32) {
            None | Some(0) => &self.values,
            Some(k) if k as usize <= KNOWN_LEVELS => {
                &self.values[..self.ends[k as usize - 1] as usize]
            }
            Some(_) => at_least(&self.values, tz),
        }
    }

    /// From a stored sketch's parts: its posting keys (ascending) and the values under
    /// the posting level in level-major order. The posting values have the most
    /// trailing zeros: they come first, distributed by trailing zeros in one pass.
    pub(crate) fn from_parts(
        level: u8,
        posting: impl Iterator<Item = u64>,
        low_level_major: Vec<u32>,
    ) -> CompactSketch {
        let mut high = Vec::new();
        compact_sorted(posting.map(compact_of_posting_key), &mut high);
        let mut values = Vec::with_capacity(high.len() + low_level_major.len());
        into_level_major(&high, &mut values);
        values.extend_from_slice(&low_level_major);
        CompactSketch::new(level, values)
    }

    /// Memory held, in bytes (with a map entry's share).
    pub(crate) fn bytes(&self) -> usize {
        4 * self.values.len() + 80
    }
}

/// Levels above the compared one at which a check first compares a quarter of each
/// sample (see [`Probe::estimate`]).
const COARSE_STEP: u32 = 2;

/// Values the coarse parts must hold between them for their comparison to decide
/// anything (smaller samples are compared whole at once).
const COARSE_MIN: usize = 64;

/// The estimate of `other` (as `a`) against `own`, as candidate checks make it: `None`
/// when a `cut` = (floor, sigmas) is given and the coarse parts show that no measure can
/// reach the floor (see `index::columns::sketches`' `Col::estimates`). For the ingest's pair step, which reads the
/// sketches of a whole batch first.
pub fn compare(
    own: &CompactSketch,
    other: &CompactSketch,
    cut: Option<(f64, f64)>,
) -> Option<Estimate> {
    Probe { own }.estimate(other, cut)
}

/// The sketch candidates are compared with, compact (made once per new doc or query).
pub(crate) struct Probe<'a> {
    pub(crate) own: &'a CompactSketch,
}

impl Probe<'_> {
    /// The estimate with the candidate as `a`, at the larger of the two levels; `None`
    /// when a `cut` = (floor, sigmas) is given and the coarse part of both samples (a
    /// quarter, [`COARSE_STEP`] levels up) shows that no measure can reach the floor
    /// ([`within_reach`]). The coarse part's count is part of the whole one (equal
    /// values have equal trailing zeros), so a compared pair costs no more than before.
    pub(crate) fn estimate(&self, c: &CompactSketch, cut: Option<(f64, f64)>) -> Option<Estimate> {
        let level = (c.level.max(self.own.level) as u32).min(MAX_TZ);
        let theirs = c.at(level);
        let mine = self.own.at(level);
        let (mut common, mut t, mut m) = (0, theirs, mine);
        if let Some((floor, sigmas)) = cut {
            let coarse = (level + COARSE_STEP).min(MAX_TZ);
            let (t1, m1) = (c.at(coarse), self.own.at(coarse));
            if coarse > level && t1.len() + m1.len() >= COARSE_MIN {
                let e =
                    Estimate::from_counts(common_sorted(t1, m1), t1.len() as u32, m1.len() as u32);
                let reach = |est: f64, m: u32| within_reach(est, m as f64, floor, sigmas);
                if !(reach(e.resemblance, e.union)
                    || reach(e.containment_a_in_b, t1.len() as u32)
                    || reach(e.containment_b_in_a, m1.len() as u32))
                {
                    return None;
                }
                common = e.common;
                (t, m) = (&theirs[t1.len()..], &mine[m1.len()..]);
            }
        }
        common += common_sorted(t, m);
        Some(Estimate::from_counts(
            common,
            theirs.len() as u32,
            mine.len() as u32,
        ))
    }
}

/// Compact values, ascending and distinct, into `out` (cleared): values in full or
/// posting-key order may tie on the bits a compact value keeps, or not follow its order.
pub(crate) fn compact_sorted(values: impl Iterator<Item = u32>, out: &mut Vec<u32>) {
    out.clear();
    out.extend(values);
    if !out.is_sorted_by(|a, b| a < b) {
        out.sort_unstable();
        out.dedup();
    }
}
