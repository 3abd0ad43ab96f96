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
//!
//! An ingest that writes a sweep's links from the start gathers them as it commits
//! them instead ([`Gather`]) and needs no scan: the scans took a third of a generated
//! 100,000-page sweep's ingest (11.5 of 37 s, three scans of 2.5 million links).

use serde::Serialize;

use super::FastMap;
use crate::index::columns::anchor_bags::AnchorBag;
use crate::index::{Index, Result};
use crate::links::inbound::LinkedBy;
use crate::links::{bag_sample, BagParams, PageLinksRef, Tokens};
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
    /// CPU seconds of gathering the links as they were committed (on a thread of its
    /// own; 0 when the bags were built by scans).
    pub gather_cpu_s: f64,
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
    let mut linked = Some(LinkedBy::default());
    scan(index, sweep, &p, &mut linked, |target, words| {
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
            scan(index, sweep, &p, &mut None, |target, words| {
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
    index
        .anchor_bags()
        .replace_sweep(sweep, &bags, linked.as_ref())?;
    counts.seconds = t0.elapsed().as_secs_f64();
    Ok(counts)
}

/// Calls `each` with every link of the sweep that counts (from the target's own host
/// or not, as the index says): its target and the hashes of its windows' words; and
/// adds every link to `linked` ([`LinkedBy::add_within_budget`]: past its budget the
/// sweep keeps no links by target, read by scans).
fn scan(
    index: &Index,
    sweep: u32,
    p: &BagParams,
    linked: &mut Option<LinkedBy>,
    mut each: impl FnMut(&str, &[u32]),
) -> Result<()> {
    let mut scratch = (Vec::new(), Vec::new());
    index.links().each_link(sweep, |source, page| {
        let tokens = Tokens::of(page.words);
        LinkedBy::add_within_budget(linked, source, page, &tokens);
        page_words(source, page, &tokens, p, &mut scratch, &mut each);
        Ok(true)
    })
}

/// Calls `each` with every link of the page `source` that counts: its target and the
/// hashes of its windows' words (`scratch` holds the page's hashes and a link's words).
fn page_words(
    source: &str,
    page: &PageLinksRef<'_>,
    tokens: &Tokens<'_>,
    p: &BagParams,
    (hashes, words): &mut (Vec<u32>, Vec<u32>),
    mut each: impl FnMut(&str, &[u32]),
) {
    let host = host_of_surt(source);
    hashes.clear();
    hashes.extend(tokens.word_hashes(p.seed));
    for l in &page.links {
        if !p.own_host && host_of_surt(l.target) == host {
            continue;
        }
        words.clear();
        for w in &l.windows {
            for r in w.ranges() {
                words.extend_from_slice(hashes.get(r).unwrap_or(&[]));
            }
        }
        each(l.target, words);
    }
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
        out.push((t.0.clone(), bag_of(mine, t.1, p, &mut counted)));
    }
}

/// The bag of a target linked by `sources` pages whose windows hold `words` (sorted
/// here); `counted` is scratch.
fn bag_of(
    words: &mut [u32],
    sources: u32,
    p: &BagParams,
    counted: &mut Vec<(u64, u32)>,
) -> AnchorBag {
    words.sort_unstable();
    counted.clear();
    for w in words.iter() {
        match counted.last_mut() {
            Some((h, c)) if *h == *w as u64 => *c += 1,
            _ => counted.push((*w as u64, 1)),
        }
    }
    let (elements, level, values) = bag_sample(counted, p);
    AnchorBag {
        elements,
        sources,
        level,
        values,
    }
}

/// Bytes a [`Gather`] may hold: past them it gives up and the sweep's bags are built by
/// scans of `links`, whose memory is bounded ([`MAX_PAIRS`],
/// [`crate::links::inbound::BUDGET`]).
pub const GATHER_BUDGET: usize = 768 << 20;

/// A sweep's links gathered by target as the commit writes them, for its bags without a
/// scan: every target once (its SURT and the pages linking it), each page's words'
/// hashes once, and one (target, run) use per run of them a window holds (one or two a
/// window). A page
/// written again in the sweep (its last capture's links are the ones kept) takes back
/// what its earlier links gave. Gives the bags [`build`] would.
pub struct Gather {
    p: BagParams,
    /// Pages linking each target (by [`LinkedBy`]'s target ids) with a link that counts.
    linkers: Vec<u32>,
    /// Each page's word hashes (its windows' words once), in chunks that are never moved
    /// (a growing vector's copies and fresh pages were half the gather's time); a run of
    /// a window's words is `word_at[i] = (chunk, start, end)`.
    words: Vec<Vec<u32>>,
    word_at: Vec<(u32, u32, u32)>,
    /// (target id, run id | [`FIRST`] for a link's first run); target `u32::MAX` once
    /// taken back. A window is one run, or two when its anchor's tail is not in it.
    uses: Vec<(u32, u32)>,
    /// Each source page's uses, by the 128-bit hash of its SURT.
    sources: FastMap<u128, (usize, usize)>,
    /// Every link, by target and by anchor text (`inbound`, `anchor_targets`).
    linked: LinkedBy,
    /// CPU seconds of the thread that gathered.
    cpu_s: f64,
}

/// Word hashes in a chunk of [`Gather::words`] (16 MiB).
const WORD_CHUNK: usize = 4 << 20;

/// Marks the use of a link's first run: the link's page counts once.
const FIRST: u32 = 1 << 31;
/// The run of a link that has no words (its page still counts).
const NO_WINDOW: u32 = FIRST - 1;

impl Gather {
    /// An empty gather under the index's bag parameters.
    pub fn new(p: BagParams) -> Gather {
        Gather {
            p,
            linkers: Vec::new(),
            words: Vec::new(),
            word_at: Vec::new(),
            uses: Vec::new(),
            sources: FastMap::default(),
            linked: LinkedBy::default(),
            cpu_s: 0.0,
        }
    }

    /// Bytes held (about).
    pub fn bytes(&self) -> usize {
        4 * self.linkers.len()
            + 32 * self.sources.len()
            + 4 * WORD_CHUNK * self.words.len()
            + 12 * self.word_at.len()
            + 8 * self.uses.len()
            + self.linked.bytes()
    }

    /// The links of the page `source` as written to `links` (its earlier ones in the
    /// sweep, if any, replaced).
    pub fn add(&mut self, source: &str, page: &PageLinksRef<'_>) {
        let sh = xxhash_rust::xxh3::xxh3_128(source.as_bytes());
        if let Some((from, to)) = self.sources.get(&sh).copied() {
            for u in &mut self.uses[from..to] {
                if u.1 & FIRST != 0 {
                    if let Some(n) = self.linkers.get_mut(u.0 as usize) {
                        *n = n.saturating_sub(1);
                    }
                }
                u.0 = u32::MAX;
            }
        }
        let from = self.uses.len();
        let host = host_of_surt(source);
        let tokens = Tokens::of(page.words);
        // Every link by target (the bags' target ids are its own).
        self.linked.add(source, page, &tokens);
        if self.linkers.len() < self.linked.targets() {
            self.linkers.resize(self.linked.targets(), 0);
        }
        let ids = self.linked.last_targets();
        // The page's words hashed once, into the chunk its windows' runs point to
        // (windows are not shared between pages: on a generated sweep 2.4 million of
        // 2.6 million were distinct, and looking each up cost more than it saved).
        let counts = |target: &str| self.p.own_host || host_of_surt(target) != host;
        if !page.links.iter().any(|l| counts(l.target)) {
            self.sources.insert(sh, (from, from));
            return;
        }
        let n = tokens.len();
        if self.words.last().is_none_or(|c| c.len() + n > c.capacity()) {
            self.words.push(Vec::with_capacity(WORD_CHUNK.max(n)));
        }
        let chunk = self.words.len() - 1;
        let base = self.words[chunk].len();
        self.words[chunk].extend(tokens.word_hashes(self.p.seed));
        for (l, t) in page.links.iter().zip(ids) {
            if !counts(l.target) {
                continue;
            }
            let t = *t;
            self.linkers[t as usize] += 1;
            let mut first = FIRST;
            for w in &l.windows {
                let [b, a, f] = w.ranges();
                // Before and anchor are one run; after follows it unless tokens lie
                // between (an anchor's past its first tokens).
                let runs = if f.is_empty() {
                    [b.start..a.end, 0..0]
                } else if a.end == f.start {
                    [b.start..f.end, 0..0]
                } else {
                    [b.start..a.end, f]
                };
                for r in runs {
                    if r.is_empty() || r.end > n {
                        continue;
                    }
                    let id = self.word_at.len() as u32;
                    self.word_at.push((
                        chunk as u32,
                        (base + r.start) as u32,
                        (base + r.end) as u32,
                    ));
                    self.uses.push((t, id | first));
                    first = 0;
                }
            }
            if first != 0 {
                self.uses.push((t, NO_WINDOW | FIRST));
            }
        }
        self.sources.insert(sh, (from, self.uses.len()));
    }

    /// The bags of the targets linked by at least [`MIN_LINKING_PAGES`] pages, by
    /// target SURT, and every link by target and anchor text.
    pub fn bags(self) -> (Vec<(String, AnchorBag)>, LinkedBy) {
        let mut uses: Vec<u64> = (self.uses.iter())
            .filter(|u| u.0 != u32::MAX && u.1 & !FIRST != NO_WINDOW)
            .filter(|u| self.linkers[u.0 as usize] >= MIN_LINKING_PAGES)
            .map(|u| ((u.0 as u64) << 32) | (u.1 & !FIRST) as u64)
            .collect();
        uses.sort_unstable();
        let mut out: Vec<(String, AnchorBag)> = Vec::new();
        let (mut mine, mut counted) = (Vec::new(), Vec::new());
        for of_target in uses.chunk_by(|a, b| a >> 32 == b >> 32) {
            let t = (of_target[0] >> 32) as usize;
            mine.clear();
            for u in of_target {
                let (chunk, start, end) = self.word_at[*u as u32 as usize];
                mine.extend_from_slice(&self.words[chunk as usize][start as usize..end as usize]);
            }
            if mine.is_empty() {
                continue;
            }
            let surt = self.linked.target(t as u32);
            out.push((
                surt.to_string(),
                bag_of(&mut mine, self.linkers[t], &self.p, &mut counted),
            ));
        }
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        (out, self.linked)
    }
}

/// A [`Gather`] on a thread of its own, fed each page's links as the commit encodes
/// them for `links` (the commit's thread only copies the bytes).
pub struct Gathering {
    to: crossbeam_channel::Sender<(String, Vec<u8>)>,
    done: crossbeam_channel::Receiver<Option<Gather>>,
}

impl Gathering {
    /// Starts the thread in `scope`.
    pub fn start<'scope>(scope: &'scope std::thread::Scope<'scope, '_>, p: BagParams) -> Gathering {
        let (to, from) = crossbeam_channel::bounded::<(String, Vec<u8>)>(4096);
        let (send_done, done) = crossbeam_channel::bounded(1);
        scope.spawn(move || {
            let cpu = super::thread_cpu();
            let mut gather = Some(Gather::new(p));
            for (source, bytes) in from {
                let Some(g) = &mut gather else { continue };
                // Bytes this run wrote to `links` (a worker's, or a shard's): a failure to
                // read them gives up the gather (the bags are then built from `links`,
                // which reports it). So does a panic: the scan then builds them, on a
                // thread whose panic is the ingest's error.
                let added = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::scan::test_panic("anchor-bag", 100);
                    crate::index::columns::links::with_page_links(&bytes, |page| {
                        g.add(&source, page)
                    })
                }));
                if !matches!(added, Ok(Ok(()))) {
                    gather = None;
                }
                if gather.as_ref().is_some_and(|g| g.bytes() > GATHER_BUDGET) {
                    gather = None;
                }
            }
            if let Some(g) = &mut gather {
                g.cpu_s = super::thread_cpu() - cpu;
            }
            let _ = send_done.send(gather);
        });
        Gathering { to, done }
    }

    /// The links of page `source`, encoded as `links` stores them.
    pub fn add(&self, source: &str, bytes: &[u8]) {
        // A thread that stopped (it panicked) is told by `finish`.
        let _ = self.to.send((source.to_string(), bytes.to_vec()));
    }

    /// What was gathered (None when it did not fit or its thread failed).
    pub fn finish(self) -> Option<Gather> {
        drop(self.to);
        self.done.recv().ok().flatten()
    }
}

/// Writes the bags `gather` holds as sweep `sweep`'s, replacing the ones it had.
pub fn write_gathered(index: &Index, sweep: u32, gather: Gather) -> Result<BagCounts> {
    let t0 = std::time::Instant::now();
    let gather_cpu_s = gather.cpu_s;
    let (bags, linked) = gather.bags();
    index
        .anchor_bags()
        .replace_sweep(sweep, &bags, Some(&linked))?;
    Ok(BagCounts {
        targets: bags.len() as u64,
        words: bags.iter().map(|(_, b)| b.elements as u64).sum(),
        passes: 0,
        seconds: t0.elapsed().as_secs_f64(),
        gather_cpu_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gather's bags equal those of a scan of the same pages' stored links, for pages
    /// of every window shape (overlapping, cut anchors, empty parts), some pages given
    /// twice (their second links replace their first), with and without own-host links.
    #[test]
    fn gathered_bags_equal_scanned_ones_for_any_window_shape() {
        for own_host in [true, false] {
            let p = BagParams {
                own_host,
                sample_target: 8,
                seed: 7,
            };
            let mut gather = Gather::new(p);
            let mut last: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
            for case in 0..300u64 {
                // Pages of two hosts, linking relative paths.
                let host = ["example.org", "other.net"][(case % 2) as usize];
                let url = format!("http://{host}/d/page{}.html", case % 170);
                let source = crate::url::surt(&url);
                let mut links = crate::links::random_page_links(case, &url);
                // The first host's pages link the second's (links from another host).
                for l in &mut links.links {
                    if let Some(path) = l.target.strip_prefix("org,example)") {
                        l.target = format!("net,other){path}");
                    }
                }
                if case % 3 == 0 {
                    let other = crate::url::surt("http://other.net/d/p1.html");
                    links.links.insert(
                        0,
                        crate::links::PageLink {
                            target: other,
                            windows: links
                                .links
                                .first()
                                .map_or(Vec::new(), |l| l.windows.clone()),
                        },
                    );
                    links.links.sort_by(|a, b| a.target.cmp(&b.target));
                    links.links.dedup_by(|a, b| a.target == b.target);
                }
                let bytes = crate::index::columns::links::encode_page_links(&links, 7);
                crate::index::columns::links::with_page_links(&bytes, |page| {
                    gather.add(&source, page)
                })
                .unwrap();
                last.insert(source, bytes);
            }
            // The scan's way, over each page's last links.
            let mut targets = Targets::default();
            let mut pairs: Vec<u64> = Vec::new();
            let mut scratch = (Vec::new(), Vec::new());
            let mut linked = LinkedBy::default();
            for (source, bytes) in &last {
                crate::index::columns::links::with_page_links(bytes, |page| {
                    let tokens = Tokens::of(page.words);
                    linked.add(source, page, &tokens);
                    page_words(source, page, &tokens, &p, &mut scratch, |target, words| {
                        let id = targets.id(target);
                        targets.list[id as usize].1 += 1;
                        pairs.extend(words.iter().map(|h| ((id as u64) << 32) | *h as u64));
                    })
                })
                .unwrap();
            }
            let mut scanned = Vec::new();
            bags_of(&pairs, &targets.list, |_| true, &p, &mut scanned);
            scanned.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let (gathered, gathered_links) = gather.bags();
            // Every link by target and by anchor text alike, whatever the order the pages
            // came in and however often.
            let tables = |l: &LinkedBy| {
                let mut targets: Vec<(String, Vec<String>)> = Vec::new();
                l.each_target(|t, s| {
                    targets.push((t.into(), s.iter().map(|s| s.to_string()).collect()))
                });
                let mut anchors: Vec<(String, u8)> = Vec::new();
                l.each_anchor(|a, n| anchors.push((a.into(), n)));
                (targets, anchors)
            };
            let (targets_g, anchors_g) = tables(&gathered_links);
            assert_eq!(
                (&targets_g, &anchors_g),
                (&tables(&linked).0, &tables(&linked).1)
            );
            let most = targets_g.iter().map(|t| t.1.len()).max();
            assert!(
                targets_g.len() > 5 && most > Some(3),
                "{} {most:?}",
                targets_g.len()
            );
            assert!(targets_g.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(targets_g
                .iter()
                .all(|t| t.1.windows(2).all(|w| w[0] < w[1])));
            assert!(!anchors_g.is_empty(), "{anchors_g:?}");
            assert!(
                scanned.len() > 5,
                "{} of {:?}",
                scanned.len(),
                targets
                    .list
                    .iter()
                    .map(|t| (&t.0, t.1, t.2))
                    .collect::<Vec<_>>()
            );
            assert_eq!(gathered.len(), scanned.len(), "own_host {own_host}");
            for (g, s) in gathered.iter().zip(&scanned) {
                assert_eq!(g.0, s.0);
                assert_eq!(
                    (g.1.elements, g.1.sources, g.1.level, &g.1.values),
                    (s.1.elements, s.1.sources, s.1.level, &s.1.values),
                    "own_host {own_host}, {}",
                    g.0
                );
            }
        }
    }

    /// `TIDEMARK_GATHER_DB=DIR [TIDEMARK_GATHER_SWEEP=ID] cargo test --release --lib gather_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn gather_speed() {
        let db = std::env::var("TIDEMARK_GATHER_DB").unwrap();
        let index =
            Index::open_read_only(std::path::Path::new(&db), &crate::config::Config::default())
                .unwrap();
        let mut pages: Vec<(String, Vec<u8>)> = Vec::new();
        // TIDEMARK_GATHER_SWEEP: the sweep id (1 by default).
        let sweep: u32 = std::env::var("TIDEMARK_GATHER_SWEEP").map_or(1, |s| s.parse().unwrap());
        let prefix = sweep.to_be_bytes();
        // References read where they point, each page's value copied as it is kept.
        index
            .links()
            .scan_raw(&prefix, None, false, |k, v| {
                if !k.starts_with(&prefix) {
                    return Ok(false);
                }
                let source = String::from_utf8_lossy(&k[4..]).into_owned();
                let v = match crate::index::columns::links::same_as_of(v) {
                    Some((s, origin)) => {
                        let kept = index.links().kept_before(s, &source, origin)?;
                        kept.expect("a reference resolves").1
                    }
                    None => v.to_vec(),
                };
                pages.push((source, v));
                Ok(true)
            })
            .unwrap();
        let t = std::time::Instant::now();
        let mut decoded = 0usize;
        for (_, v) in &pages {
            decoded += crate::index::columns::links::with_page_links(v, |l| l.links.len()).unwrap();
        }
        eprintln!("decode {} links: {:?}", decoded, t.elapsed());
        let t = std::time::Instant::now();
        let mut g = Gather::new(params_of(&index).unwrap());
        for (s, v) in &pages {
            crate::index::columns::links::with_page_links(v, |l| g.add(s, l)).unwrap();
        }
        eprintln!("gather: {:?}, {} MB", t.elapsed(), g.bytes() >> 20);
        let t = std::time::Instant::now();
        let (b, linked) = g.bags();
        eprintln!("bags {}: {:?}", b.len(), t.elapsed());
        let t = std::time::Instant::now();
        let (mut n, mut a) = (0usize, 0usize);
        linked.each_target(|_, s| n += s.len());
        linked.each_anchor(|_, _| a += 1);
        eprintln!("{n} links by target, {a} anchors: {:?}", t.elapsed());
    }
}
