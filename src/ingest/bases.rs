//! The base each new doc's sketch is stored against, decided in the pair step (b), not
//! in the commit (c). The rule: the older doc stored in full that shares the most values
//! with it (ties: the lowest id), among those holding at least half of its shingles; if
//! the doc keeps under half of that base's values it is stored in full. A doc stored
//! against a base is no base itself, so the choice runs in doc order: over a batch's docs
//! (cheap: the estimates carry whether each base it may take fits,
//! [`PairEstimate::fits`]), with the batch before's choices carried from its own pair
//! step, as that batch is committed meanwhile. The encodings then run on every core. In
//! the commit they were half of its time with the pairs read from a pairs job's files
//! (rd100k redesign sweep, 2026-11-26: 4.5 of 9.1 CPU-s of the committing thread, mostly
//! reading each base back).

use std::sync::Arc;

use super::pairs::{self, DocPairs, PairEstimate};
use crate::compact::CompactSketch;
use crate::index::columns::sketches::{Sketches, StoredSketch};
use crate::index::columns::Column;
use crate::index::{Index, Result};

/// Which docs of a batch (from `first` on) are stored against a base.
#[derive(Debug, Default)]
pub(super) struct Decided {
    pub(super) first: u64,
    pub(super) against: Vec<bool>,
}

impl Decided {
    fn get(&self, d: u64) -> Option<bool> {
        let k = d.checked_sub(self.first)?;
        self.against.get(k as usize).copied()
    }
}

/// What the decisions read: the batch's new docs (from `first` on, as stored in full and
/// compact), the batch before's decisions, and where older docs' state is found.
pub(super) struct Batch<'a> {
    pub(super) first: u64,
    pub(super) stored: &'a [StoredSketch],
    pub(super) compact: &'a [CompactSketch],
    /// The batch before (committed while this one is paired): its decisions.
    pub(super) before: Option<&'a Decided>,
    /// Sketches of the sweep paired from a job's files whose state the files cannot know
    /// (earlier doc ranges): set as decided.
    pub(super) bits: Option<&'a AgainstBits>,
    /// Compact sketches the pair step holds (the batch before's, those it read or the
    /// cache keeps); other bases are read from the index.
    pub(super) held: &'a (dyn Fn(u64) -> Option<&'a CompactSketch> + Sync),
    /// Waiting docs: stored in full without a template by the first stage; those that
    /// stay so are not encoded again (nor written: [`super::Writer`]'s `doc_pairs`).
    pub(super) stored_in_full: bool,
}

/// Decides each doc's base in doc order and encodes its sketch as stored (`value`,
/// `against` of its pairs), on `threads` cores; `readable` waits until the docs under an
/// id are readable from the index.
pub(super) fn decide(
    index: &Index,
    docs: &mut [DocPairs],
    b: &Batch,
    readable: &(dyn Fn(u64) -> Result<()> + Sync),
    threads: usize,
) -> Result<Decided> {
    let mut against = vec![false; docs.len()];
    // The base chosen (and its estimate), until its encoding is made.
    let mut chosen: Vec<Option<(u64, usize)>> = vec![None; docs.len()];
    for (k, p) in docs.iter().enumerate() {
        let state = |e: &PairEstimate| {
            e.against
                .or_else(|| {
                    let i = e.doc.checked_sub(b.first)?;
                    against.get(i as usize).copied()
                })
                .or_else(|| b.before.and_then(|x| x.get(e.doc)))
                .or_else(|| b.bits.and_then(|x| x.get(e.doc)))
                .unwrap_or(false)
        };
        let mut best: Option<(u32, u64, usize)> = None;
        for (i, e) in p.estimates.iter().enumerate() {
            let Some(common) = e.base else { continue };
            let better = best.is_none_or(|(n, x, _)| common > n || (common == n && e.doc < x));
            if better && !state(e) {
                best = Some((common, e.doc, i));
            }
        }
        if let Some((_, base, i)) = best.filter(|(_, _, i)| p.estimates[*i].fits == Some(true)) {
            against[k] = true;
            chosen[k] = Some((base, i));
        }
    }
    // Encoded ahead by a pairs job's task: taken as they are.
    for (k, p) in docs.iter_mut().enumerate() {
        if let Some((_, i)) = chosen[k] {
            if let Some(v) = p.estimates[i].value.take() {
                p.value = Some(v);
                chosen[k] = None;
            }
        }
    }
    // The bases: of this batch, held, or read (each once).
    let mut wanted: Vec<u64> = chosen
        .iter()
        .flatten()
        .map(|(d, _)| *d)
        .filter(|d| *d < b.first && (b.held)(*d).is_none())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut read: Vec<(u64, CompactSketch)> = Vec::new();
    // (The test of a failing commit makes every pair step wait, as one that reads a base
    // does: the commit beside it must not leave it waiting.)
    if !wanted.is_empty() || crate::scan::test_panics_in("commit") {
        readable(b.first)?;
    }
    if !wanted.is_empty() {
        let chunks: Vec<&[u64]> = wanted.chunks(256).collect();
        let sketches = index.sketches();
        read = pairs::parallel(threads, &chunks, |c| sketches.read_compact(c, None))?
            .into_iter()
            .flatten()
            .collect();
    }
    let base_of = |d: u64| -> Option<&CompactSketch> {
        if let Some(k) = d.checked_sub(b.first) {
            return b.compact.get(k as usize);
        }
        match read.binary_search_by_key(&d, |(x, _)| *x) {
            Ok(k) => Some(&read[k].1),
            Err(_) => (b.held)(d),
        }
    };
    // Each doc's value: against its base, or in full (unless the pair step or the
    // first stage has it: `None`), and whether it is against a base.
    let idx: Vec<usize> = (0..docs.len()).collect();
    let made = pairs::parallel(threads, &idx, |&k| {
        let (stored, compact) = (&b.stored[k], &b.compact[k]);
        if let Some((d, _)) = chosen[k] {
            let against = base_of(d).and_then(|base| stored.against(compact, (d, base)));
            if let Some(a) = against {
                return Ok(Some((Sketches::value(&a), true)));
            }
            // Its base has no stored sketch: in full.
        } else if against[k] {
            return Ok(None);
        }
        let kept = docs[k].value.is_some() || (b.stored_in_full && stored.template == 0);
        Ok((!kept).then(|| (Sketches::value(stored), false)))
    })?;
    for (k, (p, made)) in docs.iter_mut().zip(made).enumerate() {
        if let Some((value, a)) = made {
            p.value = Some(value);
            against[k] = a;
        }
        p.against = against[k];
        if let (true, Some(bits)) = (against[k], b.bits) {
            bits.set(b.first + k as u64);
        }
    }
    Ok(Decided {
        first: b.first,
        against,
    })
}

/// Most encodings a task makes ahead for one doc ([`ahead`]).
const AHEAD: usize = 4;

/// In a pairs job's estimate task: each doc's sketch encoded against the older docs that
/// may be its base, so the commit reads no base. In the order the commit's choice tries
/// them, up to the first whose state the task knows to be stored in full (the sweep's
/// earlier docs are decided only at commit: each may be stored against one itself), at
/// most [`AHEAD`]; the commit encodes a base the task left out itself.
pub(super) fn ahead(
    docs: &mut [DocPairs],
    new: &[pairs::NewDoc],
    first: u64,
    read: &[(u64, CompactSketch)],
    threads: usize,
) -> Result<()> {
    let base_of = |d: u64| -> Option<&CompactSketch> {
        if let Some(k) = d.checked_sub(first) {
            return new.get(k as usize).map(|n| n.compact);
        }
        let k = read.binary_search_by_key(&d, |(x, _)| *x).ok()?;
        Some(&read[k].1)
    };
    let made = pairs::parallel(threads, &(0..docs.len()).collect::<Vec<_>>(), |&k| {
        let p = &docs[k];
        let mut out = Vec::new();
        for i in pairs::base_order(&p.estimates) {
            let e = &p.estimates[i];
            if e.fits == Some(true) {
                let value = base_of(e.doc)
                    .and_then(|base| new[k].stored.against(new[k].compact, (e.doc, base)))
                    .map(|a| Sketches::value(&a));
                out.push((i, value));
                if out.len() == AHEAD {
                    break;
                }
            }
        }
        Ok(out)
    })?;
    for (p, made) in docs.iter_mut().zip(made) {
        for (i, v) in made {
            p.estimates[i].value = v;
        }
    }
    Ok(())
}

/// Which docs of a sweep paired from a job's files are stored against a base: the pair
/// step sets them as it decides, later batches' read them (the files cannot know them).
pub(super) struct AgainstBits {
    first: u64,
    bits: Vec<std::sync::atomic::AtomicBool>,
}

impl AgainstBits {
    pub(super) fn new(first: u64, end: u64) -> Arc<AgainstBits> {
        Arc::new(AgainstBits {
            first,
            bits: (first..end).map(|_| Default::default()).collect(),
        })
    }

    pub(super) fn set(&self, d: u64) {
        if let Some(b) = d
            .checked_sub(self.first)
            .and_then(|i| self.bits.get(i as usize))
        {
            b.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub(super) fn get(&self, d: u64) -> Option<bool> {
        d.checked_sub(self.first)
            .and_then(|i| self.bits.get(i as usize))
            .map(|b| b.load(std::sync::atomic::Ordering::Relaxed))
    }
}
