//! Where content went between two sweeps: each page that left its URL (redirected or
//! gone) matched to a URL that arrived, by its redirect target, by cluster, then by
//! content resemblance (both hosts' templates left out) at or above the move floor.

use std::collections::{HashMap, HashSet};

use super::{ContentCounts, Moves, SweepRow, Transition, UrlCounts};
use crate::compact::CompactSketch;
use crate::index::{unionfind, Result};
use crate::query::whereis::{anchors_of, links_successor};
use crate::query::{resemblances, Searcher};
use crate::sketch::Sketch;
use crate::url::surt;

/// Content that left its URL in a transition.
pub(super) struct Left {
    pub(super) surt: String,
    pub(super) host: String,
    pub(super) doc: u64,
    pub(super) target: Option<String>,
}

/// The move matching's candidates in both directions of the one candidate search (as
/// ingest and `similar` run it: shared posting values, and the heads of over-cap lists
/// when a page is mostly boilerplate), on content: each page's search leaves out the
/// posting values of its host's template, and pages are compared with both templates
/// left out, so a redesign neither hides a move nor does a shared template fake one.
/// Ingest searches from a new doc towards older ones, and over-cap lists keep only
/// their oldest docs as heads: so a left doc finds an arrival when its search sees the
/// arrival, or the arrival's search sees it.
struct MoveCandidates {
    /// Arrival doc → arrival indices of this transition.
    by_doc: HashMap<u64, Vec<usize>>,
    /// Left doc → (posting values shared, arrival doc) found by the arrivals' searches.
    backward: HashMap<u64, Vec<(u32, u64)>>,
    /// The sweep ids of the transition (from, to).
    sweeps: (u32, u32),
}

impl MoveCandidates {
    fn new(
        s: &Searcher,
        arr: &[Arrived],
        left: &[Left],
        sweeps: (u32, u32),
    ) -> Result<MoveCandidates> {
        let mut by_doc: HashMap<u64, Vec<usize>> = HashMap::new();
        for (j, a) in arr.iter().enumerate() {
            by_doc.entry(a.doc).or_default().push(j);
        }
        let left_docs: HashSet<u64> = left.iter().map(|l| l.doc).collect();
        let mut backward: HashMap<u64, Vec<(u32, u64)>> = HashMap::new();
        // Each arrival doc searched once, with the template of its first arrival's host.
        let mut arrival_docs: Vec<(u64, usize)> =
            by_doc.iter().map(|(d, js)| (*d, js[0])).collect();
        arrival_docs.sort_unstable();
        for (a, j) in arrival_docs {
            let t = s.template(&arr[j].host, sweeps.1)?;
            for (n, d) in s.content_candidates(a, &t)? {
                if left_docs.contains(&d) {
                    backward.entry(d).or_default().push((n, a));
                }
            }
        }
        Ok(MoveCandidates {
            by_doc,
            backward,
            sweeps,
        })
    }

    /// The untaken arrival whose doc resembles the left page `l` (its sketch `sketch`)
    /// most by content, at or above `floor`; of the candidates, the 16 sharing the most
    /// content posting values are compared.
    fn best(
        &self,
        s: &Searcher,
        arr: &[Arrived],
        l: &Left,
        sketch: &Sketch,
        floor: f64,
        taken: &[bool],
    ) -> Result<Option<usize>> {
        let untaken = |d: u64| {
            self.by_doc
                .get(&d)
                .into_iter()
                .flatten()
                .copied()
                .filter(|j| !taken[*j])
                .min()
        };
        let own = s.template(&l.host, self.sweeps.0)?;
        let mut shared: HashMap<u64, u32> = HashMap::new();
        let forward = s.content_candidates(l.doc, &own)?;
        let backward = self.backward.get(&l.doc).into_iter().flatten().copied();
        for (n, d) in forward.into_iter().chain(backward) {
            if untaken(d).is_some() {
                let e = shared.entry(d).or_insert(0);
                *e = (*e).max(n);
            }
        }
        let mut ranked: Vec<(u32, u64)> = shared.into_iter().map(|(d, n)| (n, d)).collect();
        ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut docs: Vec<u64> = ranked.into_iter().take(16).map(|(_, d)| d).collect();
        docs.sort_unstable();
        let mine = CompactSketch::of(sketch);
        let mut best: Option<(f64, usize)> = None;
        for (d, theirs) in s.compact_sketches(&docs)? {
            let Some(j) = untaken(d) else {
                continue;
            };
            let t = s.template(&arr[j].host, self.sweeps.1)?;
            let r = resemblances(&mine, &own, &theirs, &t).content;
            if r >= floor && best.is_none_or(|(br, bj)| r > br || (r == br && j < bj)) {
                best = Some((r, j));
            }
        }
        Ok(best.map(|(_, j)| j))
    }
}

/// A URL first captured in the later sweep of a transition.
pub(super) struct Arrived {
    pub(super) surt: String,
    pub(super) host: String,
    pub(super) doc: u64,
}

/// Per transition between consecutive sweeps: content that left its URL matched to a
/// URL that arrived (by redirect, by cluster, then by content resemblance above
/// `move_floor`),
/// and clusters live at two or more URLs; with the moves per host.
#[allow(clippy::too_many_arguments)]
pub(super) fn transitions(
    s: &Searcher,
    move_floor: f64,
    sweeps: &[SweepRow],
    ids: &[u32],
    counts: &[UrlCounts],
    left: &[Vec<Left>],
    arrived: &[Vec<Arrived>],
    live_docs: &[Vec<u64>],
) -> Result<(Vec<Transition>, HashMap<String, u64>)> {
    let n = sweeps.len();
    let mut cluster_cache: HashMap<u64, u64> = HashMap::new();
    let mut cluster = |d: u64| -> Result<u64> {
        if let Some(c) = cluster_cache.get(&d) {
            return Ok(*c);
        }
        let (c, _) = unionfind::cluster_of(s.index, d)?;
        cluster_cache.insert(d, c);
        Ok(c)
    };
    let mut host_moves: HashMap<String, u64> = HashMap::new();
    let mut transitions = Vec::new();
    for i in 0..n.saturating_sub(1) {
        let mut moves = Moves::default();
        let arr = &arrived[i];
        let mut taken = vec![false; arr.len()];
        let by_surt: HashMap<&str, usize> = arr
            .iter()
            .enumerate()
            .map(|(j, a)| (a.surt.as_str(), j))
            .collect();
        let mut by_cluster: HashMap<u64, Vec<usize>> = HashMap::new();
        for (j, a) in arr.iter().enumerate() {
            by_cluster.entry(cluster(a.doc)?).or_default().push(j);
        }
        let move_candidates = MoveCandidates::new(s, arr, &left[i], (ids[i], ids[i + 1]))?;
        let mut unmatched: Vec<&Left> = Vec::new();
        let mut matched = |j: usize, l: &Left, moves: &mut Moves, taken: &mut [bool]| {
            taken[j] = true;
            if arr[j].host == l.host {
                moves.within_host += 1;
            } else {
                moves.across_hosts += 1;
            }
            *host_moves.entry(l.host.clone()).or_default() += 1;
        };
        for l in &left[i] {
            // 1. Its redirect target, when that is a new URL.
            let mut to = l
                .target
                .as_ref()
                .and_then(|t| by_surt.get(surt(t).as_str()).copied())
                .filter(|j| !taken[*j]);
            let by_redirect = to.is_some();
            // 2. A new URL in its cluster (same host first).
            if to.is_none() {
                if let Some(js) = by_cluster.get(&cluster(l.doc)?) {
                    to = js
                        .iter()
                        .copied()
                        .filter(|j| !taken[*j])
                        .min_by_key(|j| (arr[*j].host != l.host, *j));
                }
            }
            // 3. A new URL carrying a doc that resembles it above the move floor: the
            // best of those sharing posting values with it.
            if to.is_none() {
                if let Some(sk) = s.sketch(l.doc)? {
                    to = move_candidates.best(s, arr, l, &sk, move_floor, &taken)?;
                }
            }
            match to {
                Some(j) => {
                    if by_redirect {
                        moves.by_redirect += 1;
                    } else {
                        moves.by_content += 1;
                    }
                    matched(j, l, &mut moves, &mut taken);
                }
                None => unmatched.push(l),
            }
        }
        // 4. Where the pages that linked it link instead, with the same anchor text (one
        // scan of the earlier sweep's links for all of them).
        let olds: Vec<&str> = unmatched.iter().map(|l| l.surt.as_str()).collect();
        let inbound = s.index().links().inbound_many(ids[i], &olds)?;
        let anchors = anchors_of(&inbound.iter().collect::<Vec<_>>());
        let spread = s.index().links().anchor_spread(ids[i], &anchors)?;
        for (l, inbound) in unmatched.into_iter().zip(inbound) {
            if inbound.is_empty() {
                continue;
            }
            let found = links_successor(s, &l.surt, (ids[i], ids[i + 1]), inbound, &spread)?;
            let to = found
                .and_then(|(t, _)| by_surt.get(t.as_str()).copied())
                .filter(|j| !taken[*j]);
            if let Some(j) = to {
                moves.by_links += 1;
                matched(j, l, &mut moves, &mut taken);
            }
        }
        // Mirrored: clusters live at two or more URLs in the later sweep.
        let mut per_cluster: HashMap<u64, u64> = HashMap::new();
        for d in &live_docs[i + 1] {
            *per_cluster.entry(cluster(*d)?).or_default() += 1;
        }
        transitions.push(Transition {
            from: sweeps[i].label.clone(),
            to: sweeps[i + 1].label.clone(),
            urls: counts[i].clone(),
            moves,
            mirrored: per_cluster.values().filter(|c| **c >= 2).count() as u64,
            content: ContentCounts::default(),
            template_changes: Vec::new(),
        });
    }
    Ok((transitions, host_moves))
}
