//! Step (b) of a batch, the pairs: for the batch's new docs, the older docs that share
//! posting values with each (stored, fresh, or earlier in the batch), how many values
//! they share, and the estimates of those that may reach the edge floor.
//!
//! A pure function of the index as of the batch's start (stored postings under the
//! mark, the fresh lists, stored sketches) and the batch: it writes nothing, so it runs
//! on every core, and its result depends neither on the number of threads nor on the
//! number of partitions. It is the paper's own algorithm (Broder et al. 1997, "The
//! clustering algorithm"), incremental: the batch's ⟨posting key, doc⟩ pairs are cut
//! into key ranges (partitions), each sorted on its own; each range is joined with the
//! stored lists of its keys (each read once per batch, in key order) and expands
//! ⟨doc, older doc⟩ shares (a list met again with the same batch docs is counted
//! again, not expanded again: [`Same`]); the shares are merged into counts per doc; the
//! counts decide which sketches are read (each once per batch) and compared.
//!
//! Exactly what the one-doc-at-a-time search gives ([`crate::index::candidates`], in
//! input order): a value's list as doc d sees it is the stored list, the fresh entries,
//! and the batch's docs before d that took an entry — those that found it under the
//! common-shingle cap, which the join replays value by value.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::compact::{compare, CompactSketch};
use crate::index::candidates::{with_heads, Shared};
use crate::index::columns::sketches::{Sketches, StoredSketch};
use crate::index::columns::unpaired::Waiting;
use crate::index::columns::Column;
use crate::index::postings::{self, Fresh, OverCap, Stored, COMMON_HEAD};
use crate::index::postings::{entry, entry_fields, ENTRY};
use crate::index::sketch_cache::SketchCache;
use crate::index::{Index, IndexError, Result};
use crate::sketch::{posting_key_tz, within_reach, Estimate};
use crate::template::{estimate_without, holds_posting_key, union, without, TemplateSet};

/// New docs of a batch at most: the pair step's unit (a batch also holds at most
/// `batch::BATCH_RECORDS` records).
pub(super) const BATCH_NEW_DOCS: usize = 1024;

/// Standard deviations of the candidate prefilters ([`within_reach`]): on posting
/// counts before a sketch is read, and on the coarse part of the sketches before the
/// whole is compared. 2.5 lost 5% of the edges of the llvm-docs corpus; 3 loses none
/// measurable there or on the generated sweeps.
pub const PREFILTER_SIGMAS: f64 = 3.0;

/// Bits of a batch doc's index in a (older doc, batch doc) pair packed in a u64: older
/// docs are under 2⁴⁰ ([`crate::index::postings::MAX_DOCS`]).
const BATCH_BITS: u32 = 24;
const BATCH_MASK: u64 = (1 << BATCH_BITS) - 1;

/// Whether the older doc of estimate `e` (a = older, b = new) holds at least half of the
/// new doc's shingles: only such a doc may be the base the new doc's sketch is stored
/// against (chosen at commit, [`crate::ingest`]'s `new_doc`).
pub fn may_be_base(e: &Estimate) -> bool {
    2.0 * e.containment_a_in_b >= 1.0
}

/// Whether new doc `d` stored against `base` keeps half of its values.
fn fits(d: &NewDoc, base: &CompactSketch) -> bool {
    d.stored.stores_against(d.compact, base)
}

/// A new doc's estimate against an older doc.
#[derive(Debug, Clone)]
pub struct PairEstimate {
    /// The older doc.
    pub doc: u64,
    /// The estimate edges are decided on (content resemblance with edges on content),
    /// `a` = the older doc; `None` when neither holds content.
    pub edge: Option<Estimate>,
    /// When the older doc holds at least half of the new doc's shingles ([`may_be_base`],
    /// on all shingles): how many sample values they share.
    pub base: Option<u32>,
    /// With `base`: whether the new doc stored against the older one keeps at least half
    /// of its values ([`StoredSketch::stores_against`]). The base is chosen all the same;
    /// if it does not, the new doc is stored in full. Known (`Some`) only for the older
    /// docs the base's choice may take ([`base_order`]); `None` for the others.
    pub fits: Option<bool>,
    /// Whether the older doc is stored against a base (`None`: a doc of the sweep whose
    /// base is decided in doc order, [`super::bases`]).
    pub against: Option<bool>,
    /// The new doc's sketch as stored against the older doc, when a pairs job's estimate
    /// task encoded it (it may be the base: [`super::bases::ahead`]).
    pub value: Option<Vec<u8>>,
}

/// A new doc of the batch, as the pair step needs it.
pub struct NewDoc<'a> {
    /// Its posting level.
    pub level: u8,
    /// Its posting keys (ascending).
    pub values: &'a [u64],
    /// Its sketch, compact.
    pub compact: &'a CompactSketch,
    /// Its sketch as stored in full.
    pub stored: &'a StoredSketch,
}

/// What the join reads of a doc: its id, posting level and posting keys (ascending; all
/// of them, or at least those of the key range joined).
#[derive(Debug, Clone, Copy)]
pub struct JoinDoc<'a> {
    /// Its id.
    pub id: u64,
    /// Its posting level.
    pub level: u8,
    /// Its posting keys.
    pub values: &'a [u64],
}

/// What the index holds as of the batch's start, read-only.
pub struct View<'a> {
    /// The index (stored postings and sketches).
    pub index: &'a Index,
    /// Postings of docs from the mark on, not stored yet.
    pub fresh: &'a Fresh,
    /// Over-cap values known so far (shared; what is over stays over).
    pub over_cap: &'a OverCap,
    /// Sketches the writer keeps (only a shortcut: the result is the same without).
    pub cache: &'a SketchCache,
    /// Waits until the docs under the given id are readable from the index (their
    /// batches may still be in the writing).
    pub readable: &'a (dyn Fn(u64) -> Result<()> + Sync),
    /// With edges on content (`cluster.resemblance = "content"`): the templates docs
    /// name ([`CompactSketch::template`]). A new doc's template values are not searched
    /// through, and its estimates leave both docs' templates out.
    pub templates: Option<&'a TemplateSet>,
    /// When the sweep's waiting docs are paired in parts (a cluster's tasks, each with a
    /// range of them): the earlier ones, read from the index.
    pub unsettled: Option<Unsettled<'a>>,
}

/// The sweep's waiting docs from `from` on, as the index holds them before their pairs:
/// stored in full without their template (their template is `template(doc)`), and
/// whether each is stored against a base is decided only at commit.
pub struct Unsettled<'a> {
    /// The sweep's first waiting doc.
    pub from: u64,
    /// A waiting doc's template.
    pub template: &'a (dyn Fn(u64) -> Result<u32> + Sync),
}

/// How the step runs and what it keeps.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Threads.
    pub threads: usize,
    /// Key ranges the join is cut into (any number gives the same pairs).
    pub partitions: usize,
    /// Posting lists longer than this are boilerplate.
    pub cap: usize,
    /// The edge floor.
    pub floor: f64,
}

/// One new doc's pairs.
#[derive(Debug, Default)]
pub struct DocPairs {
    /// Which of its posting values have lists over the cap (in the order of its values).
    pub over: Vec<bool>,
    /// Docs examined: sharing values, or heads of over-cap lists (with repeats).
    pub examined: u64,
    /// Candidates whose sketch was compared.
    pub compared: u64,
    /// Estimates that passed the coarse check (or may make a base), in doc order.
    pub estimates: Vec<PairEstimate>,
    /// The count its posting entries carry: its posting values (outside its template,
    /// with edges on content).
    pub entry_count: usize,
    /// Its sketch's stored value: in full, or against its base ([`super::bases`]).
    /// Encoded in the pair step, on every core (in the commit, the encodings were a fifth
    /// of a first sweep's commit).
    pub value: Option<Vec<u8>>,
    /// Whether `value` is stored against a base.
    pub against: bool,
}

/// The pairs of a batch's new docs (numbered from `first`), and what was read for them.
#[derive(Default)]
pub struct BatchPairs {
    /// Per new doc, in doc order.
    pub docs: Vec<DocPairs>,
    /// Sketches read from the index for this batch, ascending.
    pub read: Vec<(u64, CompactSketch)>,
    /// Sketches compared that the cache held, ascending.
    pub hits: Vec<u64>,
    /// Seconds of the join (candidates) and of the reads and estimates.
    pub candidates_s: f64,
    /// See `candidates_s`.
    pub estimate_s: f64,
}

/// The pair step of new docs `first`, `first + 1`, … (`docs`, in that order) from
/// `docs[from]` on: the docs before it are earlier new docs not in the view yet (a batch
/// being committed meanwhile), which the docs after them see as that commit will leave
/// them; their own pairs are not made again.
pub fn find(
    view: &View,
    first: u64,
    docs: &[NewDoc],
    from: usize,
    s: Settings,
    buffers: &mut Buffers,
) -> Result<BatchPairs> {
    if docs.len() as u64 > BATCH_MASK {
        return Err(IndexError::Invalid(format!(
            "a pair-step batch of {} docs; at most {BATCH_MASK}",
            docs.len()
        )));
    }
    let clock = std::time::Instant::now();
    let (tmpl, entry_counts) = doc_templates(view.templates, docs);
    // Cut into ranges of posting keys, each joined on its own: a key range finds its
    // docs' keys (each doc's are ascending), sorts them and joins them with its lists,
    // then sorts what it found by doc.
    let n = s.partitions.max(1);
    let mut kept = std::mem::take(&mut buffers.parts);
    kept.resize_with(kept.len().max(n), Part::default);
    buffers.parts = kept.split_off(n);
    let cells: Vec<(usize, Mutex<Part>)> = kept
        .into_iter()
        .enumerate()
        .map(|(k, p)| (k, Mutex::new(p)))
        .collect();
    let joined_docs: Vec<JoinDoc> = (docs.iter().enumerate())
        .map(|(i, d)| JoinDoc {
            id: first + i as u64,
            level: d.level,
            values: d.values,
        })
        .collect();
    let bounds = range_bounds(&joined_docs, n);
    parallel(s.threads, &cells, |(k, cell)| {
        let mut part = cell
            .lock()
            .map_err(|_| IndexError::Invalid("a pair-step thread panicked".into()))?;
        let docs = (&joined_docs[..], Some(&bounds[..]));
        part.fill(view, docs, from, s, (&tmpl, &entry_counts), (*k, n))
    })?;
    let parts: Vec<Part> = cells
        .into_iter()
        .map(|(_, c)| c.into_inner().unwrap_or_default())
        .collect();
    // Heads and over-cap values by doc; each doc's shares are counted where they are.
    let mut joined = Joined {
        tmpl,
        entry_counts,
        heads: vec![Vec::new(); docs.len()],
        overs: vec![Vec::new(); docs.len()],
    };
    for p in &parts {
        p.heads_and_overs(&mut joined, 0);
    }
    let shares =
        |i: usize| -> Vec<u64> { parts.iter().flat_map(|p| p.shares_of(i)).copied().collect() };
    let r = estimate(
        view,
        first,
        docs,
        from,
        s,
        (&joined, &shares),
        &mut buffers.by_older,
        clock,
    );
    // Kept for the next batch (their pages stay mapped: see [`Buffers`]).
    buffers.parts.splice(0..0, parts);
    r
}

/// What a key range's join found for docs by id: (doc, share / head / over), each in the
/// order [`find`] meets them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Shares {
    /// (doc, share) in the range's order.
    pub shares: Vec<(u64, u64)>,
    /// (doc, first doc of an over-cap list among its values).
    pub heads: Vec<(u64, u64)>,
    /// (doc, its value whose list is over the cap).
    pub overs: Vec<(u64, u64)>,
}

/// The join of key range `k` of `n` for `docs` (in doc order; each with at least its
/// keys in the range), each with its template's values and the count its entries
/// carry: what one join task of a cluster's pair step computes
/// ([`super::pairs_job`]). Each doc's shares, heads and over-cap values are in the order
/// [`find`] meets them.
pub fn join_range(
    view: &View,
    docs: &[JoinDoc],
    s: Settings,
    (tmpl, entry_counts): (&[&[u32]], &[usize]),
    (k, n): (usize, usize),
) -> Result<Shares> {
    let mut part = Part::default();
    part.fill(view, (docs, None), 0, s, (tmpl, entry_counts), (k, n))?;
    let mut out = Shares::default();
    for (i, d) in docs.iter().enumerate() {
        out.shares
            .extend(part.shares_of(i).iter().map(|v| (d.id, *v)));
    }
    let global = |l: &[(u32, u64)]| -> Vec<(u64, u64)> {
        l.iter().map(|(i, v)| (docs[*i as usize].id, *v)).collect()
    };
    out.heads = global(&part.heads);
    out.overs = global(&part.overs);
    Ok(out)
}

/// Which of `n` ranges of posting keys `v` is in ([`range_of`]).
pub fn key_range(v: u64, n: usize) -> usize {
    range_of(v, n)
}

/// Each doc's template values (empty with edges on all shingles, or without one), and
/// the count its posting entries carry.
pub fn doc_templates<'a>(
    templates: Option<&'a TemplateSet>,
    docs: &[NewDoc],
) -> (Vec<&'a [u32]>, Vec<usize>) {
    let tmpl: Vec<&[u32]> = docs
        .iter()
        .map(|d| templates.map_or(&[][..], |t| t.get(d.compact.template)))
        .collect();
    let entry_counts: Vec<usize> = docs
        .iter()
        .zip(&tmpl)
        .map(|(d, t)| {
            d.values
                .iter()
                .filter(|v| !holds_posting_key(t, **v))
                .count()
        })
        .collect();
    (tmpl, entry_counts)
}

/// What the join found for a batch's docs, but their shares: each doc's template and
/// entry count ([`doc_templates`]), the heads of its over-cap lists and its values
/// whose lists are over the cap.
pub struct Joined<'a> {
    /// Per doc: its template's values.
    pub tmpl: Vec<&'a [u32]>,
    /// Per doc: the count its entries carry.
    pub entry_counts: Vec<usize>,
    /// Per doc: the first docs of its over-cap lists.
    pub heads: Vec<Vec<u64>>,
    /// Per doc: its values whose lists are over the cap.
    pub overs: Vec<Vec<u64>>,
}

/// The second half of the pair step, from what the join found (`joined`, and each doc's
/// shares from `shares`, in any order): the counts per doc, the candidates they leave,
/// their sketches read and compared. `clock` started with the join (its seconds are
/// `candidates_s`). The step's two halves meet here, so the join can run elsewhere
/// (key ranges as tasks of a cluster: [`crate::ingest::pairs_job`]).
#[allow(clippy::too_many_arguments)]
pub fn estimate(
    view: &View,
    first: u64,
    docs: &[NewDoc],
    from: usize,
    s: Settings,
    (joined, shares): (&Joined, &(dyn Fn(usize) -> Vec<u64> + Sync)),
    by_older: &mut Vec<u64>,
    clock: std::time::Instant,
) -> Result<BatchPairs> {
    let Joined {
        tmpl,
        entry_counts,
        heads,
        overs,
    } = joined;
    let idx: Vec<usize> = (from..docs.len()).collect();
    let counted = parallel(s.threads, &idx, |&i| {
        let mut mine = shares(i);
        Ok(counts(
            &docs[i], tmpl[i], &mut mine, &overs[i], &heads[i], s.floor,
        ))
    })?;
    let candidates_s = clock.elapsed().as_secs_f64();
    // Each sketch compared is read once for the batch: those not in it nor kept.
    let clock = std::time::Instant::now();
    let mut wanted: Vec<u64> = counted
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .filter(|c| *c < first)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let (hits, misses): (Vec<u64>, Vec<u64>) = wanted
        .into_iter()
        .partition(|d| view.cache.get(*d).is_some());
    if !misses.is_empty() {
        (view.readable)(first)?;
    }
    let chunks: Vec<&[u64]> = misses.chunks(256).collect();
    let sketches = view.index.sketches();
    let mut read: Vec<(u64, CompactSketch)> = parallel(s.threads, &chunks, |c| {
        sketches.read_compact(c, Some(view.cache))
    })?
    .into_iter()
    .flatten()
    .collect();
    // Docs of the sweep paired elsewhere: stored without their template so far.
    if let Some(u) = &view.unsettled {
        for (d, c) in read.iter_mut().filter(|(d, _)| *d >= u.from) {
            c.template = (u.template)(*d)?;
        }
    }
    let sketch_of = |c: u64| -> Option<&CompactSketch> {
        if c >= first {
            return docs.get((c - first) as usize).map(|d| d.compact);
        }
        match read.binary_search_by_key(&c, |(d, _)| *d) {
            Ok(k) => Some(&read[k].1),
            Err(_) => view.cache.get(c),
        }
    };
    let cut = Some((s.floor, PREFILTER_SIGMAS));
    // With edges on content: each new doc's sample without its template.
    let own_content: Vec<Vec<u32>> = match view.templates {
        None => Vec::new(),
        Some(_) => docs
            .iter()
            .zip(tmpl)
            .map(|(d, t)| without(d.compact.values(), t))
            .collect(),
    };
    // The comparisons by older doc, then new doc: each older sketch comes from memory
    // once for all the batch's docs it is compared with (theirs stay in the caches),
    // not once a pair. A sketch is ~3 KB and a redesign sweep makes ~60 comparisons a
    // new doc: the estimates waited on memory, not on the comparing.
    by_older.clear();
    by_older.extend(
        counted
            .iter()
            .enumerate()
            .flat_map(|(k, (_, compare_with))| {
                compare_with
                    .iter()
                    .map(move |c| c << BATCH_BITS | (from + k) as u64)
            }),
    );
    by_older.sort_unstable();
    let chunks: Vec<&[u64]> = by_older.chunks(4096).collect();
    let found = parallel(s.threads, &chunks, |chunk| {
        let mut out = Vec::with_capacity(chunk.len());
        // The older doc's sample without the templates, for the new docs after it.
        let mut theirs_content: Option<(u64, u32, Vec<u32>)> = None;
        // The older doc's sketch, for the new docs after it (found once, not a lookup
        // in the cache's table a pair).
        let mut last: Option<(u64, Option<&CompactSketch>)> = None;
        for pair in *chunk {
            let (c, i) = (pair >> BATCH_BITS, (pair & BATCH_MASK) as usize);
            let found = match last {
                Some((d, found)) if d == c => found,
                _ => sketch_of(c),
            };
            last = Some((c, found));
            // A doc without a stored sketch is left out, as everywhere.
            let Some(theirs) = found else {
                continue;
            };
            let settled = view.unsettled.as_ref().is_none_or(|u| c < u.from);
            let against = (c < first && settled).then_some(theirs.against);
            let none =
                |set: &TemplateSet| tmpl[i].is_empty() && set.get(theirs.template).is_empty();
            let Some(set) = view.templates.filter(|set| !none(set)) else {
                // On all shingles, or neither doc has a template: the one estimate.
                if let Some(e) = compare(docs[i].compact, theirs, cut) {
                    let base = may_be_base(&e).then_some(e.common);
                    out.push((
                        i,
                        PairEstimate {
                            doc: c,
                            edge: Some(e),
                            base,
                            fits: None,
                            against,
                            value: None,
                        },
                    ));
                }
                continue;
            };
            // On content: the templates of both left out of both samples; the base
            // still on all shingles (it is how the sketch is stored).
            let full = compare(docs[i].compact, theirs, None).expect("no cut");
            let mine_t = docs[i].compact.template;
            let same = theirs.template == mine_t || set.get(theirs.template).is_empty();
            let fresh = theirs_content
                .as_ref()
                .is_none_or(|(d, t, _)| *d != c || *t != mine_t);
            let removed = (fresh || !same).then(|| union(tmpl[i], set.get(theirs.template)));
            if let (true, Some(removed)) = (fresh, &removed) {
                theirs_content = Some((c, mine_t, without(theirs.values(), removed)));
            }
            let b = &theirs_content.as_ref().expect("made").2;
            let a = match &removed {
                Some(removed) if !same => {
                    std::borrow::Cow::Owned(without(docs[i].compact.values(), removed))
                }
                _ => std::borrow::Cow::Borrowed(&own_content[i]),
            };
            let edge = estimate_without(b, theirs.level(), &a, docs[i].compact.level());
            let base = may_be_base(&full).then_some(full.common);
            // Kept when it makes an edge (decided at commit) or may make the base.
            let reach = edge.is_some_and(|e| {
                e.resemblance >= s.floor
                    || e.containment_a_in_b >= s.floor
                    || e.containment_b_in_a >= s.floor
            });
            if reach || base.is_some() {
                out.push((
                    i,
                    PairEstimate {
                        doc: c,
                        edge,
                        base,
                        fits: None,
                        against,
                        value: None,
                    },
                ));
            }
        }
        Ok(out)
    })?;
    // Back to new docs, each one's older docs ascending (the order they were found in).
    // Each doc's vector made at its size (~35 estimates a doc in a redesign sweep: grown
    // by doubling, each was moved four or five times).
    let mut sizes = vec![0usize; docs.len() - from];
    for (i, _) in found.iter().flatten() {
        sizes[i - from] += 1;
    }
    let mut estimates: Vec<Vec<PairEstimate>> = sizes.into_iter().map(Vec::with_capacity).collect();
    for (i, e) in found.into_iter().flatten() {
        estimates[i - from].push(e);
    }
    // Whether each doc keeps half of its values against the older docs its base's
    // choice may take (not against every doc that may be a base: that was a tenth of a
    // redesign sweep's pair step).
    let fitted = parallel(s.threads, &idx, |&i| {
        let own = &estimates[i - from];
        Ok(base_order(own)
            .into_iter()
            .map(|k| {
                let base = sketch_of(own[k].doc);
                (k, base.is_some_and(|b| fits(&docs[i], b)))
            })
            .collect::<Vec<_>>())
    })?;
    for (own, fitted) in estimates.iter_mut().zip(fitted) {
        for (k, f) in fitted {
            own[k].fits = Some(f);
        }
    }
    // Docs that no base can be found for are stored in full: encoded here, on every
    // core (the others once their bases are decided, [`super::bases`]).
    let full = parallel(s.threads, &idx, |&i| {
        let no_base = !estimates[i - from].iter().any(|e| e.base.is_some());
        Ok(no_base.then(|| Sketches::value(docs[i].stored)))
    })?;
    let docs = counted
        .into_iter()
        .zip(estimates)
        .zip(full)
        .zip(from..docs.len())
        .map(|((((mut p, compare_with), estimates), full), i)| {
            p.entry_count = entry_counts[i];
            p.compared = compare_with.len() as u64;
            p.estimates = estimates;
            p.value = full;
            p
        })
        .collect();
    Ok(BatchPairs {
        docs,
        read,
        hits,
        candidates_s,
        estimate_s: clock.elapsed().as_secs_f64(),
    })
}

/// The estimates (indices into a doc's, in doc order) whose older doc its base's choice
/// may take, in the order it tries them: those that may be the base, the most shared
/// values first (ties: the lowest doc), leaving out the docs known to be stored against
/// a base, up to the first known to be stored in full (the choice takes it if it gets
/// there). The choice ([`super::bases`]) learns in doc order whether the others (docs of
/// the same sweep) are stored against a base; it reads `fits` only of these.
pub fn base_order(estimates: &[PairEstimate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..estimates.len())
        .filter(|k| estimates[*k].base.is_some() && estimates[*k].against != Some(true))
        .collect();
    order.sort_by_key(|k| (std::cmp::Reverse(estimates[*k].base), estimates[*k].doc));
    if let Some(end) = order
        .iter()
        .position(|k| estimates[*k].against == Some(false))
    {
        order.truncate(end + 1);
    }
    order
}

/// Which of `n` ranges of posting keys `v` is in: equal ranges of the keys' 48 bits
/// (their top bits are a hash's, so they spread evenly); a doc's keys in one range are
/// contiguous.
fn range_of(v: u64, n: usize) -> usize {
    let top = v << (64 - 8 * crate::sketch::POSTING_KEY_BYTES);
    ((u128::from(top) * n as u128) >> 64) as usize
}

/// Where each of `n` key ranges starts in each doc's keys (ascending), in one pass over
/// them: doc `i`'s keys of range `k` are `values[b[i * (n + 1) + k]..b[i * (n + 1) + k +
/// 1]]`. A binary search per doc and range was a quarter of the join's own time (its
/// loads wait on each other, once per range).
fn range_bounds(docs: &[JoinDoc], n: usize) -> Vec<u32> {
    let mut b = Vec::with_capacity(docs.len() * (n + 1));
    for d in docs {
        b.push(0);
        let mut k = 0;
        for (j, v) in d.values.iter().enumerate() {
            let r = range_of(*v, n);
            while k < r {
                b.push(j as u32);
                k += 1;
            }
        }
        while k < n {
            b.push(d.values.len() as u32);
            k += 1;
        }
    }
    b
}

/// Vectors the pair step keeps from one batch to the next (emptied, not freed): a
/// batch's shares run to megabytes, and vectors allocated anew each batch came as fresh
/// pages that the kernel zeroed (`perf`: 2 of the redesign sweep's 42 CPU-s).
#[derive(Default)]
pub struct Buffers {
    /// One per key range.
    parts: Vec<Part>,
    /// The batch's comparisons, by older doc.
    by_older: Vec<u64>,
}

/// What one key range of the join found.
#[derive(Default)]
struct Part {
    /// The range's ⟨posting key, batch doc⟩ pairs, by key then doc.
    keys: Vec<(u64, u32)>,
    /// (batch doc, entry of an older doc sharing a value with it, as a u64).
    shares: Vec<(u32, u64)>,
    /// The shares by doc ([`share`]): doc `i`'s are `by_doc[at[i]..at[i + 1]]`.
    by_doc: Vec<u64>,
    /// See `by_doc`.
    at: Vec<usize>,
    /// (batch doc, first doc of an over-cap list among its values).
    heads: Vec<(u32, u64)>,
    /// (batch doc, its value whose list is over the cap).
    overs: Vec<(u32, u64)>,
    /// Values of the same list and group: their shares are expanded once, weighted.
    same: Same,
}

impl Part {
    /// The join of key range `k` of `n` for the docs from `from` on (with where each
    /// range starts in each doc's keys, [`range_bounds`], when known).
    fn fill(
        &mut self,
        view: &View,
        (docs, bounds): (&[JoinDoc], Option<&[u32]>),
        from: usize,
        s: Settings,
        tmpl: (&[&[u32]], &[usize]),
        (k, n): (usize, usize),
    ) -> Result<()> {
        self.clear();
        self.keys_of(docs, bounds, from, (k, n));
        join(view, docs, from, s, tmpl, self)?;
        self.by_doc(docs.len());
        Ok(())
    }

    /// Its heads and over-cap values, into `joined`'s lists of docs from `offset` on.
    fn heads_and_overs(&self, joined: &mut Joined, offset: usize) {
        for (i, h) in &self.heads {
            if let Some(l) = (*i as usize)
                .checked_sub(offset)
                .and_then(|i| joined.heads.get_mut(i))
            {
                l.push(*h);
            }
        }
        for (i, v) in &self.overs {
            if let Some(l) = (*i as usize)
                .checked_sub(offset)
                .and_then(|i| joined.overs.get_mut(i))
            {
                l.push(*v);
            }
        }
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.shares.clear();
        self.by_doc.clear();
        self.at.clear();
        self.heads.clear();
        self.overs.clear();
        self.same.clear();
    }

    /// The ⟨posting key, doc⟩ pairs of key range `k` of `n`, by key then doc: only the
    /// keys of docs whose pairs are made (from `from` on); the docs before count where
    /// they share one.
    fn keys_of(
        &mut self,
        docs: &[JoinDoc],
        bounds: Option<&[u32]>,
        from: usize,
        (k, n): (usize, usize),
    ) {
        for (i, d) in docs.iter().enumerate() {
            let (lo, hi) = match bounds {
                Some(b) => (b[i * (n + 1) + k] as usize, b[i * (n + 1) + k + 1] as usize),
                None => {
                    let lo = d.values.partition_point(|v| range_of(*v, n) < k);
                    (
                        lo,
                        lo + d.values[lo..].partition_point(|v| range_of(*v, n) == k),
                    )
                }
            };
            self.keys
                .extend(d.values[lo..hi].iter().map(|v| (*v, i as u32)));
        }
        self.keys.sort_unstable();
        if from > 0 {
            // A key's docs in order: kept when the last is made.
            let mut kept = 0;
            let mut j = 0;
            while j < self.keys.len() {
                let start = j;
                while j < self.keys.len() && self.keys[j].0 == self.keys[start].0 {
                    j += 1;
                }
                if self.keys[j - 1].1 as usize >= from {
                    self.keys.copy_within(start..j, kept);
                    kept += j - start;
                }
            }
            self.keys.truncate(kept);
        }
    }

    /// The shares by doc (a counting sort), each with its weight. They come in runs of
    /// one doc (a list expanded for it): counted and placed a run at a time, as a count
    /// added to share by share waited on the add before it through memory (`perf`: the
    /// two loops were a sixth of the join's own time).
    fn by_doc(&mut self, docs: usize) {
        self.at.resize(docs + 1, 0);
        for run in self.shares.chunk_by(|a, b| a.0 == b.0) {
            self.at[run[0].0 as usize + 1] += run.len();
        }
        for i in 1..self.at.len() {
            self.at[i] += self.at[i - 1];
        }
        self.by_doc.resize(self.shares.len(), 0);
        let mut next = self.at.clone();
        let mut by_doc = std::mem::take(&mut self.by_doc);
        // The run's doc and where its next share goes.
        let mut run: Option<(usize, usize)> = None;
        for (i, e, w) in self.weighted_shares() {
            let i = i as usize;
            let at = match run {
                Some((d, at)) if d == i => at,
                _ => {
                    if let Some((d, at)) = run {
                        next[d] = at;
                    }
                    next[i]
                }
            };
            by_doc[at] = share(e, w);
            run = Some((i, at + 1));
        }
        self.by_doc = by_doc;
    }

    /// Doc `i`'s shares ([`Part::by_doc`]).
    fn shares_of(&self, i: usize) -> &[u64] {
        match (self.at.get(i), self.at.get(i + 1)) {
            (Some(a), Some(b)) => &self.by_doc[*a..*b],
            _ => &[],
        }
    }

    /// Each share with how many values made it, in order (a share of a remembered
    /// group counts as many times as values had the group).
    fn weighted_shares(&self) -> impl Iterator<Item = (u32, u64, u32)> + '_ {
        let mut groups = self.same.groups.iter().filter(|g| g.weight > 1).peekable();
        self.shares.iter().enumerate().map(move |(k, (i, e))| {
            while groups.next_if(|g| g.shares.end <= k).is_some() {}
            let w = match groups.peek() {
                Some(g) if g.shares.start <= k => g.weight,
                _ => 1,
            };
            (*i, *e, w)
        })
    }
}

/// A share: an entry ([`packed`]) and how many of the doc's values it was found
/// through (at most [`MAX_WEIGHT`]) in a u64, in the entry's order.
fn share(entry: u64, weight: u32) -> u64 {
    debug_assert!(entry < 1 << 56 && (1..=MAX_WEIGHT).contains(&weight));
    entry << 8 | u64::from(weight)
}

/// An entry's 7 bytes in a u64 (doc, then level, then count: doc order).
fn packed(e: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[1..].copy_from_slice(&e[..ENTRY]);
    u64::from_be_bytes(b)
}

/// The join of one key range (`keys`: ⟨value, new doc⟩, sorted) with the stored and
/// fresh lists: for each value, the new docs in order, each seeing the list as the docs
/// before it left it (an entry is added only while the list is under the cap); what
/// the docs from `from` on see is kept.
fn join(
    view: &View,
    docs: &[JoinDoc],
    from: usize,
    s: Settings,
    (tmpl, entry_counts): (&[&[u32]], &[usize]),
    part: &mut Part,
) -> Result<()> {
    let keys = std::mem::take(&mut part.keys);
    let mut values: Vec<u64> = keys.iter().map(|k| k.0).collect();
    values.dedup();
    let lookup = postings::lookup(view.index, &values, view.over_cap)?;
    if lookup.mark != view.fresh.mark() {
        return Err(IndexError::Invalid(format!(
            "postings mark {} where the writer has {}: another process wrote this index",
            lookup.mark,
            view.fresh.mark()
        )));
    }
    let cap_bytes = s.cap * ENTRY;
    // A value's entries, and those the batch's docs added: emptied for each value.
    let (mut old, mut added): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut k = 0;
    let fresh_lists = view.fresh.entries_all(&values);
    for ((v, stored), fresh) in values.iter().zip(lookup.lists()).zip(fresh_lists) {
        let start = k;
        while k < keys.len() && keys[k].0 == *v {
            k += 1;
        }
        let group = &keys[start..k];
        match stored {
            Stored::Over(head) => {
                for (_, i) in group.iter().filter(|(_, i)| *i as usize >= from) {
                    part.overs.push((*i, *v));
                    if !holds_posting_key(tmpl[*i as usize], *v) {
                        part.heads.extend(head.iter().map(|h| (*i, *h)));
                    }
                }
            }
            Stored::Absent | Stored::List(_) => {
                let list: &[u8] = match stored {
                    Stored::List(l) => l,
                    _ => &[],
                };
                // Unpacked once for the whole group (its docs each expand it).
                old.clear();
                old.extend(
                    (list.chunks_exact(ENTRY))
                        .chain(fresh.chunks_exact(ENTRY))
                        .map(packed),
                );
                // The batch's docs that took an entry so far, as entries.
                added.clear();
                // A value whose list and batch docs are those of a value met before
                // shares the same docs with the same batch docs: its shares are that
                // value's, counted once more, not expanded again.
                let expand = match part.same.seen(&old, group, tmpl, from, part.shares.len()) {
                    Seen::Again(g) => {
                        part.same.groups[g].weight += 1;
                        false
                    }
                    Seen::First | Seen::Small => true,
                };
                for (_, i) in group {
                    let all = old.iter().chain(&added).copied();
                    let kept = *i as usize >= from;
                    // A template value is no lead to the doc's content.
                    let searched = kept && !holds_posting_key(tmpl[*i as usize], *v);
                    if list.len() + fresh.len() + added.len() * ENTRY > cap_bytes {
                        if kept {
                            part.overs.push((*i, *v));
                        }
                        if searched {
                            part.heads
                                .extend(all.take(COMMON_HEAD).map(|e| (*i, e >> 16)));
                        }
                        continue;
                    }
                    if searched && expand {
                        part.shares.extend(all.map(|e| (*i, e)));
                    }
                    let d = &docs[*i as usize];
                    let n = entry_counts[*i as usize].min(u16::MAX as usize) as u16;
                    added.push(packed(&entry(d.id, d.level, n)));
                }
                part.same.expanded(part.shares.len());
            }
        }
    }
    part.keys = keys;
    Ok(())
}

/// Shares a value's group expands at least, for its list and group to be remembered
/// ([`Same`]): below it, comparing them costs about what expanding does.
const SAME_MIN_SHARES: usize = 64;

/// Most times a group's shares count ([`Share`] keeps the weight in a byte).
const MAX_WEIGHT: u32 = 255;

/// What [`Same::seen`] found.
enum Seen {
    /// Too small to remember: expanded.
    Small,
    /// Remembered now: expanded, its shares the next ones.
    First,
    /// The same as this remembered group: its shares count once more.
    Again(usize),
}

/// The values of one key range whose lists and groups of batch docs are the same.
///
/// A template's values are on the same pages, so until their lists reach the cap they
/// hold the same docs, and the same batch docs take an entry in each: each batch doc
/// shares the same docs through each of them. Expanded value by value, a redesign sweep
/// of the generated benchmark made 108 M shares, nine in ten for a list and group seen
/// before; each list and group is expanded once and its shares weighted by how many
/// values have it.
#[derive(Default)]
struct Same {
    /// Hash of a remembered list and group → its index in `groups` (the latest).
    by_hash: crate::index::postings::U64Map<u32>,
    /// Remembered lists and groups, one after another (see [`Same::key`]).
    keys: Vec<u64>,
    /// Remembered groups.
    groups: Vec<Group>,
    /// The key being looked up.
    key: Vec<u64>,
    /// The group just remembered, waiting for its shares' end.
    open: Option<usize>,
}

/// A remembered list and group: where its key is, where its shares are in the key
/// range's, and how many values have it.
struct Group {
    key: std::ops::Range<usize>,
    shares: std::ops::Range<usize>,
    weight: u32,
}

impl Same {
    fn clear(&mut self) {
        self.by_hash.clear();
        self.keys.clear();
        self.groups.clear();
        self.open = None;
    }

    /// Whether the list `old` and the `group` of batch docs (each one's shares decided
    /// by whether its pairs are made, from `from`, and by its template) are remembered;
    /// remembered now if not and large enough, its shares starting at `at`.
    fn seen(
        &mut self,
        old: &[u64],
        group: &[(u64, u32)],
        tmpl: &[&[u32]],
        from: usize,
        at: usize,
    ) -> Seen {
        let n = group.len();
        if old.len() * n + n * n.saturating_sub(1) / 2 < SAME_MIN_SHARES {
            return Seen::Small;
        }
        // The list, then each batch doc with whether it is kept and searched: all that
        // decides the shares.
        self.key.clear();
        self.key.push(old.len() as u64);
        self.key.extend_from_slice(old);
        self.key.extend(group.iter().map(|(v, i)| {
            let kept = *i as usize >= from;
            let searched = kept && !holds_posting_key(tmpl[*i as usize], *v);
            u64::from(*i) | u64::from(kept) << 32 | u64::from(searched) << 33
        }));
        let hash = xxhash_rust::xxh3::xxh3_64(as_bytes(&self.key));
        if let Some(&g) = self.by_hash.get(&hash) {
            let group = &self.groups[g as usize];
            if group.weight < MAX_WEIGHT && self.keys[group.key.clone()] == self.key[..] {
                return Seen::Again(g as usize);
            }
        }
        let start = self.keys.len();
        self.keys.extend_from_slice(&self.key);
        self.by_hash.insert(hash, self.groups.len() as u32);
        self.open = Some(self.groups.len());
        self.groups.push(Group {
            key: start..self.keys.len(),
            shares: at..at,
            weight: 1,
        });
        Seen::First
    }

    /// The shares of the group just remembered end at `end`.
    fn expanded(&mut self, end: usize) {
        if let Some(g) = self.open.take() {
            self.groups[g].shares.end = end;
        }
    }
}

/// The bytes of a slice of u64 (for hashing).
fn as_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding and any byte is a valid u8; the length is in bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// One doc's counts: the docs sharing its values (`shares`: their entries, weighted, [`share`]) counted,
/// which of them may reach the floor (the prefilter on counts), and the heads of
/// over-cap lists when most of its values are boilerplate. Its pairs (without
/// estimates) and the docs to compare, ascending.
fn counts(
    doc: &NewDoc,
    tmpl: &[u32],
    shares: &mut [u64],
    overs: &[u64],
    heads: &[u64],
    floor: f64,
) -> (DocPairs, Vec<u64>) {
    shares.sort_unstable();
    let mut shared: Vec<Shared> = Vec::new();
    for s in shares.iter() {
        let (e, w) = (s >> 8, (s & 0xff) as u32);
        match shared.last_mut() {
            Some(s) if s.doc == e >> 16 => s.count += w,
            _ => {
                let (d, level, values) = entry_fields(&e.to_be_bytes()[1..]);
                shared.push(Shared {
                    doc: d,
                    count: w,
                    level,
                    values,
                });
            }
        }
    }
    let mut over = vec![false; doc.values.len()];
    for v in overs {
        if let Ok(k) = doc.values.binary_search(v) {
            over[k] = true;
        }
    }
    // Its posting values at each coarser level (its content's, on content).
    let plevel = doc.level;
    let mut at_level = [0u32; 65];
    for v in doc.values.iter().filter(|v| !holds_posting_key(tmpl, **v)) {
        let tz = posting_key_tz(*v) as usize;
        for slot in at_level.iter_mut().take(tz + 1).skip(plevel as usize) {
            *slot += 1;
        }
    }
    // Posting values are a uniform sample of both sketches at the coarser posting
    // level, so the shared count already estimates resemblance and containments. A
    // candidate is read and compared only when one of those could still reach the edge
    // floor: within 3 standard deviations of it (a pair at the clustering threshold is
    // never dropped; only pairs far under the floor are). Measured on 20k pages x 2
    // sweeps: the same edges and unions as 4 sigma, 45% fewer reads.
    let reachable = |est: f64, m: f64| within_reach(est, m, floor, PREFILTER_SIGMAS);
    let kept: Vec<u64> = shared
        .iter()
        .filter(|c| {
            let level = plevel.max(c.level).min(64);
            let mine = at_level[level as usize] as f64;
            let theirs = c.values as f64 / f64::powi(2.0, (level - c.level) as i32);
            let n = c.count as f64;
            let union = (mine + theirs - n).max(n);
            reachable(n / union, union)
                || reachable(n / theirs.max(n), theirs)
                || reachable(n / mine.max(n), mine)
        })
        .map(|c| c.doc)
        .collect();
    // Mostly over-cap content: also the heads of those lists (see COMMON_HEAD).
    let compare_with = if tmpl.is_empty() {
        with_heads(kept, &over, heads)
    } else {
        let content: Vec<bool> = (doc.values.iter().zip(&over))
            .filter(|(v, _)| !holds_posting_key(tmpl, **v))
            .map(|(_, o)| *o)
            .collect();
        with_heads(kept, &content, heads)
    };
    let pairs = DocPairs {
        over,
        examined: (shared.len() + heads.len()) as u64,
        ..Default::default()
    };
    (pairs, compare_with)
}

/// The waiting docs from `from` on (below `end`), a batch of them ([`BATCH_NEW_DOCS`]): each with its sweep,
/// its sketch as the first stage stored it (decoded on every core) and its URL. Every
/// doc from `from` to `end` must be waiting.
pub(super) fn read_waiting_docs(
    index: &Index,
    from: u64,
    end: u64,
    threads: usize,
) -> Result<Vec<(u64, u32, StoredSketch, String)>> {
    let waiting = index.unpaired().from(from, BATCH_NEW_DOCS)?;
    let gap = |d: u64| {
        IndexError::Invalid(format!(
            "doc {d} is not waiting for its pairs (unpaired), though every doc from {from} \
             to {end} should be"
        ))
    };
    let last = match waiting.iter().take_while(|(d, _)| *d < end).last() {
        Some((d, _)) => *d,
        _ => return Err(gap(from)),
    };
    let sketches = index.sketches();
    let raw = sketches.raw_range(from, last + 1)?;
    let stored = parallel(threads, &raw, |(d, v)| {
        Ok((*d, sketches.decode_whole(*d, v)?))
    })?;
    let mut out = Vec::with_capacity(stored.len());
    for (k, ((d, Waiting { sweep, url }), (ds, s))) in waiting.into_iter().zip(stored).enumerate() {
        if d != from + k as u64 || ds != d {
            return Err(gap(from + k as u64));
        }
        out.push((d, sweep, s, url));
    }
    if (out.len() as u64) < (last + 1 - from) {
        return Err(gap(from + out.len() as u64));
    }
    Ok(out)
}

/// `f` of each item on up to `threads` threads (the calling one among them), results in
/// the items' order; the first error stops the others' next items. A panic of `f` is
/// that item's error, naming what it said (the ingest stops with a message; before, the
/// thread scope panicked again in the caller and took the process down).
pub fn parallel<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let f = |item: &T| -> Result<R> { super::or_failed("pair-step", || f(item)) };
    let threads = threads.max(1).min(items.len());
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let out: Mutex<Vec<(usize, Result<R>)>> = Mutex::new(Vec::with_capacity(items.len()));
    let work = || {
        let mut mine = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(k) else { break };
            let r = f(item);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            mine.push((k, r));
        }
        if let Ok(mut o) = out.lock() {
            o.extend(mine);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
    let mut out = out
        .into_inner()
        .map_err(|_| IndexError::Invalid("a pair-step thread panicked".into()))?;
    out.sort_unstable_by_key(|(k, _)| *k);
    if let Some(k) = out.iter().position(|(_, r)| r.is_err()) {
        return Err(out.swap_remove(k).1.err().expect("an error"));
    }
    if out.len() != items.len() {
        return Err(IndexError::Invalid("a pair-step thread panicked".into()));
    }
    out.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_choice_goes_by_shared_values_then_doc_up_to_the_first_known_in_full() {
        // (older doc, shared values when it may be the base, whether it is stored
        // against a base when known), in doc order as the pair step makes them.
        let rows = [
            (2, Some(10), None),
            (3, Some(10), Some(true)),
            (5, Some(12), None),
            (7, Some(10), None),
            (8, Some(10), Some(false)),
            (9, Some(9), Some(false)),
            (11, None, None),
            (12, Some(13), Some(true)),
        ];
        let estimates: Vec<PairEstimate> = (rows.iter())
            .map(|(doc, base, against)| PairEstimate {
                doc: *doc,
                edge: None,
                base: *base,
                fits: None,
                against: *against,
                value: None,
            })
            .collect();
        // Doc 12 and doc 3 are no base (stored against one); 5 shares the most; 2, 7, 8
        // tie and go by doc; 8 is known in full, so the choice never gets past it.
        let docs: Vec<u64> = (base_order(&estimates).iter())
            .map(|k| estimates[*k].doc)
            .collect();
        assert_eq!(docs, [5, 2, 7, 8]);
        // With nothing known in full, every doc that may be the base and is not known
        // to be stored against one.
        let unknown: Vec<PairEstimate> = (estimates.iter().cloned())
            .map(|e| PairEstimate {
                against: e.against.filter(|a| *a),
                ..e
            })
            .collect();
        let docs: Vec<u64> = (base_order(&unknown).iter())
            .map(|k| unknown[*k].doc)
            .collect();
        assert_eq!(docs, [5, 2, 7, 8, 9]);
        assert!(base_order(&[]).is_empty());
    }

    #[test]
    fn key_ranges_cover_the_key_space_in_order_and_evenly() {
        let max = (1u64 << (8 * crate::sketch::POSTING_KEY_BYTES)) - 1;
        let keys = [0u64, 1, 1 << 46, 1 << 47, (1 << 47) + 5, max - 1, max];
        for n in [1, 2, 3, 4, 16] {
            let r: Vec<usize> = keys.iter().map(|v| range_of(*v, n)).collect();
            assert_eq!(r[0], 0);
            assert_eq!(r[keys.len() - 1], n - 1);
            assert!(r.windows(2).all(|w| w[0] <= w[1]), "n={n}: {r:?}");
        }
        // Posting keys of hashes fill every range about equally (the first build of
        // this cut took all 64 bits and put every 48-bit key in the first range).
        let mut rng = crate::synth::Rng::new(3);
        let mut count = [0usize; 8];
        for _ in 0..80_000 {
            count[range_of(crate::sketch::posting_key(rng.next_u64()), 8)] += 1;
        }
        assert!(
            count.iter().all(|c| (9_000..11_000).contains(c)),
            "{count:?}"
        );
        // Where each range starts in a doc's keys, in one pass: what a search finds.
        let lists: Vec<Vec<u64>> = (0..50)
            .map(|d| {
                let mut l: Vec<u64> = (0..d * 3)
                    .map(|_| crate::sketch::posting_key(rng.next_u64()))
                    .chain((d % 4 == 0).then_some(max))
                    .collect();
                l.sort_unstable();
                l.dedup();
                l
            })
            .collect();
        let docs: Vec<JoinDoc> = (lists.iter().enumerate())
            .map(|(i, l)| JoinDoc {
                id: i as u64,
                level: 0,
                values: l,
            })
            .collect();
        for n in [1, 3, 8, 16] {
            let b = range_bounds(&docs, n);
            assert_eq!(b.len(), docs.len() * (n + 1));
            for (i, d) in docs.iter().enumerate() {
                for k in 0..=n {
                    let want = d.values.partition_point(|v| range_of(*v, n) < k);
                    assert_eq!(
                        b[i * (n + 1) + k] as usize,
                        want,
                        "doc {i} range {k} of {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_value_like_one_seen_counts_its_shares_again_and_nothing_else_does() {
        // Three values: two with the same list and batch docs, one with another doc.
        let old: Vec<u64> = (0..40u64).map(|d| packed(&entry(d, 0, 9))).collect();
        let (group, other) = ([(7, 0u32), (7, 1), (7, 2)], [(9, 0u32), (9, 1), (9, 3)]);
        let tmpl: Vec<&[u32]> = vec![&[]; 4];
        let mut part = Part::default();
        // What the join does for each value: look it up, expand it unless seen.
        let expand = |part: &mut Part, group: &[(u64, u32)]| {
            let at = part.shares.len();
            match part.same.seen(&old, group, &tmpl, 0, at) {
                Seen::Again(g) => part.same.groups[g].weight += 1,
                Seen::First | Seen::Small => {
                    for (_, i) in group {
                        part.shares.extend(old.iter().map(|e| (*i, *e)));
                    }
                }
            }
            part.same.expanded(part.shares.len());
        };
        expand(&mut part, &group);
        expand(&mut part, &other);
        expand(&mut part, &group);
        assert_eq!(
            part.shares.len(),
            2 * 3 * old.len(),
            "the repeat not expanded"
        );
        part.by_doc(4);
        // Docs 0 and 1 share each old doc through all three values, doc 2 through two,
        // doc 3 through one.
        for (i, want) in [(0, 3), (1, 3), (2, 2), (3, 1)] {
            let mine = part.shares_of(i);
            assert_eq!(mine.len(), old.len() * if i < 2 { 2 } else { 1 });
            let total: u64 = mine.iter().map(|s| s & 0xff).sum();
            assert_eq!(total, want * old.len() as u64, "doc {i}");
            assert!(mine.iter().all(|s| old.contains(&(s >> 8))));
        }
        // A small list and group is never remembered.
        assert!(matches!(
            part.same.seen(&old[..2], &group[..1], &tmpl, 0, 0),
            Seen::Small
        ));
    }

    #[test]
    fn parallel_keeps_the_order_and_the_first_error() {
        let items: Vec<u32> = (0..1000).collect();
        for t in [1, 2, 7] {
            let got = parallel(t, &items, |x| Ok(x * 2)).unwrap();
            assert_eq!(got, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
        let r = parallel(3, &items, |x| {
            if *x == 500 {
                Err(IndexError::Invalid("500".into()))
            } else {
                Ok(*x)
            }
        });
        assert!(matches!(r, Err(IndexError::Invalid(m)) if m == "500"));
    }

    #[test]
    fn a_panic_in_parallel_is_the_callers_error_not_a_panic() {
        let items: Vec<u32> = (0..1000).collect();
        for t in [1, 2, 7] {
            let r = parallel(t, &items, |x| {
                if *x == 321 {
                    panic!("item {x} broke");
                }
                Ok(*x)
            });
            match r {
                Err(IndexError::Failed(m)) => assert!(m.contains("item 321 broke"), "{m}"),
                other => panic!("{t} threads: {:?}", other.map(|v| v.len())),
            }
        }
    }

    #[test]
    fn packed_entries_sort_by_doc_and_keep_their_fields() {
        let a = packed(&entry(5, 3, 40));
        let b = packed(&entry(6, 0, 1));
        assert!(a < b);
        assert_eq!(a >> 16, 5);
        assert_eq!(entry_fields(&a.to_be_bytes()[1..]), (5, 3, 40));
    }
}
