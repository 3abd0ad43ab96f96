//! A host's templates as an index of only the captures a reader sees would hold them.
//!
//! Ingest learns each host's template per sweep from a sample of its pages (the
//! lowest URL hashes, [`crate::ingest`]'s templates), hidden pages too. A reader under
//! access rules is told content resemblances and template changes computed without
//! them: where a page of the host that the sample could hold is hidden in a sweep, the
//! template is learnt again by the same rule from the pages the reader sees. Learnt once
//! per host and view (the reader keeps them, [`crate::access::Kept`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{split, Captures};
use crate::access::{Reader, TemplatesSeen};
use crate::compact::CompactSketch;
use crate::index::columns::{corrupt, Column};
use crate::index::sketch_cache::SketchCache;
use crate::index::{Index, Result};
use crate::read::RecordKind;
use crate::template::{learn, url_hash, Template, TemplateParams};

type FastMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// The templates of `host` (a host SURT, through its `)`) that differ for reader `r`
/// from those stored, by sweep (`None`: the host has none there for this reader); empty
/// for a reader who sees everything. One walk over the host's captures, once per host
/// and view, whatever the request's budget (the next request uses it; one asking
/// meanwhile waits for it).
pub fn of_host(index: &Index, r: &Reader, host: &str) -> Result<Arc<TemplatesSeen>> {
    if !r.filtered() {
        return Ok(Arc::default());
    }
    r.kept().templates_of(host, || {
        Ok(match r.may_hide_under(host) {
            true => Arc::new(
                crate::index::budget::Budget::unbounded().run(|| learn_seen(index, r, host))?,
            ),
            false => Arc::default(),
        })
    })
}

/// The template values of `host` in `sweep` as reader `r` is told of them: the stored
/// ones, or those `seen` learnt again ([`of_host`]); empty when there is none.
pub fn values(index: &Index, seen: &TemplatesSeen, host: &str, sweep: u32) -> Result<Arc<[u32]>> {
    Ok(match seen.get(&sweep) {
        Some(Some(v)) => v.clone(),
        Some(None) => Arc::from([]),
        None => match index.templates().get(&(host.to_string(), sweep))? {
            Some(t) => t.values.into(),
            None => Arc::from([]),
        },
    })
}

/// The template values of `host` in `sweep` as reader `r` is told of them, when it has
/// one ([`of_host`]).
pub fn template(index: &Index, r: &Reader, host: &str, sweep: u32) -> Result<Option<Arc<[u32]>>> {
    Ok(match of_host(index, r, host)?.get(&sweep) {
        Some(seen) => seen.clone(),
        None => (index.templates().get(&(host.to_string(), sweep))?).map(|t| t.values.into()),
    })
}

/// A page as the sample orders it: URL hash, timestamp (its 14 digits as a number),
/// file and record numbers, doc.
type Page = (u64, u64, [u8; 8], u64);

/// Keeps, of `pages`, the captures of the `keep` lowest URL hashes, in sample order.
fn prune(pages: &mut Vec<Page>, keep: usize) {
    pages.sort_unstable();
    let mut distinct = 0;
    let mut end = pages.len();
    for (i, p) in pages.iter().enumerate() {
        if i == 0 || pages[i - 1].0 != p.0 {
            distinct += 1;
            if distinct > keep {
                end = i;
                break;
            }
        }
    }
    pages.truncate(end);
}

fn learn_seen(index: &Index, r: &Reader, host: &str) -> Result<TemplatesSeen> {
    let p = index.template_params();
    let keep = p.sample_pages.max(1) as usize;
    // Each sweep's pages the sample could hold (captures with a doc that are not
    // revisits: `sweep_pages`) that the reader sees, the lowest hashes only; and the
    // lowest hash of those it does not see.
    let mut by_sweep: BTreeMap<u32, (Vec<Page>, Option<u64>)> = BTreeMap::new();
    let prefix = host.as_bytes();
    index.captures().scan_raw(prefix, None, false, |k, v| {
        if !k.starts_with(prefix) {
            return Ok(false);
        }
        let (s, t) = split(k).map_err(|e| corrupt::<Captures>(k, e))?;
        // (A host SURT without its `)` is a prefix of others.)
        if crate::url::host_of_surt(s) != host {
            return Ok(true);
        }
        let info = Captures::decode_value(v).map_err(|e| corrupt::<Captures>(k, e))?;
        let Some(doc) = info.doc.filter(|_| info.kind != RecordKind::Revisit) else {
            return Ok(true);
        };
        let (pages, hidden) = by_sweep.entry(info.sweep).or_default();
        let hash = url_hash(s);
        if r.visible(s, t) {
            let record: [u8; 8] = k[k.len() - 8..].try_into().expect("a capture key's tail");
            pages.push((hash, t.parse().unwrap_or(0), record, doc));
            if pages.len() >= 2 * keep + 1024 {
                prune(pages, keep);
            }
        } else {
            *hidden = Some(hidden.map_or(hash, |h| h.min(hash)));
        }
        Ok(true)
    })?;
    let mut out = TemplatesSeen::default();
    for (sweep, (mut pages, hidden)) in by_sweep {
        let Some(hidden) = hidden else { continue };
        prune(&mut pages, keep);
        // No hidden page before the sample's last hash: the sample of all the pages is
        // this one, page for page (and the stored template is its own).
        let distinct = pages.windows(2).filter(|w| w[0].0 != w[1].0).count() + 1;
        if !pages.is_empty() && distinct == keep && pages.last().is_some_and(|l| l.0 < hidden) {
            continue;
        }
        let sample = sample_docs(pages.iter().map(|(h, _, _, d)| (*h, *d)), p);
        let learnt = learn_sample(index, &sample, p, &|_| None, None)?;
        let stored = index.templates().get(&(host.to_string(), sweep))?;
        if stored.map(|t| t.values) != learnt.as_ref().map(|t| t.values.clone()) {
            out.insert(sweep, learnt.map(|t| t.values.into()));
        }
    }
    Ok(out)
}

/// A host's sample: the docs of its pages (latest capture per URL, revisits left out)
/// with the `sample_pages` lowest URL hashes, from its pages as (URL hash, doc), by hash
/// then timestamp.
pub(crate) fn sample_docs(pages: impl Iterator<Item = (u64, u64)>, p: &TemplateParams) -> Vec<u64> {
    let mut sample: Vec<(u64, u64)> = Vec::new();
    let keep = p.sample_pages as usize;
    for (hash, doc) in pages {
        let n = sample.len();
        match sample.last_mut() {
            // A later capture of the same URL: its latest is sampled.
            Some((h, d)) if *h == hash => *d = doc,
            _ if n >= keep => break,
            _ => sample.push((hash, doc)),
        }
    }
    sample.into_iter().map(|(_, d)| d).collect()
}

/// The template learned from a host's `sample` (its docs): none under
/// `template.min_pages`.
pub(crate) fn learn_sample(
    index: &Index,
    sample: &[u64],
    p: &TemplateParams,
    found: &dyn Fn(u64) -> Option<CompactSketch>,
    cache: Option<&SketchCache>,
) -> Result<Option<Template>> {
    if (sample.len() as u64) < p.min_pages as u64 {
        return Ok(None);
    }
    let mut docs = sample.to_vec();
    docs.sort_unstable();
    docs.dedup();
    let sketches = compacts(index, &docs, found, cache)?;
    let pages: Vec<&CompactSketch> = sample.iter().filter_map(|d| sketches.get(d)).collect();
    Ok(learn(&pages, p))
}

/// The compact sketches of `docs` (ascending): those `found` has (the writer's cache
/// keeps most of a sweep's new docs and the docs they were compared with), the others
/// read.
pub(crate) fn compacts(
    index: &Index,
    docs: &[u64],
    found: &dyn Fn(u64) -> Option<CompactSketch>,
    cache: Option<&SketchCache>,
) -> Result<FastMap<u64, CompactSketch>> {
    let mut out: FastMap<u64, CompactSketch> = Default::default();
    let mut missed = Vec::new();
    for d in docs {
        match found(*d) {
            Some(c) => {
                out.insert(*d, c);
            }
            None => missed.push(*d),
        }
    }
    out.extend(index.sketches().read_compact(&missed, cache)?);
    Ok(out)
}
