//! The sweep's templates, and content resemblance to the previous capture.
//!
//! While records are committed, [`Pages`] keeps each host's sample (the pages whose URL
//! hash is among its `sample_pages` lowest so far) and writes to `sweep_pages` every page
//! that enters it, and every page whose doc differs from its URL's previous capture's.
//! At the end of the ingest ([`finish`]) each host the sweep captured learns its template
//! from its sample's sketches (`templates`), and each changed page gets its content
//! resemblance, written into its capture (`cr_prev`). With edges on content the same
//! templates are learned before the sweep's new docs are paired, once its records are
//! committed ([`learn_committed`]), so that they are compared without them; [`finish`]
//! then takes them. An ingest that adds files to a
//! sweep learns the sweep's templates again; a host whose template changed has its
//! pages' content resemblance computed again, so the index is the one a single ingest of
//! all the sweep's files makes.

use std::collections::BTreeSet;

use super::FastMap;
use crate::index::codec::CaptureInfo;
use crate::index::columns::captures::templates_seen::{compacts, learn_sample, sample_docs};
use crate::index::columns::captures::Captures;
use crate::index::columns::sweep_pages::{url_hash, SweepPage, SweepPageKey, SweepPages};
use crate::index::columns::template_values::TemplateValues;
use crate::index::columns::templates::Templates;
use crate::index::columns::{Batch, Column};
use crate::index::sketch_cache::SketchCache;
use crate::index::{Index, IndexError, Result};
use crate::template::{content_estimate, union, Template, TemplateParams};

/// Each host's sample so far: the lowest URL hashes of its pages in this sweep.
pub(super) struct Pages {
    keep: usize,
    hosts: FastMap<String, BTreeSet<u64>>,
}

impl Pages {
    /// The samples of the sweep's pages committed by earlier runs (none for a new sweep).
    pub(super) fn load(index: &Index, sweep: u32, p: &TemplateParams) -> Result<Pages> {
        let mut pages = Pages {
            keep: p.sample_pages.max(1) as usize,
            hosts: Default::default(),
        };
        index.sweep_pages().of_sweep(sweep, |k, v| {
            if !v.revisit {
                pages.sampled(&k.host, k.hash);
            }
            Ok(true)
        })?;
        Ok(pages)
    }

    /// Whether a page of `host` with URL hash `hash` is in its sample now.
    fn sampled(&mut self, host: &str, hash: u64) -> bool {
        let set = match self.hosts.get_mut(host) {
            Some(s) => s,
            None => self.hosts.entry(host.to_string()).or_default(),
        };
        if set.contains(&hash) {
            return true;
        }
        if set.len() < self.keep {
            set.insert(hash);
            return true;
        }
        match set.last() {
            Some(&max) if hash < max => {
                set.pop_last();
                set.insert(hash);
                true
            }
            _ => false,
        }
    }

    /// A page of the sweep (a capture with a doc): kept when it enters its host's
    /// sample or its doc is not its URL's `previous` (doc, sweep). A page that came by
    /// a revisit record is never sampled.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn note(
        &mut self,
        index: &Index,
        batch: &mut Batch,
        sweep: u32,
        host: &str,
        surt: &str,
        timestamp: &str,
        doc: u64,
        previous: Option<(u64, u32)>,
        capture: &[u8],
        revisit: bool,
    ) {
        let hash = url_hash(surt);
        if (!revisit && self.sampled(host, hash)) || previous.is_some() {
            // The capture's file and record numbers end its key.
            let record: [u8; 8] = capture[capture.len().saturating_sub(8)..]
                .try_into()
                .unwrap_or_default();
            let key = SweepPageKey {
                sweep,
                host: host.to_string(),
                hash,
                timestamp: timestamp.to_string(),
                record,
            };
            // Its capture's key is where its content resemblance is written: a page
            // kept for the sample alone has none to write.
            let page = SweepPage {
                doc,
                previous,
                content_r: None,
                capture: match previous {
                    Some(_) => capture.to_vec(),
                    None => Vec::new(),
                },
                revisit,
            };
            batch.put::<SweepPages>(index, &key, &page);
        }
    }
}

/// What [`finish`] did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct TemplateCounts {
    /// Hosts of the sweep with a template.
    pub hosts_with_template: u64,
    /// Pages whose content resemblance to their previous capture was computed.
    pub content_compared: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Whether anything was written.
    #[serde(skip)]
    pub wrote: bool,
}

/// Learns the templates of sweep `sweep`'s hosts and writes the content resemblance of
/// its changed pages not computed yet (all of a host's when its template changed), on
/// `threads` threads, a host each.
pub(super) fn finish(
    index: &Index,
    sweep: u32,
    p: &TemplateParams,
    cache: &SketchCache,
    threads: usize,
    early: Option<&Learned>,
) -> Result<TemplateCounts> {
    let mut counts = TemplateCounts::default();
    let mut next_id = index.template_values().next_id()?;
    // The sweep's pages by host (they come in host order), a group of hosts at a time.
    let mut hosts: Vec<(String, Vec<(SweepPageKey, SweepPage)>)> = Vec::new();
    let mut held = 0usize;
    let mut run = |hosts: &mut Vec<(String, Vec<(SweepPageKey, SweepPage)>)>| {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Result<HostDone>> = std::thread::scope(|s| {
            let work = || {
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((host, entries)) = hosts.get(i) else {
                        return out;
                    };
                    let early = early.and_then(|e| e.get(host));
                    out.push((i, one_host(index, sweep, host, entries, p, cache, early)));
                }
            };
            let spawned: Vec<_> = (1..threads.max(1)).map(|_| s.spawn(work)).collect();
            let mut all = work();
            for h in spawned {
                // A thread that panicked took its hosts with it: the ingest stops with
                // an error naming the step, not with those hosts' templates missing.
                all.extend(h.join().unwrap_or_else(|_| {
                    vec![(
                        usize::MAX,
                        Err(IndexError::Invalid(
                            "a thread learning the hosts' templates at the end of the ingest panicked; this group of hosts was not written (run the same command again to finish the step)".into(),
                        )),
                    )]
                }));
            }
            all.sort_by_key(|(i, _)| *i);
            all.into_iter().map(|(_, r)| r).collect()
        });
        hosts.clear();
        // Every host of the group done, or none written.
        let done = done.into_iter().collect::<Result<Vec<HostDone>>>()?;
        for (mut batch, c, learned) in done {
            // Ids in host order, so that the same sweeps make the same index.
            if let Some((host, mut t)) = learned {
                t.id = next_id;
                next_id += 1;
                batch.put::<TemplateValues>(index, &t.id, &t.values);
                batch.put::<Templates>(index, &(host, sweep), &t);
            }
            counts.hosts_with_template += c.hosts_with_template;
            counts.content_compared += c.content_compared;
            if !batch.is_empty() {
                counts.wrote = true;
                index.write(batch)?;
            }
        }
        Ok::<(), IndexError>(())
    };
    index.sweep_pages().of_sweep(sweep, |k, v| {
        if hosts.last().is_none_or(|(h, _)| *h != k.host) {
            if held >= GROUP_PAGES {
                run(&mut hosts)?;
                held = 0;
            }
            hosts.push((k.host.clone(), Vec::new()));
        }
        held += 1;
        hosts.last_mut().expect("pushed").1.push((k, v));
        Ok(true)
    })?;
    run(&mut hosts)?;
    Ok(counts)
}

/// Whether a host's template `learned` differs from the one stored `before`.
fn changed(before: Option<&Template>, learned: Option<&Template>) -> bool {
    match (before, learned) {
        (Some(b), Some(l)) => !b.same_as(l),
        (b, l) => b.is_some() != l.is_some(),
    }
}

/// What [`one_host`] leaves to write: its batch, its counts, and its template when it
/// changed (given its id in host order by [`finish`]).
type HostDone = (Batch, TemplateCounts, Option<(String, Template)>);

/// Pages [`finish`] holds at once (by whole hosts).
const GROUP_PAGES: usize = 1 << 16;

/// [`finish`] for one host: `entries` are its pages in `sweep_pages`, by URL hash;
/// `early`, its template as [`learn_committed`] learned it from the same pages.
fn one_host(
    index: &Index,
    sweep: u32,
    host: &str,
    entries: &[(SweepPageKey, SweepPage)],
    p: &TemplateParams,
    cache: &SketchCache,
    early: Option<&Option<Template>>,
) -> Result<HostDone> {
    let mut counts = TemplateCounts::default();
    let kept = |d: u64| cache.get(d).cloned();
    let learned = match early {
        Some(t) => t.clone(),
        None => {
            let sample = sample_docs(
                entries
                    .iter()
                    .filter(|(_, v)| !v.revisit)
                    .map(|(k, v)| (k.hash, v.doc)),
                p,
            );
            learn_sample(index, &sample, p, &kept, Some(cache))?
        }
    };
    let key = (host.to_string(), sweep);
    let before = index.templates().get(&key)?;
    let changed = changed(before.as_ref(), learned.as_ref());
    let mut batch = Batch::default();
    let mut store = None;
    match &learned {
        Some(t) => {
            counts.hosts_with_template += 1;
            if changed {
                store = Some((host.to_string(), t.clone()));
            }
        }
        None if changed => batch.delete::<Templates>(index, &key),
        None => {}
    }
    // Pages to compare: those not compared yet, or all when the template changed.
    let todo: Vec<usize> = (0..entries.len())
        .filter(|&i| {
            let page = &entries[i].1;
            page.previous.is_some() && (changed || page.content_r.is_none())
        })
        .collect();
    if !todo.is_empty() {
        let mut templates: FastMap<u32, Option<Template>> = Default::default();
        templates.insert(sweep, learned.clone());
        let mut wanted: Vec<u64> = Vec::new();
        for &i in &todo {
            let (d, (pd, ps)) = (entries[i].1.doc, entries[i].1.previous.expect("filtered"));
            wanted.extend([d, pd]);
            if let std::collections::hash_map::Entry::Vacant(e) = templates.entry(ps) {
                e.insert(index.templates().get(&(host.to_string(), ps))?);
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        let sketches = compacts(index, &wanted, &kept, Some(cache))?;
        let mut keys: Vec<&[u8]> = todo
            .iter()
            .map(|&i| entries[i].1.capture.as_slice())
            .collect();
        keys.sort_unstable();
        let got = index.captures().get_sorted_raw(&keys)?;
        let mut captures: FastMap<Vec<u8>, CaptureInfo> = keys
            .iter()
            .zip(got)
            .filter_map(|(k, v)| Some((k.to_vec(), v?)))
            .collect();
        // What is left out of the pages compared with each earlier sweep's.
        let own = learned.as_ref().map(|t| t.values.as_slice()).unwrap_or(&[]);
        let removed: FastMap<u32, Vec<u32>> = templates
            .iter()
            .map(|(s, t)| {
                (
                    *s,
                    union(t.as_ref().map(|t| t.values.as_slice()).unwrap_or(&[]), own),
                )
            })
            .collect();
        for &i in &todo {
            let (k, page) = &entries[i];
            let (pd, ps) = page.previous.expect("filtered");
            let r = match (sketches.get(&pd), sketches.get(&page.doc)) {
                (Some(a), Some(b)) => {
                    content_estimate(a, b, &removed[&ps]).map(|e| e.resemblance as f32)
                }
                _ => None,
            };
            let done = SweepPage {
                content_r: Some(r),
                ..page.clone()
            };
            batch.put::<SweepPages>(index, k, &done);
            let Some(c) = captures.get_mut(page.capture.as_slice()) else {
                return Err(IndexError::Invalid(format!(
                    "sweep_pages names a capture the index does not hold ({})",
                    String::from_utf8_lossy(&page.capture)
                )));
            };
            c.cr_prev = r;
            batch.put_raw::<Captures>(index, &page.capture, &Captures::value(c));
            counts.content_compared += 1;
        }
    }
    Ok((batch, counts, store))
}

/// The templates the pair step leaves out of a sweep's new docs when edges are taken on
/// content (`cluster.resemblance = "content"`): each host's template of the sweep itself
/// (learned from the whole sweep before its new docs are paired: [`learn_committed`]), or
/// where it has none, its latest from an earlier sweep; and every template by id, for
/// the older docs compared with.
pub(super) struct ForPairs {
    /// Host SURT → template id.
    pub by_host: FastMap<String, u32>,
    /// Template id → values.
    pub set: crate::template::TemplateSet,
}

impl ForPairs {
    /// As the index holds them before sweep `sweep`.
    pub(super) fn load(index: &Index, sweep: u32) -> Result<ForPairs> {
        let mut by_host: FastMap<String, (u32, u32)> = Default::default();
        index.templates().scan_prefix(&[], |(host, s), t| {
            if s < sweep && by_host.get(&host).is_none_or(|(best, _)| s > *best) {
                by_host.insert(host, (s, t.id));
            }
            Ok(true)
        })?;
        Ok(ForPairs {
            by_host: by_host.into_iter().map(|(h, (_, id))| (h, id)).collect(),
            set: index.template_values().all()?,
        })
    }

    /// With the templates [`learn_committed`] learned for the sweep itself, where a host has
    /// one (the others keep their latest earlier one).
    pub(super) fn with_own(mut self, index: &Index, own: &Learned) -> Result<Self> {
        self.by_host.extend(
            own.iter()
                .filter_map(|(h, t)| Some((h.clone(), t.as_ref()?.id))),
        );
        self.set = index.template_values().all()?;
        Ok(self)
    }

    /// The template id of a new doc first captured at `url`.
    pub(super) fn of_url(&self, url: Option<&str>) -> u32 {
        let Some(url) = url else { return 0 };
        let surt = crate::url::surt(url);
        self.by_host
            .get(crate::url::host_of_surt(&surt))
            .copied()
            .unwrap_or(0)
    }
}

/// With edges on content: the templates a sweep's second stage learns from its pages
/// ([`learn_committed`], which writes them), and each host's template for its waiting
/// docs with them.
pub(super) fn for_waiting(
    index: &Index,
    sweep: u32,
    p: &TemplateParams,
    threads: usize,
) -> Result<(Learned, ForPairs)> {
    let own = learn_committed(index, sweep, p, threads)?;
    let for_pairs = ForPairs::load(index, sweep)?.with_own(index, &own)?;
    Ok((own, for_pairs))
}

/// The templates [`learn_committed`] learned, by host (none: the host has none there).
pub(super) type Learned = FastMap<String, Option<Template>>;

/// With edges on content, a sweep's new docs are compared without their own sweep's
/// template, so it is learned before their pairs are found: once the sweep's records are
/// committed (its new docs waiting in `unpaired`), from its pages in `sweep_pages`, by
/// the rule [`finish`] applies at the end (which then takes it instead of learning it
/// again). Writes each host's template whose values changed (and makes the content
/// resemblance of its pages compared without the old one due again), in one batch;
/// returns every host's template, its id as stored.
pub(super) fn learn_committed(
    index: &Index,
    sweep: u32,
    p: &TemplateParams,
    threads: usize,
) -> Result<Learned> {
    // The sweep's pages by host, URL hash and timestamp.
    let mut hosts: Vec<(String, Vec<(SweepPageKey, SweepPage)>)> = Vec::new();
    index.sweep_pages().of_sweep(sweep, |k, v| {
        if hosts.last().is_none_or(|(h, _)| *h != k.host) {
            hosts.push((k.host.clone(), Vec::new()));
        }
        hosts.last_mut().expect("pushed").1.push((k, v));
        Ok(true)
    })?;
    let learned = super::pairs::parallel(threads, &hosts, |(_, pages)| {
        let sample = sample_docs(
            pages
                .iter()
                .filter(|(_, v)| !v.revisit)
                .map(|(k, v)| (k.hash, v.doc)),
            p,
        );
        learn_sample(index, &sample, p, &|_| None, None)
    })?;
    // Ids in host order, so that the same sweeps make the same index.
    let mut next_id = index.template_values().next_id()?;
    let mut batch = Batch::default();
    let mut out: Learned = Default::default();
    for ((host, pages), learned) in hosts.iter().zip(learned) {
        let key = (host.clone(), sweep);
        let before = index.templates().get(&key)?;
        let changed = changed(before.as_ref(), learned.as_ref());
        let learned = match learned {
            Some(mut t) => {
                if changed {
                    t.id = next_id;
                    next_id += 1;
                    batch.put::<TemplateValues>(index, &t.id, &t.values);
                    batch.put::<Templates>(index, &key, &t);
                } else if let Some(b) = &before {
                    t.id = b.id;
                }
                Some(t)
            }
            None => {
                if changed {
                    batch.delete::<Templates>(index, &key);
                }
                None
            }
        };
        out.insert(host.clone(), learned);
        // Pages compared without the old template are compared again at the end.
        if changed {
            for (k, v) in pages {
                if v.content_r.is_some() {
                    let due = SweepPage {
                        content_r: None,
                        ..v.clone()
                    };
                    batch.put::<SweepPages>(index, k, &due);
                }
            }
        }
    }
    if !batch.is_empty() {
        index.write(batch)?;
    }
    Ok(out)
}
