//! The report's one pass over the captures, URL by URL: each URL's state in each sweep,
//! and what that adds to the counts per sweep and per transition, the lifetimes and the
//! change rates.

use std::collections::{BTreeMap, HashSet};

use super::moves::{Arrived, Left};
use super::{days_between, ContentCounts, ReportOptions, SweepDates, SweepRow, UrlCounts};
use crate::index::Result;
use crate::query::Searcher;
use crate::sketch::estimate;
use crate::url::{host_of_surt, surt};

/// A URL's last capture in one sweep.
#[derive(Debug, Clone)]
pub(super) enum State {
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

/// What one pass over the captures counts, URL by URL (its captures are adjacent in
/// key order): per sweep (URLs, docs, births, deaths), per transition (unchanged,
/// changed, gone, new; content that left, URLs that arrived), lifetimes and change rates.
pub(super) struct Tally {
    pub(super) n: usize,
    /// Position of the range's first sweep among all sweeps.
    pub(super) lo: usize,
    /// Mean days between consecutive sweeps of the range.
    pub(super) interval: f64,
    pub(super) minor: f64,
    pub(super) major: f64,
    pub(super) host_filter: Option<String>,
    pub(super) sweeps: Vec<SweepRow>,
    pub(super) docs_in: Vec<HashSet<u64>>,
    /// The doc of each URL's last 2xx capture, per sweep (for mirrors).
    pub(super) live_docs: Vec<Vec<u64>>,
    pub(super) counts: Vec<UrlCounts>,
    pub(super) content: Vec<ContentCounts>,
    /// Per transition: host → (pages changed only in template, URLs live in both).
    pub(super) template_only: Vec<BTreeMap<String, (u64, u64)>>,
    /// The same per host and directory: (host, first directory, first two directories of
    /// the path, as in the SURT) → counts; [`super::sections`] makes sections of them.
    pub(super) dir_only: Vec<BTreeMap<(String, String, String), (u64, u64)>>,
    pub(super) left: Vec<Vec<Left>>,
    pub(super) arrived: Vec<Vec<Arrived>>,
    pub(super) lifetimes: Vec<f64>,
    pub(super) still_live: u64,
    pub(super) rates: Vec<f64>,
    /// host → (URLs, rates)
    pub(super) host_urls: BTreeMap<String, (u64, Vec<f64>)>,
}

impl Tally {
    pub(super) fn new(range: &[SweepDates], lo: usize, opts: &ReportOptions) -> Tally {
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
            dir_only: vec![BTreeMap::new(); n.saturating_sub(1)],
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
    pub(super) fn url(
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
    pub(super) fn births_and_deaths(&mut self, states: &[Option<State>]) {
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
    pub(super) fn transitions(
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
                    let dirs = super::dirs_of(host, surt_key);
                    self.dir_only[i].entry(dirs.clone()).or_default().1 += 1;
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
                                    self.dir_only[i].entry(dirs).or_default().0 += 1;
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
                            surt: surt_key.to_string(),
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
    pub(super) fn lifetime_and_rate(&mut self, host: &str, states: &[Option<State>]) {
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
