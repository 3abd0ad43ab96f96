//! A host's template, and the resemblance of two pages without it.
//!
//! When a site changes its page template every page's text changes, and resemblance
//! over all shingles calls a quarter of a documentation site "rewritten".
//! Broder et al. drop "very common shingles" for that reason; here they are learned per
//! host and sweep: the sample values found in at least `share` of the host's pages.
//! The sketches are a consistent sample (a value is kept by every doc whose level it
//! reaches), so the share of sampled pages holding a value estimates the share of all
//! the host's pages holding its shingle, counted among the pages whose level keeps it.
//!
//! The *content resemblance* of two pages is their resemblance with the template
//! values of the hosts and sweeps involved removed from both samples: the same
//! consistent sample, of the shingle sets without the template's.
//!
//! Pure functions of sketches: ingest learns and stores templates (`templates` column
//! family), the queries, exports and the report compare with them.

use serde::{Deserialize, Serialize};

use crate::compact::{at_least, tz_of, CompactSketch};
use crate::sketch::{common_sorted as common, Estimate, MAX_TZ};

/// How templates are learned (`[template]` in `config.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateParams {
    /// A value in at least this share of a host's sampled pages is template.
    pub share: f64,
    /// Hosts with fewer sampled pages (with text) in a sweep have no template; a value
    /// is judged only among at least this many pages whose level keeps it, and is
    /// template only when it is on at least this many of the sample's pages by the same
    /// estimate.
    pub min_pages: u32,
    /// Pages sampled per host and sweep (a consistent sample: the lowest hashes of
    /// their URLs), whose sketches are counted.
    pub sample_pages: u32,
}

impl Default for TemplateParams {
    fn default() -> TemplateParams {
        TemplateParams {
            share: 0.03,
            min_pages: 20,
            sample_pages: 1024,
        }
    }
}

/// The hash of a URL's SURT that orders a host's sample: the same in every sweep, so a
/// host's sample is mostly the same URLs from sweep to sweep.
pub fn url_hash(surt: &str) -> u64 {
    crate::sketch::text_fingerprint(surt, 0x7465_6d70_6c61_7465) as u64
}

/// A host's template in one sweep, as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Template {
    /// Pages with text sampled to learn it.
    pub sampled: u32,
    /// Its sample values: compact, in level-major order ([`CompactSketch::values`]),
    /// ascending.
    pub values: Vec<u32>,
    /// Its number in `template_values`, which docs compared by content name
    /// ([`crate::index::columns::sketches::StoredSketch::template`]); a template learned
    /// again with other values gets a new one (the old one stays for the docs naming it).
    pub id: u32,
}

impl Template {
    /// The same template, ids aside.
    pub fn same_as(&self, other: &Template) -> bool {
        self.sampled == other.sampled && self.values == other.values
    }
}

/// Templates by id, as the pair step leaves them out (`cluster.resemblance = "content"`).
#[derive(Debug, Default, Clone)]
pub struct TemplateSet {
    values: std::collections::HashMap<u32, Vec<u32>>,
}

impl TemplateSet {
    /// Adds template `id`.
    pub fn insert(&mut self, id: u32, values: Vec<u32>) {
        self.values.insert(id, values);
    }

    /// The values of template `id` (none for 0 or an unknown id).
    pub fn get(&self, id: u32) -> &[u32] {
        self.values.get(&id).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Templates held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Whether the posting key `k` is a value of `template` (level-major compact values,
/// ascending).
pub fn holds_posting_key(template: &[u32], k: u64) -> bool {
    !template.is_empty()
        && template
            .binary_search(&crate::compact::level_major(
                crate::sketch::compact_of_posting_key(k),
            ))
            .is_ok()
}

/// `values` (level-major, ascending) without those of `removed` (likewise): a
/// consistent sample of the shingles outside `removed`'s.
pub fn without(values: &[u32], removed: &[u32]) -> Vec<u32> {
    if removed.is_empty() {
        return values.to_vec();
    }
    let mut out = Vec::with_capacity(values.len());
    let mut k = 0;
    for v in values {
        while k < removed.len() && removed[k] < *v {
            k += 1;
        }
        if k >= removed.len() || removed[k] != *v {
            out.push(*v);
        }
    }
    out
}

/// The estimate of `a` (level `la`) against `b` (level `lb`), both samples without
/// template values already ([`without`]), at the larger level; `None` when neither
/// keeps a value there.
pub fn estimate_without(a: &[u32], la: u8, b: &[u32], lb: u8) -> Option<Estimate> {
    let level = (la.max(lb) as u32).min(MAX_TZ);
    let (sa, sb) = (at_least(a, level), at_least(b, level));
    if sa.is_empty() && sb.is_empty() {
        return None;
    }
    Some(Estimate::from_counts(
        common(sa, sb),
        sa.len() as u32,
        sb.len() as u32,
    ))
}

/// The template of a host from the sketches of its sampled pages (one per page: a doc
/// captured at two URLs counts twice), or `None` below `min_pages` pages.
///
/// A value is template when it is on `share` of the pages whose level could keep it
/// (`eligible`, at least `min_pages`) and on `min_pages` of the sample by the same
/// estimate. Most values are on one page; so the values are first counted roughly, in
/// a small table of saturating counters indexed by a hash (a count there is never
/// below the value's own), and only those whose rough count reaches the least count
/// their level could be kept with are counted exactly. The same values as counting
/// them all (`tests::learn_equals_counting_every_value`), in a third of the time: the
/// exact count sorted all of a host's values, ~10⁵ of them, and was 0.7 of the 1.6
/// CPU-seconds of the templates at the end of a steady sweep of 100,000 pages (`perf`).
pub fn learn(pages: &[&CompactSketch], p: &TemplateParams) -> Option<Template> {
    if (pages.len() as u64) < p.min_pages as u64 {
        return None;
    }
    let at_level = pages_at_level(pages);
    let sampled = pages.len() as u64;
    // The least count a value of each level could be kept with (a lower bound of the
    // rule below; `u32::MAX`: none of that level can be).
    let mut least = [u32::MAX; MAX_TZ as usize + 2];
    for (t, l) in least.iter_mut().enumerate() {
        let eligible = at_level[t];
        if eligible >= p.min_pages {
            let by_share = (p.share * eligible as f64).floor().max(0.0) as u64;
            let by_pages = p.min_pages as u64 * eligible as u64 / sampled.max(1);
            *l = by_share.max(by_pages).min(u32::MAX as u64 - 1) as u32;
        }
    }
    let total: usize = pages.iter().map(|s| s.values().len()).sum();
    // A table the cache holds (64 KiB at most): a host's ~10⁵ values share its slots,
    // but only the few slots of its template's values run high.
    let bits = (usize::BITS - total.max(1 << 12).leading_zeros()).min(16);
    let slot = |v: u32| ((v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize;
    let mut rough = vec![0u8; 1 << bits];
    for s in pages {
        for &v in s.values().iter() {
            let c = &mut rough[slot(v)];
            *c = c.saturating_add(1);
        }
    }
    let mut candidates: Vec<u32> = Vec::new();
    for s in pages {
        for &v in s.values().iter() {
            let need = least[tz_of(v) as usize];
            if need != u32::MAX && rough[slot(v)] as u32 >= need.min(u8::MAX as u32) {
                candidates.push(v);
            }
        }
    }
    radix_sort(&mut candidates);
    Some(Template {
        sampled: pages.len() as u32,
        values: kept(&candidates, &at_level, sampled, p),
        id: 0,
    })
}

/// Pages whose sample reaches each number of trailing zeros, cumulative: a value with
/// `t` of them is kept by every page of level ≤ t that holds its shingle.
fn pages_at_level(pages: &[&CompactSketch]) -> [u32; MAX_TZ as usize + 2] {
    let mut at_level = [0u32; MAX_TZ as usize + 2];
    for s in pages {
        at_level[(s.level() as usize).min(MAX_TZ as usize)] += 1;
    }
    for t in 1..at_level.len() {
        at_level[t] += at_level[t - 1];
    }
    at_level
}

/// The values of `sorted` (every occurrence of each, ascending) that the rule keeps.
fn kept(
    sorted: &[u32],
    at_level: &[u32; MAX_TZ as usize + 2],
    sampled: u64,
    p: &TemplateParams,
) -> Vec<u32> {
    let mut values = Vec::new();
    for run in sorted.chunk_by(|a, b| a == b) {
        let v = run[0];
        let eligible = at_level[tz_of(v) as usize];
        let held = run.len() as u64;
        // On `share` of the pages that could show it, and on `min_pages` of the sample
        // by the same estimate (the pages a host has are at least those sampled).
        if eligible >= p.min_pages
            && held as f64 >= p.share * eligible as f64
            && held * sampled >= p.min_pages as u64 * eligible as u64
        {
            values.push(v);
        }
    }
    values
}

/// Sorts `v` ascending: least significant digit first, three passes of 11 bits. A
/// host's sample is ~10⁵ values; a comparison sort of them was a third of the template
/// learning at the end of a steady sweep (`perf`, 200 hosts: 0.35 of 1.07 CPU-s).
fn radix_sort(v: &mut Vec<u32>) {
    let mut out = vec![0u32; v.len()];
    for shift in [0u32, 11, 22] {
        let mut at = [0usize; 2048];
        for x in v.iter() {
            at[((x >> shift) & 2047) as usize] += 1;
        }
        let mut sum = 0;
        for c in at.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
        for x in v.iter() {
            let b = ((x >> shift) & 2047) as usize;
            out[at[b]] = *x;
            at[b] += 1;
        }
        std::mem::swap(v, &mut out);
    }
}

/// The values of both templates (each ascending), ascending.
pub fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Share of the two templates' values that one of them lacks (at the coarser of their
/// levels, so pages of other sizes do not count as change): 0 when the host kept its
/// template, 1 when it changed all of it.
pub fn changed_share(old: &[u32], new: &[u32]) -> f64 {
    let level = |t: &[u32]| t.iter().map(|v| tz_of(*v)).min().unwrap_or(0);
    let l = level(old).max(level(new));
    let (a, b) = (at_least(old, l), at_least(new, l));
    let e = Estimate::from_counts(common(a, b), a.len() as u32, b.len() as u32);
    if e.union == 0 {
        0.0
    } else {
        1.0 - e.resemblance
    }
}

/// The estimate of `a` against `b` with the `removed` values (ascending, level-major)
/// left out of both samples, at the larger of their levels: the content resemblance
/// and containments. `None` when neither keeps a value outside `removed` (pages of
/// template only: no content to compare).
pub fn content_estimate(a: &CompactSketch, b: &CompactSketch, removed: &[u32]) -> Option<Estimate> {
    let level = (a.level().max(b.level()) as u32).min(MAX_TZ);
    let (sa, sb) = (a.at(level), b.at(level));
    let removed = at_least(removed, level);
    let na = sa.len() as u32 - common(sa, removed);
    let nb = sb.len() as u32 - common(sb, removed);
    if na == 0 && nb == 0 {
        return None;
    }
    // Values both keep, less those of the template.
    let (mut i, mut j, mut k, mut shared) = (0, 0, 0, 0u32);
    while i < sa.len() && j < sb.len() {
        match sa[i].cmp(&sb[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                while k < removed.len() && removed[k] < sa[i] {
                    k += 1;
                }
                if k >= removed.len() || removed[k] != sa[i] {
                    shared += 1;
                }
                i += 1;
                j += 1;
            }
        }
    }
    Some(Estimate::from_counts(shared, na, nb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::{Sketch, SketchParams};

    /// [`learn`] by counting every value exactly: what it must equal.
    fn learn_by_counting_all(pages: &[&CompactSketch], p: &TemplateParams) -> Option<Template> {
        if (pages.len() as u64) < p.min_pages as u64 {
            return None;
        }
        let mut all: Vec<u32> = pages
            .iter()
            .flat_map(|s| s.values().iter().copied())
            .collect();
        all.sort_unstable();
        Some(Template {
            sampled: pages.len() as u32,
            values: kept(&all, &pages_at_level(pages), pages.len() as u64, p),
            id: 0,
        })
    }

    #[test]
    fn learn_equals_counting_every_value() {
        // Sites of many sizes, frames on some pages only (sections), pages of many
        // lengths (levels), and thresholds around the counts.
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut learned = 0;
        for round in 0..40 {
            let n = 15 + next(300) as usize;
            let sections = 1 + next(6) as usize;
            let pages: Vec<CompactSketch> = (0..n)
                .map(|i| {
                    let mut w = words(&format!("frame{round}-"), 40 + next(200) as usize);
                    w.extend(words(
                        &format!("side{round}-{}-", i % sections),
                        next(120) as usize,
                    ));
                    w.extend(words(&format!("r{round}p{i}w"), 5 + next(2000) as usize));
                    page(&w)
                })
                .collect();
            let refs: Vec<&CompactSketch> = pages.iter().collect();
            for (share, min_pages) in [(0.03, 20), (0.5, 3), (0.2, 10), (0.01, 1), (0.9, 50)] {
                let p = TemplateParams {
                    share,
                    min_pages,
                    sample_pages: 1024,
                };
                let t = learn(&refs, &p);
                assert_eq!(
                    t,
                    learn_by_counting_all(&refs, &p),
                    "round {round}: {n} pages, share {share}, min_pages {min_pages}"
                );
                learned += t.is_some_and(|t| !t.values.is_empty()) as usize;
            }
        }
        assert!(learned > 100, "{learned} of 200 templates with values");
    }

    fn page(words: &[String]) -> CompactSketch {
        let p = SketchParams::default();
        let mut scratch = Vec::new();
        CompactSketch::of(
            &Sketch::of_tokens(words.iter().map(|s| s.as_str()), &p, &mut scratch).reduced(),
        )
    }

    fn words(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    /// `n` pages: a 300-word frame (`frame`) around 300 words of their own.
    fn site(frame: &str, n: usize) -> Vec<CompactSketch> {
        let f = words(frame, 300);
        (0..n)
            .map(|i| {
                let mut w = f[..150].to_vec();
                w.extend(words(&format!("p{i}w"), 300));
                w.extend_from_slice(&f[150..]);
                page(&w)
            })
            .collect()
    }

    #[test]
    fn a_shared_frame_is_learned_and_left_out() {
        let old = site("nav", 40);
        let refs: Vec<&CompactSketch> = old.iter().collect();
        let t = learn(&refs, &TemplateParams::default()).expect("40 pages");
        assert_eq!(t.sampled, 40);
        // The frame's ~290 shingles, not the pages' own.
        assert!((250..=300).contains(&t.values.len()), "{}", t.values.len());
        // Two pages share the frame only: about a third in full, nothing in content.
        let full = content_estimate(&old[0], &old[1], &[]).unwrap();
        assert!(full.resemblance > 0.25, "{full:?}");
        let content = content_estimate(&old[0], &old[1], &t.values).unwrap();
        assert_eq!(content.common, 0);
        // The same pages in another frame: half changed in full, unchanged in content
        // but for the 36 of ~330 shingles that span a frame edge (w = 10).
        let new = site("chrome", 40);
        let e = content_estimate(&old[0], &new[0], &[]).unwrap();
        assert!(e.resemblance < 0.6, "{e:?}");
        let refs: Vec<&CompactSketch> = new.iter().collect();
        let t2 = learn(&refs, &TemplateParams::default()).unwrap();
        let both = union(&t.values, &t2.values);
        let e = content_estimate(&old[0], &new[0], &both).unwrap();
        assert!(e.resemblance > 0.85, "{e:?}");
        assert_eq!(changed_share(&t.values, &t.values), 0.0);
        assert!(changed_share(&t.values, &t2.values) > 0.9);
    }

    #[test]
    fn radix_sort_sorts_like_a_comparison_sort() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in [0usize, 1, 2, 1000, 100_000] {
            let mut v: Vec<u32> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Repeats and the extremes too.
                    match i % 7 {
                        0 => 0,
                        1 => u32::MAX,
                        2 => (x as u32) & 0xFF,
                        _ => x as u32,
                    }
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            radix_sort(&mut v);
            assert_eq!(v, want, "{n}");
        }
    }

    #[test]
    fn too_few_pages_learn_nothing() {
        let p = page(&words("a", 50));
        assert!(learn(&[&p; 19], &TemplateParams::default()).is_none());
    }
}
