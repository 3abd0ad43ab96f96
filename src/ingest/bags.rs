//! The sweep's anchor bags: once its pages are all in, every URL its pages link gets
//! the sample of the bag of words of the windows around those links
//! ([`crate::links::bag_sample`]), in `anchor_bags`.
//!
//! The links of a sweep are keyed by the page that links; a bag gathers them by the
//! page linked. One scan of the sweep's `links` collects (target, word hash) pairs,
//! which are sorted and counted per target. Their memory is bounded: past
//! [`MAX_PAIRS`] the scan starts again on a share of the targets (by a hash of their
//! SURT), as many passes as needed. An ingest that adds files to a sweep builds the
//! sweep's bags again, all at once, so the index is the one a single ingest makes.

use serde::Serialize;

use super::FastMap;
use crate::index::columns::anchor_bags::AnchorBag;
use crate::index::{Index, Result};
use crate::links::{bag_sample, window_words, word_hash, BagParams};
use crate::url::host_of_surt;

/// (target, word) pairs held at once: 16 bytes each, 256 MB.
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

fn build_with_cap(index: &Index, sweep: u32, cap: usize) -> Result<BagCounts> {
    let t0 = std::time::Instant::now();
    let p = params_of(index)?;
    let mut counts = BagCounts::default();
    let mut bags: Vec<(String, AnchorBag)> = Vec::new();
    let mut parts = 1u64;
    let mut part = 0u64;
    while part < parts {
        counts.passes += 1;
        match one_pass(index, sweep, &p, (part, parts), cap)? {
            Some(mut got) => {
                bags.append(&mut got);
                part += 1;
            }
            // Too many pairs at once: four times the passes, from the first.
            None => {
                parts *= 4;
                part = 0;
                bags.clear();
            }
        }
    }
    bags.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    counts.targets = bags.len() as u64;
    counts.words = bags.iter().map(|(_, b)| b.elements as u64).sum();
    index.anchor_bags().replace_sweep(sweep, &bags)?;
    counts.seconds = t0.elapsed().as_secs_f64();
    Ok(counts)
}

/// The bags of the targets in share `part.0` of `part.1`; `None` past `cap` pairs.
fn one_pass(
    index: &Index,
    sweep: u32,
    p: &BagParams,
    (part, parts): (u64, u64),
    cap: usize,
) -> Result<Option<Vec<(String, AnchorBag)>>> {
    let mut ids: FastMap<String, u32> = FastMap::default();
    let mut targets: Vec<(String, u32)> = Vec::new();
    let mut pairs: Vec<(u32, u64)> = Vec::new();
    let mut over = false;
    index
        .links()
        .scan_prefix(&sweep.to_be_bytes(), |k, links| {
            let host = host_of_surt(&k.source);
            for l in &links {
                if !p.own_host && host_of_surt(&l.target) == host {
                    continue;
                }
                if parts > 1 && word_hash(&l.target, p.seed) % parts != part {
                    continue;
                }
                let id = match ids.get(&l.target) {
                    Some(id) => *id,
                    None => {
                        let id = targets.len() as u32;
                        ids.insert(l.target.clone(), id);
                        targets.push((l.target.clone(), 0));
                        id
                    }
                };
                targets[id as usize].1 += 1;
                for w in &l.windows {
                    pairs.extend(window_words(w).map(|word| (id, word_hash(word, p.seed))));
                }
            }
            over = pairs.len() > cap;
            Ok(!over)
        })?;
    if over {
        return Ok(None);
    }
    pairs.sort_unstable();
    let mut out = Vec::with_capacity(targets.len());
    let mut counted: Vec<(u64, u32)> = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let id = pairs[i].0;
        counted.clear();
        while i < pairs.len() && pairs[i].0 == id {
            match counted.last_mut() {
                Some((h, c)) if *h == pairs[i].1 => *c += 1,
                _ => counted.push((pairs[i].1, 1)),
            }
            i += 1;
        }
        let (elements, level, values) = bag_sample(&counted, p);
        let (target, sources) = std::mem::take(&mut targets[id as usize]);
        out.push((
            target,
            AnchorBag {
                elements,
                sources,
                level,
                values,
            },
        ));
    }
    Ok(Some(out))
}
