//! Synthetic sweeps with ground truth: a deterministic web of several hosts whose pages
//! are edited, rewritten, moved, mirrored, deleted and created between sweeps, written
//! as real `.warc.gz` files (one gzip member per record), with a JSON file of what
//! happened beside each sweep.
//!
//! Pages have per-host boilerplate (header, navigation, footer shared by every page of
//! the host) around a body of sentences drawn from a Zipf-distributed vocabulary of
//! pseudo-words, so shingle statistics look like text, not noise. Everything is a pure
//! function of the options and the seed (our own SplitMix64, so the corpus never depends
//! on a crate's idea of value stability).

mod changes;
mod rng;
mod truth;
mod vocabulary;
pub mod warc;
mod web;
mod writer;

pub use changes::ChangeRates;
use changes::Planned;
pub use rng::Rng;
pub use truth::{
    exact_jaccard, jaccard_without, union_sorted, very_common, Edit, Gone, Move, Truth, UrlTruth,
    VERY_COMMON_MIN_PAGES, VERY_COMMON_SHARE,
};
use vocabulary::Vocabulary;
use web::{make_host, Page, Web};
use writer::SweepWriter;

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde::Serialize;

use crate::sketch::SketchParams;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Output directory (created).
    pub out: PathBuf,
    /// Number of sweeps.
    pub sweeps: usize,
    /// Pages alive in the first sweep.
    pub pages: usize,
    /// Hosts.
    pub hosts: usize,
    /// Seed of everything.
    pub seed: u64,
    /// Date of the first sweep (`YYYY-MM-DD`); later sweeps follow every `interval_days`.
    pub start: chrono::NaiveDate,
    /// Days between sweeps.
    pub interval_days: i64,
    /// Largest uncompressed bytes per WARC file before a new file is started.
    pub max_file_bytes: u64,
    /// How pages change between sweeps.
    pub rates: ChangeRates,
    /// Hold live pages at `pages`: each later sweep creates as many pages as deletions
    /// and mirrors changed, instead of `rates.create` (sweeps of equal size and change
    /// rate, as the ingest benchmark's cost-per-sweep target needs).
    pub steady: bool,
    /// Sweeps (numbered from 1; the first cannot be one) in which every host changes its
    /// template: head, header, footer, a navigation sidebar and a per-page version line.
    /// Every page then becomes a new doc resembling its predecessor (the truth's edits of
    /// kind `template` give the exact resemblance), as after a site redesign.
    pub redesign: Vec<usize>,
    /// Sections per host (0: none): each is the first segment of its pages' paths and
    /// has a navigation sidebar of its own on its pages only, as a documentation site's
    /// libraries and books do; a redesign gives each a new one.
    pub sections: usize,
    /// Sweeps (numbered from 1; not the first) in which the first section of every host
    /// gets a new sidebar and nothing else of the site's template changes.
    pub section_redesign: Vec<usize>,
    /// Topics (0: none): each page belongs to one, is titled by two of its words, and
    /// links six pages, mostly of its own topic, each link in a sentence of topic words
    /// with the target's title as its anchor. Links follow their target when it moves.
    /// The truth gives each URL's topic.
    pub topics: usize,
}

impl GenOptions {
    /// Options for about `bytes` of uncompressed WARC per sweep.
    pub fn for_size(out: PathBuf, bytes: u64, sweeps: usize, seed: u64) -> GenOptions {
        // A generated page averages about 13 KB with its HTTP and WARC headers (real
        // crawls: 627 MB for 48,625 pages).
        let pages = ((bytes / 13_000) as usize).max(20);
        let hosts = (pages / 400).clamp(4, 200);
        GenOptions {
            out,
            sweeps,
            pages,
            hosts,
            seed,
            start: chrono::NaiveDate::from_ymd_opt(2026, 1, 1).expect("valid date"),
            interval_days: 30,
            max_file_bytes: 256 << 20,
            rates: ChangeRates::default(),
            steady: false,
            redesign: Vec::new(),
            sections: 0,
            section_redesign: Vec::new(),
            topics: 0,
        }
    }
}

/// `1MB`, `500KB`, `2GB`, `2.5GB` or plain bytes → bytes (decimal units).
pub fn parse_size(s: &str) -> Option<u64> {
    let u = s.trim().to_ascii_uppercase();
    let (num, mult) = if let Some(n) = u.strip_suffix("GB") {
        (n, 1e9)
    } else if let Some(n) = u.strip_suffix("MB") {
        (n, 1e6)
    } else if let Some(n) = u.strip_suffix("KB") {
        (n, 1e3)
    } else {
        (u.as_str(), 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && v.is_finite())
        .map(|v| (v * mult) as u64)
}

/// The summary of a generation run.
#[derive(Debug, Clone, Serialize)]
pub struct Generated {
    /// Sweep labels, directories and truth files, in order.
    pub sweeps: Vec<GeneratedSweep>,
    /// Uncompressed WARC bytes written.
    pub bytes: u64,
    /// Compressed bytes written.
    pub compressed_bytes: u64,
}

/// One generated sweep.
#[derive(Debug, Clone, Serialize)]
pub struct GeneratedSweep {
    /// Label (`2026-01`).
    pub label: String,
    /// Date `YYYY-MM-DDT00:00:00Z`.
    pub date: String,
    /// WARC files.
    pub files: Vec<PathBuf>,
    /// Ground truth JSON.
    pub truth: PathBuf,
}

/// Generates the sweeps. Deterministic in `opts`.
pub fn generate(opts: &GenOptions, mut progress: impl FnMut(&str)) -> std::io::Result<Generated> {
    fs::create_dir_all(&opts.out)?;
    let mut rng = Rng::new(opts.seed);
    let vocab = Vocabulary::new(&mut rng, 30_000);
    let hosts = (0..opts.hosts.max(1))
        .map(|i| make_host(i, &vocab, &mut rng))
        .collect();
    let mut web = Web {
        vocab,
        hosts,
        rng,
        next_id: 0,
        next_path: 0,
        params: SketchParams::default(),
        before: None,
        pending: Vec::new(),
        topics: Vec::new(),
        places: Default::default(),
    };
    if opts.sections > 0 {
        web.add_sections(opts.sections);
    }
    if opts.topics > 0 {
        web.add_topics(opts.topics);
    }
    let mut pages: Vec<Page> = (0..opts.pages).map(|_| web.new_page(None)).collect();
    link_pages(&mut web, &mut pages, opts.topics);
    // Each host's very common shingles in the previous sweep (the truth's template).
    let mut common_before: Vec<Vec<u64>> = Vec::new();
    let mut out = Generated {
        sweeps: Vec::new(),
        bytes: 0,
        compressed_bytes: 0,
    };
    for s in 0..opts.sweeps {
        let day = opts.start + chrono::Duration::days(opts.interval_days * s as i64);
        let label = day.format("%Y-%m-%d").to_string();
        let date = format!("{}T00:00:00Z", day.format("%Y-%m-%d"));
        let mut truth = Truth {
            sweep: label.clone(),
            date: date.clone(),
            ..Default::default()
        };
        // (url, status, page index or none, location)
        let mut captures: Vec<Planned> = Vec::new();
        if s == 0 {
            for (i, _) in pages.iter().enumerate() {
                captures.push(Planned::Page {
                    index: i,
                    revisit: false,
                });
            }
            truth.created = pages.iter().map(|p| web.url(p)).collect();
        } else {
            let steady = opts.steady.then_some(opts.pages);
            if opts.redesign.contains(&(s + 1)) {
                web.redesign(s);
            } else if opts.section_redesign.contains(&(s + 1)) {
                web.redesign_first_sections();
            }
            pages = web.evolve(pages, &opts.rates, steady, &mut truth, &mut captures);
            let moved = link_pages(&mut web, &mut pages, opts.topics);
            // A page whose links now point to a moved page's new URL is not the bytes it
            // was: a response, not a revisit.
            for c in captures.iter_mut() {
                if let Planned::Page { index, revisit } = c {
                    if *revisit && pages[*index].links.iter().any(|l| moved.contains(&l.to)) {
                        *revisit = false;
                    }
                }
            }
        }
        common_before = web.settle_truth(&pages, &common_before, &mut truth);
        web.before = None;
        let dir = opts.out.join(format!("sweep-{:02}", s + 1));
        fs::create_dir_all(&dir)?;
        let mut writer =
            SweepWriter::new(&dir, &label, &date, opts.max_file_bytes, web.rng.next_u64())?;
        // Crawl order: shuffled, deterministic.
        let mut order: Vec<usize> = (0..captures.len()).collect();
        for i in (1..order.len()).rev() {
            let j = web.rng.below(i + 1);
            order.swap(i, j);
        }
        for (n, &ci) in order.iter().enumerate() {
            let ts = timestamp_at(&day, n);
            match &captures[ci] {
                Planned::Page { index, revisit } => {
                    let page = &pages[*index];
                    let url = web.url(page);
                    let html = web.render(page);
                    let revisit_of = if *revisit {
                        page.last_full.clone()
                    } else {
                        None
                    };
                    match revisit_of {
                        Some((rdate, rurl)) => {
                            writer.revisit(&url, &ts, &html, &rurl, &rdate)?;
                            truth.urls.push(UrlTruth {
                                url: url.clone(),
                                status: 200,
                                page: Some(page.id),
                                revisit: true,
                                topic: page.topic,
                            });
                        }
                        None => {
                            writer.response(
                                &url,
                                &ts,
                                200,
                                &[("Content-Type", "text/html; charset=utf-8")],
                                html.as_bytes(),
                            )?;
                            truth.urls.push(UrlTruth {
                                url: url.clone(),
                                status: 200,
                                page: Some(page.id),
                                revisit: false,
                                topic: page.topic,
                            });
                        }
                    }
                    let p = &mut pages[*index];
                    if !*revisit || p.last_full.is_none() {
                        p.last_full = Some((ts.clone(), url));
                    }
                    truth.live_pages += 1;
                }
                Planned::Redirect { url, to } => {
                    let body = format!(
                        "<html><body><p>Moved to <a href=\"{to}\">{to}</a></p></body></html>"
                    );
                    writer.response(
                        url,
                        &ts,
                        301,
                        &[("Location", to.as_str()), ("Content-Type", "text/html")],
                        body.as_bytes(),
                    )?;
                    truth.urls.push(UrlTruth {
                        url: url.clone(),
                        status: 301,
                        page: None,
                        revisit: false,
                        topic: None,
                    });
                }
                Planned::NotFound { url, host } => {
                    let body = web.hosts[*host].not_found.clone();
                    writer.response(
                        url,
                        &ts,
                        404,
                        &[("Content-Type", "text/html; charset=utf-8")],
                        body.as_bytes(),
                    )?;
                    truth.urls.push(UrlTruth {
                        url: url.clone(),
                        status: 404,
                        page: None,
                        revisit: false,
                        topic: None,
                    });
                }
            }
        }
        truth.captures = captures.len();
        truth.revisits = truth.urls.iter().filter(|u| u.revisit).count();
        let (files, bytes, cbytes) = writer.finish()?;
        out.bytes += bytes;
        out.compressed_bytes += cbytes;
        truth.files = files
            .iter()
            .map(|f| {
                f.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string()
            })
            .collect();
        truth.urls.sort_by(|a, b| a.url.cmp(&b.url));
        let truth_path = opts.out.join(format!("sweep-{:02}.truth.json", s + 1));
        let mut tf = BufWriter::new(File::create(&truth_path)?);
        serde_json::to_writer_pretty(&mut tf, &truth)?;
        tf.write_all(b"\n")?;
        tf.flush()?;
        progress(&format!(
            "sweep {label}: {} captures, {} moves, {} edits, {} deleted, {} created, {} mirrored, {} revisits",
            truth.captures,
            truth.moves.len(),
            truth.edits.len(),
            truth.deleted.len(),
            truth.created.len(),
            truth.mirror_groups.len(),
            truth.revisits
        ));
        out.sweeps.push(GeneratedSweep {
            label,
            date,
            files,
            truth: truth_path,
        });
    }
    Ok(out)
}

/// With topics: gives the pages without links theirs (new pages), and notes where every
/// page is now. Returns the pages whose URL changed since the last sweep.
fn link_pages(web: &mut Web, pages: &mut [Page], topics: usize) -> std::collections::HashSet<u64> {
    let mut moved = std::collections::HashSet::new();
    if topics == 0 {
        return moved;
    }
    let mut by_topic: Vec<Vec<u64>> = vec![Vec::new(); topics];
    for p in pages.iter() {
        if let Some(t) = p.topic {
            by_topic[t as usize].push(p.id);
        }
        if let Some(was) = web.places.get(&p.id) {
            if was.host != p.host || was.path != p.path {
                moved.insert(p.id);
            }
        }
    }
    for p in pages.iter_mut() {
        if p.topic.is_some() && p.links.is_empty() {
            web.add_links(p, &by_topic);
        }
    }
    web.place(pages);
    moved
}

fn timestamp_at(day: &chrono::NaiveDate, n: usize) -> String {
    let t = day.and_hms_opt(0, 0, 0).expect("midnight") + chrono::Duration::seconds(n as i64);
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}
