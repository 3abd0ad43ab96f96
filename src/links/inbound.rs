//! A sweep's links turned around: the pages linking each URL, and how many URLs each
//! anchor text names, for the `inbound` and `anchor_targets` families. Built from every
//! page's links as ingest commits them (beside the anchor bags' gather) or by a scan of
//! the sweep's `links`; both give the same tables. Without them `inlinks`, `related`'s
//! shared words and `whereis`'s links step read every link of the sweep for each answer
//! (1.7 s a query on a generated sweep of 100,000 pages).

use std::collections::HashMap;

use super::{PageLinksRef, Tokens};

type FastMap<K, V> = HashMap<K, V, ahash::RandomState>;

/// Anchor texts naming at least this many URLs in a sweep are kept (with their count,
/// up to [`MAX_TARGETS`]): fewer, the anchor names the page it links.
pub const MIN_TARGETS: usize = 3;
/// Targets counted per anchor text at most.
pub const MAX_TARGETS: usize = 4;

/// Bytes a [`LinkedBy`] filled by a scan of a sweep's links may hold (about 100 bytes a
/// link): past them the sweep keeps no links by target, and they are read by scans.
pub const BUDGET: usize = 512 << 20;

/// Strings by id, in one buffer: string `i` is `text[at[i]..at[i + 1]]`, found by the
/// 128-bit hash of its bytes (a collision: ~n²/2¹²⁹).
#[derive(Default)]
struct Interned {
    ids: FastMap<u128, u32>,
    text: String,
    at: Vec<usize>,
}

impl Interned {
    fn id(&mut self, s: &str) -> u32 {
        if self.at.is_empty() {
            self.at.push(0);
        }
        let h = xxhash_rust::xxh3::xxh3_128(s.as_bytes());
        if let Some(id) = self.ids.get(&h) {
            return *id;
        }
        let id = (self.at.len() - 1) as u32;
        self.ids.insert(h, id);
        self.text.push_str(s);
        self.at.push(self.text.len());
        id
    }

    fn get(&self, id: u32) -> &str {
        &self.text[self.at[id as usize]..self.at[id as usize + 1]]
    }

    fn len(&self) -> usize {
        self.at.len().saturating_sub(1)
    }

    fn bytes(&self) -> usize {
        self.text.len() + 8 * self.at.len() + 32 * self.ids.len()
    }

    /// Each id's rank in byte order of the strings.
    fn ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.get(*a).cmp(self.get(*b)));
        let mut rank = vec![0u32; order.len()];
        for (r, id) in order.iter().enumerate() {
            rank[*id as usize] = r as u32;
        }
        rank
    }
}

/// The links of a sweep's pages, by the URL they link and by their anchor text.
#[derive(Default)]
pub struct LinkedBy {
    targets: Interned,
    sources: Interned,
    /// Whether each source's links are its last in the sweep (a page written twice:
    /// its second links replace its first).
    live: Vec<bool>,
    /// (target, source) of every link.
    pairs: Vec<(u32, u32)>,
    anchors: Interned,
    /// (anchor, target, source) of every window with an anchor text.
    named: Vec<(u32, u32, u32)>,
    /// The target ids of the links of the page added last, in its order.
    last: Vec<u32>,
}

impl LinkedBy {
    /// Adds the links of page `source` (`tokens` are its words'), replacing any it had.
    pub fn add(&mut self, source: &str, page: &PageLinksRef<'_>, tokens: &Tokens<'_>) {
        // Seen before: its earlier links are dropped, these take a fresh id.
        let h = xxhash_rust::xxh3::xxh3_128(source.as_bytes());
        if let Some(old) = self.sources.ids.remove(&h) {
            self.live[old as usize] = false;
        }
        let s = self.sources.id(source);
        self.live.push(true);
        self.last.clear();
        for l in &page.links {
            let t = self.targets.id(l.target);
            self.last.push(t);
            self.pairs.push((t, s));
            for w in &l.windows {
                let anchor = tokens.span(w.ranges()[1].clone());
                if !anchor.is_empty() {
                    let a = self.anchors.id(anchor);
                    self.named.push((a, t, s));
                }
            }
        }
    }

    /// [`Self::add`] to `linked` while it holds at most [`BUDGET`] bytes; past them it is
    /// emptied (the sweep's links by target are then read by scans).
    pub fn add_within_budget(
        linked: &mut Option<LinkedBy>,
        source: &str,
        page: &PageLinksRef<'_>,
        tokens: &Tokens<'_>,
    ) {
        if let Some(l) = linked {
            l.add(source, page, tokens);
            if l.bytes() > BUDGET {
                *linked = None;
            }
        }
    }

    /// The target ids of the links of the page added last, in its order.
    pub fn last_targets(&self) -> &[u32] {
        &self.last
    }

    /// Targets linked so far (ids are below it).
    pub fn targets(&self) -> usize {
        self.targets.len()
    }

    /// The SURT of target `id`.
    pub fn target(&self, id: u32) -> &str {
        self.targets.get(id)
    }

    /// Bytes held (about).
    pub fn bytes(&self) -> usize {
        self.targets.bytes()
            + self.sources.bytes()
            + self.anchors.bytes()
            + self.live.len()
            + 8 * self.pairs.len()
            + 12 * self.named.len()
    }

    /// Every URL kept ([`Self::keeps`]), in SURT order, with the pages linking it (their
    /// SURTs ascending, each once).
    pub fn each_target(&self, mut each: impl FnMut(&str, &[&str])) {
        let mut keyed: Vec<u64> = (self.pairs.iter())
            .filter(|(_, s)| self.live[*s as usize])
            .map(|(t, s)| ((*t as u64) << 32) | *s as u64)
            .collect();
        keyed.sort_unstable();
        keyed.dedup();
        // The kept targets' runs of `keyed`, then in SURT order (most URLs linked are
        // not kept: sorting only these is a fifth of the strings).
        let mut kept: Vec<&[u64]> = (keyed.chunk_by(|a, b| a >> 32 == b >> 32))
            .filter(|of| Self::keeps(of.len(), || self.is_page(self.target_of(of))))
            .collect();
        kept.sort_unstable_by(|a, b| self.target_of(a).cmp(self.target_of(b)));
        let srank = self.sources.ranks();
        let mut ranked: Vec<(u32, u32)> = Vec::new();
        let mut sources: Vec<&str> = Vec::new();
        for of_target in kept {
            ranked.clear();
            ranked.extend((of_target.iter()).map(|k| (srank[*k as u32 as usize], *k as u32)));
            ranked.sort_unstable();
            sources.clear();
            sources.extend(ranked.iter().map(|(_, s)| self.sources.get(*s)));
            each(self.target_of(of_target), &sources);
        }
    }

    /// The SURT of the target of a run of (target, source) keys.
    fn target_of(&self, of: &[u64]) -> &str {
        self.targets.get((of[0] >> 32) as u32)
    }

    /// Whether a URL linked by `linking` pages of a sweep is kept in `inbound`: when
    /// several pages link it, or it is a page of the sweep with links of its own. Most
    /// URLs a sweep links once are links out of it or to nowhere (89% of a generated
    /// sweep's 1.1 million: 56 MB a sweep kept); a reader that finds no entry for a URL
    /// that is no such page scans the sweep's links.
    pub fn keeps(linking: usize, is_page: impl FnOnce() -> bool) -> bool {
        linking >= 2 || (linking == 1 && is_page())
    }

    /// Whether `surt` is a page of the sweep with links (its last links live).
    fn is_page(&self, surt: &str) -> bool {
        let h = xxhash_rust::xxh3::xxh3_128(surt.as_bytes());
        self.sources
            .ids
            .get(&h)
            .is_some_and(|s| self.live[*s as usize])
    }

    /// Every anchor text naming at least [`MIN_TARGETS`] URLs, in byte order, with
    /// how many (at most [`MAX_TARGETS`]).
    pub fn each_anchor(&self, mut each: impl FnMut(&str, u8)) {
        let mut keyed: Vec<u64> = (self.named.iter())
            .filter(|(_, _, s)| self.live[*s as usize])
            .map(|(a, t, _)| ((*a as u64) << 32) | *t as u64)
            .collect();
        keyed.sort_unstable();
        keyed.dedup();
        let mut wide: Vec<(&str, u8)> = (keyed.chunk_by(|a, b| a >> 32 == b >> 32))
            .filter(|targets| targets.len() >= MIN_TARGETS)
            .map(|targets| {
                let n = targets.len().min(MAX_TARGETS) as u8;
                (self.anchors.get((targets[0] >> 32) as u32), n)
            })
            .collect();
        wide.sort_unstable();
        for (anchor, n) in wide {
            each(anchor, n);
        }
    }
}
