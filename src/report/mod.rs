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

pub mod changes;
pub mod html;
mod moves;
mod tally;

use moves::transitions;
use tally::{State, Tally};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;

use crate::access::Reader;
use crate::index::{Index, IndexError, Result};
use crate::query::{round3, Prepared, Searcher};

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
    /// Found by the old URL's redirect to the new one.
    pub by_redirect: u64,
    /// Found by content: the same cluster, or content resemblance at or above the move
    /// floor.
    pub by_content: u64,
    /// Found by links: the pages that linked the old URL link the new one instead, with
    /// the same anchor text (a page renamed and rewritten).
    pub by_links: u64,
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

/// A host's template change in a transition, or a section's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TemplateChange {
    /// Host name.
    pub host: String,
    /// The section (a path prefix of the host's URLs, as in their SURT keys, e.g.
    /// `/docs/amdgpu/`) whose pages changed only in template while the rest of the
    /// host's did not; null for the whole host.
    pub section: Option<String>,
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
    /// A section's is named when a tenth of its pages (ten at least) changed only in
    /// template.
    pub fn is_redesign(&self) -> bool {
        let only = self.pages_changed_only_in_template;
        (self.section.is_some()
            || self
                .template_changed_share
                .is_some_and(|s| s >= LISTED_SHARE))
            && only >= 10
            && only * 10 >= self.pages_in_both
    }

    /// A whole host's (SURT `host_surt`): its template's changed share, unrounded, and
    /// its pages changed only in template of those live in both sweeps.
    fn of_host(host_surt: &str, share: Option<f64>, pages: u64, both: u64) -> TemplateChange {
        TemplateChange {
            host: host_name(host_surt),
            section: None,
            template_changed_share: share.map(round3),
            pages_changed_only_in_template: pages,
            pages_in_both: both,
        }
    }

    /// The host, and the section if any: `llvm.org/docs/amdgpu/`.
    pub fn place(&self) -> String {
        format!("{}{}", self.host, self.section.as_deref().unwrap_or(""))
    }
}

/// Template changes listed: a changed share at least this (samples move a template a
/// little from sweep to sweep), or pages changed only in template.
const LISTED_SHARE: f64 = 0.2;

impl Transition {
    /// Names of [`Transition::counts`], as CSV and HTML columns.
    pub const COLUMNS: [&'static str; 13] = [
        "unchanged",
        "changed_minor",
        "changed_major",
        "rewritten",
        "new",
        "gone",
        "redirected",
        "moves_within_host",
        "moves_across_hosts",
        "moves_by_redirect",
        "moves_by_content",
        "moves_by_links",
        "mirrored",
    ];

    /// Every count of the transition, in [`Transition::COLUMNS`] order.
    pub fn counts(&self) -> [u64; 13] {
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
            self.moves.by_redirect,
            self.moves.by_content,
            self.moves.by_links,
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

pub(super) fn days_between(a: &str, b: &str) -> f64 {
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
pub(super) type SweepDates = (u32, String, String);

/// The sweeps in date order (id, label, date), and the positions of `--from` and `--to`
/// among them.
fn sweeps_in_range(
    index: &Index,
    reader: &Reader,
    opts: &ReportOptions,
) -> Result<(Vec<SweepDates>, usize, usize)> {
    let mut all: Vec<SweepDates> = index
        .sweeps()
        .all(reader)?
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
                c.place(),
                t.from,
                t.to,
                thousands(c.pages_changed_only_in_template)
            ));
        }
        if redesigns.len() > HEADLINE_HOSTS {
            let rest = &redesigns[HEADLINE_HOSTS..];
            let pages: u64 = rest.iter().map(|c| c.pages_changed_only_in_template).sum();
            let sections = rest.iter().filter(|c| c.section.is_some()).count();
            let what = match sections {
                0 => "hosts",
                n if n == rest.len() => "sections",
                _ => "hosts and sections",
            };
            out.push(format!(
                "{} more {what} changed their template between {} and {}: {} pages changed only in template",
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

/// The first directory and the first two of a URL's path, from its SURT key
/// (`org,llvm)/docs/amdgpu/x.html` → `/docs/`, `/docs/amdgpu/`), with its host; a page
/// at the root is in `/`.
pub(super) fn dirs_of(host: &str, surt_key: &str) -> (String, String, String) {
    let path = surt_key
        .split_once(')')
        .map(|(_, p)| p)
        .unwrap_or("/")
        .split(['?', '#'])
        .next()
        .unwrap_or("/");
    let dirs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // The last segment is the page itself unless the path ends in '/'.
    let n = if path.ends_with('/') {
        dirs.len()
    } else {
        dirs.len().saturating_sub(1)
    };
    let first = match n {
        0 => "/".to_string(),
        _ => format!("/{}/", dirs[0]),
    };
    let second = match n {
        0 | 1 => first.clone(),
        _ => format!("/{}/{}/", dirs[0], dirs[1]),
    };
    (host.to_string(), first, second)
}

/// A host's sections in a transition, from its pages' counts by directory
/// ([`dirs_of`]): its first directories, or the first two where one first directory
/// holds nine tenths of its pages (a site under `/docs/`); `(section, (only, both))`.
fn sections(dirs: &[(&(String, String, String), &(u64, u64))]) -> Vec<(String, (u64, u64))> {
    let mut first: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut second: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for ((_, a, b), (only, both)) in dirs {
        let e = first.entry(a.as_str()).or_default();
        (e.0, e.1) = (e.0 + only, e.1 + both);
        let e = second.entry(b.as_str()).or_default();
        (e.0, e.1) = (e.0 + only, e.1 + both);
    }
    let total: u64 = first.values().map(|c| c.1).sum();
    let largest = first.values().map(|c| c.1).max().unwrap_or(0);
    let chosen = if largest * 10 >= total * 9 {
        second
    } else {
        first
    };
    chosen
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Per transition of `range`, the hosts whose template changed (from `templates`) or
/// whose pages changed only in template (`template_only`), and the sections
/// ([`sections`], from `dir_only`) where a tenth of the pages changed only in template
/// while their host as a whole did not. Only hosts of which the reader may see a
/// capture (`seen`: the hosts of the captures the report read, through the request's
/// access rules) are named: a host the rules hide is not told of by its templates.
fn template_changes(
    index: &Index,
    reader: &Reader,
    range: &[SweepDates],
    template_only: &[BTreeMap<String, (u64, u64)>],
    dir_only: &[BTreeMap<(String, String, String), (u64, u64)>],
    host_filter: Option<&str>,
    seen: &BTreeMap<String, (u64, Vec<f64>)>,
) -> Result<Vec<Vec<TemplateChange>>> {
    let mut by_host: BTreeMap<String, HashMap<u32, Arc<[u32]>>> = BTreeMap::new();
    index.templates().for_each(|(host, sweep), t| {
        if host_filter.is_none_or(|h| h == host) && seen.contains_key(&host) {
            by_host
                .entry(host)
                .or_default()
                .insert(sweep, t.values.into());
        }
        Ok(true)
    })?;
    // Under access rules, as learnt from the pages the reader sees.
    for host in seen
        .keys()
        .filter(|h| host_filter.is_none_or(|f| f == h.as_str()))
    {
        for (sweep, t) in
            crate::index::columns::captures::templates_seen::of_host(index, reader, host)?.iter()
        {
            let ts = by_host.entry(host.clone()).or_default();
            match t {
                Some(t) => ts.insert(*sweep, t.clone()),
                None => ts.remove(sweep),
            };
        }
    }
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
                let whole = TemplateChange::of_host(host, share, pages, both);
                let redesign = whole.is_redesign();
                changes.push(whole);
                if redesign {
                    continue;
                }
                let dirs: Vec<_> = dir_only[i]
                    .range((host.clone(), String::new(), String::new())..)
                    .take_while(|((h, _, _), _)| h == host)
                    .collect();
                let sections = sections(&dirs);
                if sections.len() < 2 {
                    continue;
                }
                for (section, (only, both)) in sections {
                    let c = TemplateChange {
                        host: host_name(host),
                        section: Some(section),
                        template_changed_share: None,
                        pages_changed_only_in_template: only,
                        pages_in_both: both,
                    };
                    if c.is_redesign() {
                        changes.push(c);
                    }
                }
            }
        }
        changes.sort_by(|x, y| {
            (y.pages_changed_only_in_template, &x.host, &x.section).cmp(&(
                x.pages_changed_only_in_template,
                &y.host,
                &y.section,
            ))
        });
        out.push(changes);
    }
    Ok(out)
}

/// Builds the report, of what `reader` may see.
pub fn report(index: &Index, reader: &Reader, opts: &ReportOptions) -> Result<Report> {
    let s = Searcher::with(index, &Prepared::load(index)?, reader.clone());
    let (all, lo, hi) = sweeps_in_range(index, reader, opts)?;
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
        .scan_prefix_rows(reader, prefix.as_bytes(), |(key_surt, ts, c)| {
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
        reader,
        range,
        &tally.template_only,
        &tally.dir_only,
        tally.host_filter.as_deref(),
        &tally.host_urls,
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
