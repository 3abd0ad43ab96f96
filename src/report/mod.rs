//! Change over time (the paper's "characterizing how pages change"): for each pair of
//! consecutive sweeps, what became of every URL and where content moved; across all
//! sweeps, how long pages live, and how often they change.
//!
//! Everything is computed from the index in one pass over the `captures` column family
//! (all captures of a URL are adjacent there), plus union-find lookups for clusters and,
//! for content that left its URL without a cluster-mate at a new URL, the on-the-fly
//! resemblance search `whereis` uses. Time grows with the number of captures.
//!
//! Per transition A → B, each URL is classified by its last capture in each sweep:
//! 2xx in A and 2xx in B: `unchanged` (same canonical text), `changed_minor`
//! (resemblance ≥ 0.9), `changed_major` (≥ 0.5), `rewritten` (< 0.5); 2xx in A and 3xx
//! in B: `redirected`; 2xx in A and an error or no capture in B: `gone`; not 2xx in A
//! and 2xx in B: `new`. Content moved: a URL redirected or gone whose content appears in
//! B under a URL first captured in B (by its redirect target, by cluster, or else by
//! content resemblance — both hosts' templates left out — at or above the move floor),
//! within its host or across hosts.

pub mod html;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;

use crate::compact::CompactSketch;
use crate::index::{unionfind, Index, IndexError, Result};
use crate::query::{resemblances, round3, Searcher};
use crate::sketch::{estimate, Sketch};
use crate::url::host_of_surt;
use crate::url::surt;

/// What to report on.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// First sweep (label); default the first.
    pub from: Option<String>,
    /// Last sweep (label); default the last.
    pub to: Option<String>,
    /// Only URLs of this host (`example.com`; `www.` and scheme do not matter).
    pub host: Option<String>,
    /// Lower bound of `changed_minor`.
    pub minor: f64,
    /// Lower bound of `changed_major`.
    pub major: f64,
    /// Least resemblance for a move found by content.
    pub move_floor: f64,
    /// Hosts listed.
    pub top_hosts: usize,
}

impl ReportOptions {
    /// A range and host, with the bands, move floor and list lengths of `config`.
    pub fn from_config(
        config: &crate::config::Config,
        from: Option<String>,
        to: Option<String>,
        host: Option<String>,
    ) -> ReportOptions {
        ReportOptions {
            from,
            to,
            host,
            minor: config.report.minor,
            major: config.report.major,
            move_floor: config.query.move_floor,
            top_hosts: config.report.top_hosts,
        }
    }
}

/// One sweep in range.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SweepRow {
    /// Label.
    pub label: String,
    /// Date (14 digits).
    pub date: String,
    /// URLs captured with 2xx.
    pub urls: u64,
    /// Distinct docs of those captures.
    pub docs: u64,
    /// URLs live here and not in the sweep before (all live URLs in the first sweep).
    pub births: u64,
    /// URLs live in the sweep before and not here (0 in the first sweep).
    pub deaths: u64,
}

/// URL counts of a transition.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct UrlCounts {
    /// Same canonical text.
    pub unchanged: u64,
    /// Resemblance ≥ the minor bound.
    pub changed_minor: u64,
    /// Resemblance in [major, minor).
    pub changed_major: u64,
    /// Resemblance < the major bound.
    pub rewritten: u64,
    /// Not 2xx before, 2xx now.
    pub new: u64,
    /// 2xx before; an error or no capture now.
    pub gone: u64,
    /// 2xx before, 3xx now.
    pub redirected: u64,
}

/// Content moves of a transition.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Moves {
    /// To a new URL on the same host.
    pub within_host: u64,
    /// To a new URL on another host.
    pub across_hosts: u64,
}

/// One pair of consecutive sweeps.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Transition {
    /// Earlier sweep label.
    pub from: String,
    /// Later sweep label.
    pub to: String,
    /// What became of the URLs.
    pub urls: UrlCounts,
    /// Where content went.
    pub moves: Moves,
    /// Clusters live at two or more URLs in the later sweep.
    pub mirrored: u64,
    /// The URLs live in both, classed by *content* resemblance: with the templates of
    /// their host in both sweeps left out ([`crate::template`]), so that a redesign does
    /// not make every page "rewritten".
    pub content: ContentCounts,
    /// Hosts whose template changed, or whose pages changed only in their template:
    /// most pages first.
    pub template_changes: Vec<TemplateChange>,
}

/// URLs live in both sweeps of a transition, by content resemblance.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ContentCounts {
    /// Same canonical text.
    pub unchanged: u64,
    /// Content resemblance ≥ the minor bound.
    pub changed_minor: u64,
    /// Content resemblance in [major, minor).
    pub changed_major: u64,
    /// Content resemblance < the major bound.
    pub rewritten: u64,
}

/// A host's template change in a transition.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TemplateChange {
    /// Host name.
    pub host: String,
    /// Share of the two templates' values that one of them lacks (0: the same template,
    /// 1: all new); absent when the host has a template in only one of the sweeps.
    pub template_changed_share: Option<f64>,
    /// Pages whose content did not change past the minor bound (content resemblance
    /// ≥ `report.minor`) while their full text did (resemblance < `report.minor`): the
    /// change was their template's. (Not exactly 1: the shingles that span a template's
    /// edge and a page's own words change with the template.)
    pub pages_changed_only_in_template: u64,
    /// The host's URLs live in both sweeps.
    pub pages_in_both: u64,
}

impl TemplateChange {
    /// Whether the report says in words that the host changed its template: its template
    /// changed (a share of at least 0.2 of its values) and a tenth of its pages (ten at
    /// least) changed only in template.
    pub fn is_redesign(&self) -> bool {
        let only = self.pages_changed_only_in_template;
        self.template_changed_share
            .is_some_and(|s| s >= LISTED_SHARE)
            && only >= 10
            && only * 10 >= self.pages_in_both
    }
}

/// Template changes listed: a changed share at least this (samples move a template a
/// little from sweep to sweep), or pages changed only in template.
const LISTED_SHARE: f64 = 0.2;

impl Transition {
    /// Names of [`Transition::counts`], as CSV and HTML columns.
    pub const COLUMNS: [&'static str; 10] = [
        "unchanged",
        "changed_minor",
        "changed_major",
        "rewritten",
        "new",
        "gone",
        "redirected",
        "moves_within_host",
        "moves_across_hosts",
        "mirrored",
    ];

    /// Every count of the transition, in [`Transition::COLUMNS`] order.
    pub fn counts(&self) -> [u64; 10] {
        let u = &self.urls;
        [
            u.unchanged,
            u.changed_minor,
            u.changed_major,
            u.rewritten,
            u.new,
            u.gone,
            u.redirected,
            self.moves.within_host,
            self.moves.across_hosts,
            self.mirrored,
        ]
    }
}

/// A distribution summary.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Distribution {
    /// Values summarized.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// First quartile.
    pub p25: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub p75: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Histogram bins, ascending.
    pub histogram: Vec<Bin>,
}

/// One histogram bin: values up to `upto` (inclusive) and above the previous bin's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bin {
    /// Upper bound; `null` for the last, open bin.
    pub upto: Option<f64>,
    /// Values in the bin.
    pub count: u64,
}

impl Distribution {
    fn of(mut v: Vec<f64>, bounds: &[f64]) -> Distribution {
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        let mut histogram: Vec<Bin> = bounds
            .iter()
            .map(|b| Bin {
                upto: Some(*b),
                count: 0,
            })
            .chain(std::iter::once(Bin {
                upto: None,
                count: 0,
            }))
            .collect();
        for x in &v {
            let i = bounds.iter().position(|b| x <= b).unwrap_or(bounds.len());
            histogram[i].count += 1;
        }
        Distribution {
            count: v.len() as u64,
            min: round3(v[0]),
            p25: round3(q(0.25)),
            median: round3(q(0.5)),
            p75: round3(q(0.75)),
            max: round3(v[v.len() - 1]),
            mean: round3(v.iter().sum::<f64>() / v.len() as f64),
            histogram,
        }
    }
}

/// Page lifetimes: days from the first to the last 2xx capture of each URL in range.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Lifetimes {
    /// Days, over URLs with a 2xx capture.
    pub days: Distribution,
    /// URLs still live in the last sweep (their lifetime is a lower bound).
    pub still_live: u64,
}

/// Change rates (Cho & Garcia-Molina's bias-reduced estimator for Poisson change under
/// regular visits: λ = −ln((n − X + 0.5) / (n + 0.5)) / I for X changes seen in n
/// visits I days apart), in changes per day.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChangeRate {
    /// Mean days between consecutive sweeps in range.
    pub interval_days: f64,
    /// Changes per day, over URLs with two or more 2xx captures.
    pub per_day: Distribution,
}

/// One host.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostRow {
    /// Host (`example.com`).
    pub host: String,
    /// URLs with a 2xx capture.
    pub urls: u64,
    /// Content moves away from its URLs.
    pub moves: u64,
    /// Median change rate of its URLs (changes per day).
    pub change_rate_median: f64,
    /// First quartile of its URLs' change rates.
    pub change_rate_p25: f64,
    /// Third quartile of its URLs' change rates.
    pub change_rate_p75: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// Sweeps in range, in date order.
    pub sweeps: Vec<SweepRow>,
    /// Consecutive pairs.
    pub transitions: Vec<Transition>,
    /// Page lifetimes.
    pub lifetimes: Lifetimes,
    /// Change rates.
    pub change_rate: ChangeRate,
    /// Top hosts by moves (then URLs).
    pub hosts: Vec<HostRow>,
    /// Top hosts by median change rate (then URLs).
    pub hosts_by_change_rate: Vec<HostRow>,
}

/// A URL's last capture in one sweep.
#[derive(Debug, Clone)]
enum State {
    Live {
        doc: Option<u64>,
        digest: Option<String>,
        r_prev: Option<f32>,
        cr_prev: Option<f32>,
        ts: String,
    },
    Redirect(Option<String>),
    Error,
}

/// Content that left its URL in a transition.
struct Left {
    host: String,
    doc: u64,
    target: Option<String>,
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
struct Arrived {
    surt: String,
    host: String,
    doc: u64,
}

fn days_between(a: &str, b: &str) -> f64 {
    let p = |s: &str| chrono::NaiveDateTime::parse_from_str(s, "%Y%m%d%H%M%S").ok();
    match (p(a), p(b)) {
        (Some(x), Some(y)) => (y - x).num_seconds() as f64 / 86_400.0,
        _ => 0.0,
    }
}

fn host_name(host_surt: &str) -> String {
    let h = host_surt.trim_end_matches(')');
    let h = h.split(':').next().unwrap_or(h);
    let mut labels: Vec<&str> = h.split(',').collect();
    labels.reverse();
    labels.join(".")
}

/// A sweep's id, label and date.
type SweepDates = (u32, String, String);

/// The sweeps in date order (id, label, date), and the positions of `--from` and `--to`
/// among them.
fn sweeps_in_range(index: &Index, opts: &ReportOptions) -> Result<(Vec<SweepDates>, usize, usize)> {
    let mut all: Vec<SweepDates> = index
        .sweeps()
        .all()?
        .into_iter()
        .map(|(id, sw)| (id, sw.label, sw.date))
        .collect();
    all.sort_by(|a, b| a.2.cmp(&b.2).then(a.0.cmp(&b.0)));
    let pos = |label: &Option<String>, default: usize| -> Result<usize> {
        match label {
            None => Ok(default),
            Some(l) => all.iter().position(|s| &s.1 == l).ok_or_else(|| {
                IndexError::Invalid(format!(
                    "no sweep {l:?} in the index (sweeps: {})",
                    all.iter()
                        .map(|s| s.1.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
        }
    };
    if all.is_empty() {
        return Err(IndexError::Invalid("the index has no sweeps yet".into()));
    }
    let (lo, hi) = (pos(&opts.from, 0)?, pos(&opts.to, all.len() - 1)?);
    if lo > hi {
        return Err(IndexError::Invalid(
            "--from must not come after --to".into(),
        ));
    }
    Ok((all, lo, hi))
}

/// The hosts with most moves, and with the highest median change rate (`top` each).
fn host_rows(
    host_urls: BTreeMap<String, (u64, Vec<f64>)>,
    host_moves: &HashMap<String, u64>,
    top: usize,
) -> (Vec<HostRow>, Vec<HostRow>) {
    let mut hosts: Vec<HostRow> = host_urls
        .into_iter()
        .map(|(h, (urls, r))| {
            let d = Distribution::of(r, &[]);
            HostRow {
                moves: host_moves.get(&h).copied().unwrap_or(0),
                host: host_name(&h),
                urls,
                change_rate_median: d.median,
                change_rate_p25: d.p25,
                change_rate_p75: d.p75,
            }
        })
        .collect();
    hosts.sort_by(|a, b| {
        b.moves
            .cmp(&a.moves)
            .then(b.urls.cmp(&a.urls))
            .then(a.host.cmp(&b.host))
    });
    let mut by_rate = hosts.clone();
    by_rate.sort_by(|a, b| {
        b.change_rate_median
            .total_cmp(&a.change_rate_median)
            .then(b.urls.cmp(&a.urls))
            .then(a.host.cmp(&b.host))
    });
    hosts.truncate(top);
    by_rate.truncate(top);
    (hosts, by_rate)
}

/// Per transition between consecutive sweeps: content that left its URL matched to a
/// URL that arrived (by redirect, by cluster, then by content resemblance above
/// `move_floor`),
/// and clusters live at two or more URLs; with the moves per host.
#[allow(clippy::too_many_arguments)]
fn transitions(
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
        for l in &left[i] {
            // 1. Its redirect target, when that is a new URL.
            let mut to = l
                .target
                .as_ref()
                .and_then(|t| by_surt.get(surt(t).as_str()).copied())
                .filter(|j| !taken[*j]);
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
            if let Some(j) = to {
                taken[j] = true;
                if arr[j].host == l.host {
                    moves.within_host += 1;
                } else {
                    moves.across_hosts += 1;
                }
                *host_moves.entry(l.host.clone()).or_default() += 1;
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

/// What one pass over the captures counts, URL by URL (its captures are adjacent in
/// key order): per sweep (URLs, docs, births, deaths), per transition (unchanged,
/// changed, gone, new; content that left, URLs that arrived), lifetimes and change rates.
struct Tally {
    n: usize,
    /// Position of the range's first sweep among all sweeps.
    lo: usize,
    /// Mean days between consecutive sweeps of the range.
    interval: f64,
    minor: f64,
    major: f64,
    host_filter: Option<String>,
    sweeps: Vec<SweepRow>,
    docs_in: Vec<HashSet<u64>>,
    /// The doc of each URL's last 2xx capture, per sweep (for mirrors).
    live_docs: Vec<Vec<u64>>,
    counts: Vec<UrlCounts>,
    content: Vec<ContentCounts>,
    /// Per transition: host → (pages changed only in template, URLs live in both).
    template_only: Vec<BTreeMap<String, (u64, u64)>>,
    left: Vec<Vec<Left>>,
    arrived: Vec<Vec<Arrived>>,
    lifetimes: Vec<f64>,
    still_live: u64,
    rates: Vec<f64>,
    /// host → (URLs, rates)
    host_urls: BTreeMap<String, (u64, Vec<f64>)>,
}

impl Tally {
    fn new(range: &[SweepDates], lo: usize, opts: &ReportOptions) -> Tally {
        let n = range.len();
        let intervals: Vec<f64> = range
            .windows(2)
            .map(|w| days_between(&w[0].2, &w[1].2))
            .collect();
        Tally {
            n,
            lo,
            interval: if intervals.is_empty() {
                0.0
            } else {
                intervals.iter().sum::<f64>() / intervals.len() as f64
            },
            minor: opts.minor,
            major: opts.major,
            host_filter: opts
                .host
                .as_ref()
                .map(|h| host_of_surt(&surt(h)).to_string()),
            sweeps: range
                .iter()
                .map(|(_, label, date)| SweepRow {
                    label: label.clone(),
                    date: date.clone(),
                    urls: 0,
                    docs: 0,
                    births: 0,
                    deaths: 0,
                })
                .collect(),
            docs_in: vec![HashSet::new(); n],
            live_docs: vec![Vec::new(); n],
            counts: vec![UrlCounts::default(); n.saturating_sub(1)],
            content: vec![ContentCounts::default(); n.saturating_sub(1)],
            template_only: vec![BTreeMap::new(); n.saturating_sub(1)],
            left: (0..n.saturating_sub(1)).map(|_| Vec::new()).collect(),
            arrived: (0..n.saturating_sub(1)).map(|_| Vec::new()).collect(),
            lifetimes: Vec::new(),
            still_live: 0,
            rates: Vec::new(),
            host_urls: BTreeMap::new(),
        }
    }

    /// One URL: its last capture in each sweep of the range (`states`), and the position
    /// among all sweeps of its first capture.
    fn url(
        &mut self,
        s: &Searcher,
        surt_key: &str,
        first_pos: Option<usize>,
        states: &[Option<State>],
    ) -> Result<()> {
        let host = host_of_surt(surt_key).to_string();
        if self.host_filter.as_ref().is_some_and(|h| *h != host) {
            return Ok(());
        }
        self.births_and_deaths(states);
        self.transitions(s, surt_key, &host, first_pos, states)?;
        self.lifetime_and_rate(&host, states);
        Ok(())
    }

    /// URLs, docs, births and deaths per sweep.
    fn births_and_deaths(&mut self, states: &[Option<State>]) {
        let live: Vec<bool> = states
            .iter()
            .map(|x| matches!(x, Some(State::Live { .. })))
            .collect();
        for (i, st) in states.iter().enumerate() {
            if let Some(State::Live { doc, .. }) = st {
                self.sweeps[i].urls += 1;
                if let Some(d) = doc {
                    self.docs_in[i].insert(*d);
                    self.live_docs[i].push(*d);
                }
                if i == 0 || !live[i - 1] {
                    self.sweeps[i].births += 1;
                }
            } else if i > 0 && live[i - 1] {
                self.sweeps[i].deaths += 1;
            }
        }
    }

    /// What became of the URL between consecutive sweeps.
    fn transitions(
        &mut self,
        s: &Searcher,
        surt_key: &str,
        host: &str,
        first_pos: Option<usize>,
        states: &[Option<State>],
    ) -> Result<()> {
        for i in 0..self.n.saturating_sub(1) {
            let c = &mut self.counts[i];
            match (&states[i], &states[i + 1]) {
                (
                    Some(State::Live {
                        doc: da,
                        digest: ga,
                        ..
                    }),
                    Some(State::Live {
                        doc: db,
                        digest: gb,
                        r_prev,
                        cr_prev,
                        ..
                    }),
                ) => {
                    let content = &mut self.content[i];
                    self.template_only[i].entry(host.to_string()).or_default().1 += 1;
                    let same = match (da, db) {
                        (Some(a), Some(b)) => a == b,
                        (None, None) => ga.is_some() && ga == gb,
                        _ => false,
                    };
                    if same {
                        c.unchanged += 1;
                        content.unchanged += 1;
                    } else {
                        let r = match (da, db, r_prev) {
                            (Some(_), Some(_), Some(r)) => Some(*r as f64),
                            (Some(a), Some(b), None) => match (s.sketch(*a)?, s.sketch(*b)?) {
                                (Some(x), Some(y)) => Some(estimate(&x, &y).resemblance),
                                _ => None,
                            },
                            _ => None,
                        };
                        match r {
                            Some(r) if r >= self.minor => c.changed_minor += 1,
                            Some(r) if r >= self.major => c.changed_major += 1,
                            // Changed bytes without text to compare count as rewritten.
                            _ => c.rewritten += 1,
                        }
                        // By content where the ingest compared it, else as above.
                        let cr = match (da, db, cr_prev) {
                            (Some(_), Some(_), Some(cr)) => Some(*cr as f64),
                            _ => r,
                        };
                        match cr {
                            Some(cr) if cr >= self.minor => {
                                content.changed_minor += 1;
                                // Its text changed past the minor bound, its content not.
                                if cr_prev.is_some() && r.is_some_and(|r| r < self.minor) {
                                    self.template_only[i].entry(host.to_string()).or_default().0 +=
                                        1;
                                }
                            }
                            Some(cr) if cr >= self.major => content.changed_major += 1,
                            _ => content.rewritten += 1,
                        }
                    }
                }
                (Some(State::Live { doc, .. }), later) => {
                    let target = match later {
                        Some(State::Redirect(t)) => {
                            c.redirected += 1;
                            t.clone()
                        }
                        _ => {
                            c.gone += 1;
                            None
                        }
                    };
                    if let Some(d) = doc {
                        self.left[i].push(Left {
                            host: host.to_string(),
                            doc: *d,
                            target,
                        });
                    }
                }
                (_, Some(State::Live { doc, .. })) => {
                    c.new += 1;
                    // First captured in the later sweep: a place content can move to.
                    if first_pos == Some(self.lo + i + 1) {
                        if let Some(d) = doc {
                            self.arrived[i].push(Arrived {
                                surt: surt_key.to_string(),
                                host: host.to_string(),
                                doc: *d,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Lifetime and change rate over its 2xx captures in range.
    fn lifetime_and_rate(&mut self, host: &str, states: &[Option<State>]) {
        // Lifetime and change rate over its 2xx captures in range.
        let lives: Vec<(usize, &String, Option<u64>)> = states
            .iter()
            .enumerate()
            .filter_map(|(i, x)| match x {
                Some(State::Live { ts, doc, .. }) => Some((i, ts, *doc)),
                _ => None,
            })
            .collect();
        let entry = self.host_urls.entry(host.to_string()).or_default();
        if let (Some(f), Some(l)) = (lives.first(), lives.last()) {
            entry.0 += 1;
            self.lifetimes.push(days_between(f.1, l.1));
            if l.0 == self.n - 1 {
                self.still_live += 1;
            }
            if lives.len() >= 2 && self.interval > 0.0 {
                let visits = (lives.len() - 1) as f64;
                let changes = lives.windows(2).filter(|w| w[0].2 != w[1].2).count() as f64;
                // max(0): no change at all gives ln(1) = -0.
                let rate =
                    (-((visits - changes + 0.5) / (visits + 0.5)).ln() / self.interval).max(0.0);
                self.rates.push(rate);
                entry.1.push(rate);
            }
        }
    }
}

/// What happened, in sentences (the table's and the HTML page's first lines): each host
/// that changed its template in a transition, with its pages changed only in template.
pub fn headlines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for t in &r.transitions {
        let redesigns: Vec<&TemplateChange> = t
            .template_changes
            .iter()
            .filter(|c| c.is_redesign())
            .collect();
        for c in redesigns.iter().take(HEADLINE_HOSTS) {
            out.push(format!(
                "{} changed its template between {} and {}: {} pages changed only in template",
                c.host,
                t.from,
                t.to,
                thousands(c.pages_changed_only_in_template)
            ));
        }
        if redesigns.len() > HEADLINE_HOSTS {
            let rest = &redesigns[HEADLINE_HOSTS..];
            let pages: u64 = rest.iter().map(|c| c.pages_changed_only_in_template).sum();
            out.push(format!(
                "{} more hosts changed their template between {} and {}: {} pages changed only in template",
                thousands(rest.len() as u64),
                t.from,
                t.to,
                thousands(pages)
            ));
        }
    }
    out
}

/// Hosts named one by one per transition in [`headlines`] (the rest in one line).
const HEADLINE_HOSTS: usize = 5;

/// `24500` as `24,500`.
pub fn thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, ch) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Per transition of `range`, the hosts whose template changed (from `templates`) or
/// whose pages changed only in template (`template_only`).
fn template_changes(
    index: &Index,
    range: &[SweepDates],
    template_only: &[BTreeMap<String, (u64, u64)>],
    host_filter: Option<&str>,
) -> Result<Vec<Vec<TemplateChange>>> {
    let mut by_host: BTreeMap<String, HashMap<u32, Vec<u32>>> = BTreeMap::new();
    index.templates().for_each(|(host, sweep), t| {
        if host_filter.is_none_or(|h| h == host) {
            by_host.entry(host).or_default().insert(sweep, t.values);
        }
        Ok(true)
    })?;
    let mut out = Vec::new();
    for (i, only) in template_only.iter().enumerate() {
        let (a, b) = (range[i].0, range[i + 1].0);
        let mut changes = Vec::new();
        let hosts: BTreeSet<&String> = by_host.keys().chain(only.keys()).collect();
        for host in hosts {
            let share = by_host
                .get(host)
                .and_then(|t| Some(crate::template::changed_share(t.get(&a)?, t.get(&b)?)));
            let (pages, both) = only.get(host).copied().unwrap_or((0, 0));
            if pages > 0 || share.is_some_and(|s| s >= LISTED_SHARE) {
                changes.push(TemplateChange {
                    host: host_name(host),
                    template_changed_share: share.map(round3),
                    pages_changed_only_in_template: pages,
                    pages_in_both: both,
                });
            }
        }
        changes.sort_by(|x, y| {
            (y.pages_changed_only_in_template, &x.host)
                .cmp(&(x.pages_changed_only_in_template, &y.host))
        });
        out.push(changes);
    }
    Ok(out)
}

/// Builds the report.
pub fn report(index: &Index, opts: &ReportOptions) -> Result<Report> {
    let s = Searcher::new(index)?;
    let (all, lo, hi) = sweeps_in_range(index, opts)?;
    let range = &all[lo..=hi];
    let slot: HashMap<u32, usize> = range.iter().enumerate().map(|(i, s)| (s.0, i)).collect();
    // Sweep id → place among all sweeps (by date).
    let position: HashMap<u32, usize> = all.iter().enumerate().map(|(i, s)| (s.0, i)).collect();
    let mut tally = Tally::new(range, lo, opts);

    // One URL at a time: its captures are adjacent in key order. A report on one host
    // reads that host's captures only (its SURT keys share the host's prefix).
    let prefix = tally.host_filter.clone().unwrap_or_default();
    let mut cur_surt = String::new();
    let mut first_sweep_pos: Option<usize> = None; // position in `all` of its first capture
    let mut states: Vec<Option<State>> = vec![None; range.len()];
    let mut finish = |surt_key: &str, first_pos: Option<usize>, states: &mut Vec<Option<State>>| {
        let r = tally.url(&s, surt_key, first_pos, states);
        states.iter_mut().for_each(|x| *x = None);
        r
    };
    index
        .captures()
        .scan_prefix_rows(prefix.as_bytes(), |(key_surt, ts, c)| {
            if key_surt != cur_surt {
                if !cur_surt.is_empty() {
                    finish(&cur_surt, first_sweep_pos, &mut states)?;
                }
                cur_surt = key_surt.to_string();
                first_sweep_pos = None;
            }
            let p = position.get(&c.sweep).copied();
            first_sweep_pos = match (first_sweep_pos, p) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let Some(&i) = slot.get(&c.sweep) else {
                return Ok(true);
            };
            let st = match c.status {
                Some(code) if (300..400).contains(&code) => State::Redirect(c.redirect.clone()),
                Some(code) if !(200..300).contains(&code) => State::Error,
                _ => State::Live {
                    doc: c.doc,
                    digest: c.digest.clone(),
                    r_prev: c.r_prev,
                    cr_prev: c.cr_prev,
                    ts: ts.to_string(),
                },
            };
            states[i] = Some(st);
            Ok(true)
        })?;
    if !cur_surt.is_empty() {
        finish(&cur_surt, first_sweep_pos, &mut states)?;
    }

    // Moves and mirrors per transition.
    let ids: Vec<u32> = range.iter().map(|r| r.0).collect();
    let (mut transitions, host_moves) = transitions(
        &s,
        opts.move_floor,
        &tally.sweeps,
        &ids,
        &tally.counts,
        &tally.left,
        &tally.arrived,
        &tally.live_docs,
    )?;
    let templates = template_changes(
        index,
        range,
        &tally.template_only,
        tally.host_filter.as_deref(),
    )?;
    for ((t, changes), content) in transitions.iter_mut().zip(templates).zip(tally.content) {
        t.content = content;
        t.template_changes = changes;
    }
    let mut sweeps = tally.sweeps;
    for (i, row) in sweeps.iter_mut().enumerate() {
        row.docs = tally.docs_in[i].len() as u64;
    }
    let (hosts, by_rate) = host_rows(tally.host_urls, &host_moves, opts.top_hosts);
    Ok(Report {
        sweeps,
        transitions,
        lifetimes: Lifetimes {
            days: Distribution::of(tally.lifetimes, &[0.0, 7.0, 30.0, 90.0, 180.0, 365.0]),
            still_live: tally.still_live,
        },
        change_rate: ChangeRate {
            interval_days: round3(tally.interval),
            per_day: Distribution::of(tally.rates, &[0.0, 0.001, 0.003, 0.01, 0.03, 0.1]),
        },
        hosts,
        hosts_by_change_rate: by_rate,
    })
}
