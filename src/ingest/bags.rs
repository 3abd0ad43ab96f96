//! The sweep's anchor bags: once its pages are all in, every URL its pages link gets
//! the sample of the bag of words of the windows around those links
//! ([`crate::links::bag_sample`]), in `anchor_bags`.
//!
//! A URL linked by fewer than [`MIN_LINKING_PAGES`] pages has none.
//!
//! The links of a sweep are keyed by the page that links; a bag gathers them by the
//! page linked. A scan of the sweep's `links` (borrowed, nothing copied) collects
//! (target, word) pairs, packed in 8 bytes, which are grouped by target (a counting
//! sort) and counted. Their memory is bounded: past [`MAX_PAIRS`] the first scan only
//! counts each target's words, and the targets are then cut into as few shares as fit,
//! each collected by a scan of its own. An ingest that adds files to a sweep builds the
//! sweep's bags again, all at once, so the index is the one a single ingest makes.

use serde::Serialize;

use super::FastMap;
use crate::index::columns::anchor_bags::AnchorBag;
use crate::index::{Index, Result};
use crate::links::{bag_sample, window_words, word_hash, BagParams};
use crate::url::host_of_surt;

/// Pages that must link a URL for it to have a bag: what one page says of a URL is that
/// page's words, not what the web says of it (on a generated sweep of 100,000 pages,
/// 89% of the 1.1 million linked URLs, mostly links to nowhere; on llvm-docs, 1 of 50
/// pages sampled).
pub const MIN_LINKING_PAGES: u32 = 2;

/// (target, word) pairs held at once: 8 bytes each and 4 more to group them, 192 MB.
const MAX_PAIRS: usize = 16 << 20;

/// What the sweep's bags came to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BagCounts {
    /// URLs with a bag in the sweep.
    pub targets: u64,
    /// Words in their windows (each occurrence).
    pub words: u64,
    /// Scans of the sweep's links it took.
    pub passes: u32,
    /// Wall seconds.
    pub seconds: f64,
}

/// The bag parameters of `index`.
pub fn params_of(index: &Index) -> Result<BagParams> {
    let l = index.link_params()?;
    Ok(BagParams {
        own_host: l.own_host,
        sample_target: l.bag_sample,
        seed: index.params().seed,
    })
}

/// Builds the bags of sweep `sweep` from its links, replacing the ones it had.
pub fn build(index: &Index, sweep: u32) -> Result<BagCounts> {
    build_with_cap(index, sweep, MAX_PAIRS)
}

/// Every target linked in a sweep: its SURT, the pages linking it, its words.
#[derive(Default)]
struct Targets {
    ids: FastMap<String, u32>,
    list: Vec<(String, u32, u32)>,
}

impl Targets {
    fn id(&mut self, target: &str) -> u32 {
        if let Some(id) = self.ids.get(target) {
            return *id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(target.to_string(), id);
        self.list.push((target.to_string(), 0, 0));
        id
    }
}

/// [`build`] holding at most `cap` pairs at once.
pub fn build_with_cap(index: &Index, sweep: u32, cap: usize) -> Result<BagCounts> {
    let t0 = std::time::Instant::now();
    let p = params_of(index)?;
    let mut counts = BagCounts::default();
    // The first scan: every target and its words, and the pairs while they fit.
    let mut targets = Targets::default();
    let mut pairs: Vec<u64> = Vec::new();
    let mut fits = true;
    counts.passes = 1;
    scan(index, sweep, &p, |target, words| {
        let id = targets.id(target);
        let t = &mut targets.list[id as usize];
        t.1 += 1;
        t.2 = t.2.saturating_add(words.len() as u32);
        if fits {
            pairs.extend(words.iter().map(|h| ((id as u64) << 32) | *h as u64));
            if pairs.len() > cap {
                fits = false;
                pairs = Vec::new();
            }
        }
    })?;
    let mut bags: Vec<(String, AnchorBag)> = Vec::with_capacity(targets.list.len());
    if fits {
        bags_of(&pairs, &targets.list, |_| true, &p, &mut bags);
    } else {
        // Shares of consecutive target ids, each of at most `cap` words (a target of
        // more has a share of its own).
        let mut share_of = vec![0u32; targets.list.len()];
        let (mut share, mut held) = (0u32, 0usize);
        for (id, t) in targets.list.iter().enumerate() {
            if t.1 < MIN_LINKING_PAGES {
                share_of[id] = u32::MAX;
                continue;
            }
            if held > 0 && held + t.2 as usize > cap {
                share += 1;
                held = 0;
            }
            held += t.2 as usize;
            share_of[id] = share;
        }
        for s in 0..=share {
            counts.passes += 1;
            let mut pairs: Vec<u64> = Vec::new();
            scan(index, sweep, &p, |target, words| {
                let id = targets.ids.get(target).copied().unwrap_or(u32::MAX);
                if share_of.get(id as usize) == Some(&s) {
                    pairs.extend(words.iter().map(|h| ((id as u64) << 32) | *h as u64));
                }
            })?;
            bags_of(&pairs, &targets.list, |id| share_of[id] == s, &p, &mut bags);
        }
    }
    bags.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    counts.targets = bags.len() as u64;
    counts.words = bags.iter().map(|(_, b)| b.elements as u64).sum();
    index.anchor_bags().replace_sweep(sweep, &bags)?;
    counts.seconds = t0.elapsed().as_secs_f64();
    Ok(counts)
}

/// Calls `each` with every link of the sweep that counts (from the target's own host
/// or not, as the index says): its target and the hashes of its windows' words.
fn scan(
    index: &Index,
    sweep: u32,
    p: &BagParams,
    mut each: impl FnMut(&str, &[u32]),
) -> Result<()> {
    let mut words: Vec<u32> = Vec::new();
    index.links().each_link(sweep, |source, links| {
        let host = host_of_surt(source);
        for l in links {
            if !p.own_host && host_of_surt(l.target) == host {
                continue;
            }
            words.clear();
            for w in &l.windows {
                words.extend(window_words(w).map(|word| (word_hash(word, p.seed) >> 32) as u32));
            }
            each(l.target, &words);
        }
        Ok(true)
    })
}

/// The bags of the targets `wanted` (by id) from their pairs (target id ‖ word hash),
/// grouped by a counting sort on the id, then each target's words sorted and counted.
fn bags_of(
    pairs: &[u64],
    targets: &[(String, u32, u32)],
    wanted: impl Fn(usize) -> bool,
    p: &BagParams,
    out: &mut Vec<(String, AnchorBag)>,
) {
    let mut start = vec![0usize; targets.len() + 1];
    for x in pairs {
        start[(x >> 32) as usize + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut at = start.clone();
    let mut words = vec![0u32; pairs.len()];
    for x in pairs {
        let id = (x >> 32) as usize;
        words[at[id]] = *x as u32;
        at[id] += 1;
    }
    let mut counted: Vec<(u64, u32)> = Vec::new();
    for (id, t) in targets.iter().enumerate() {
        let mine = &mut words[start[id]..start[id + 1]];
        if mine.is_empty() || t.1 < MIN_LINKING_PAGES || !wanted(id) {
            continue;
        }
        mine.sort_unstable();
        counted.clear();
        for w in mine.iter() {
            match counted.last_mut() {
                Some((h, c)) if *h == *w as u64 => *c += 1,
                _ => counted.push((*w as u64, 1)),
            }
        }
        let (elements, level, values) = bag_sample(&counted, p);
        out.push((
            t.0.clone(),
            AnchorBag {
                elements,
                sources: t.1,
                level,
                values,
            },
        ));
    }
}
