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

mod rng;
mod truth;
mod vocabulary;
pub mod warc;
mod writer;

pub use rng::Rng;
pub use truth::{exact_jaccard, Edit, Gone, Move, Truth, UrlTruth};
use vocabulary::Vocabulary;
use writer::SweepWriter;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde::Serialize;

use crate::canon::{canonicalize, Canon, MediaKind};
use crate::sketch::{shingles, SketchParams};

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
}

/// Per-transition probabilities for each live page (they are tried in this order).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ChangeRates {
    /// Page deleted (old URL then 404 or gone).
    pub delete: f64,
    /// Page moved to a new URL (same host or another).
    pub moved: f64,
    /// A moved page is also edited a little on the way.
    pub moved_and_edited: f64,
    /// A move goes to another host.
    pub move_across_hosts: f64,
    /// Rewritten: most sentences replaced (resemblance well under 0.5).
    pub rewrite: f64,
    /// Major edit: about a quarter of the sentences replaced.
    pub major_edit: f64,
    /// Minor edit: one to three sentences changed.
    pub minor_edit: f64,
    /// A page is copied to another host (both stay alive).
    pub mirror: f64,
    /// An unchanged page is written as a `revisit` record.
    pub revisit: f64,
    /// New pages per sweep, as a share of live pages.
    pub create: f64,
}

impl Default for ChangeRates {
    fn default() -> Self {
        ChangeRates {
            delete: 0.02,
            moved: 0.03,
            moved_and_edited: 0.3,
            move_across_hosts: 0.4,
            rewrite: 0.02,
            major_edit: 0.04,
            minor_edit: 0.08,
            mirror: 0.01,
            revisit: 0.3,
            create: 0.04,
        }
    }
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

/// One page's content: title and sentences grouped in paragraphs.
#[derive(Debug, Clone, Default, PartialEq)]
struct Content {
    title: Vec<u32>,
    /// (paragraph number, sentence).
    sentences: Vec<(u16, Vec<u32>)>,
}

#[derive(Debug, Clone)]
struct Page {
    /// Stable identity of the page's content line (survives moves).
    id: u64,
    host: usize,
    path: String,
    content: Content,
    /// Date (14 digits) and URL of the last capture with a full response (revisits refer to it).
    last_full: Option<(String, String)>,
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

struct Web {
    vocab: Vocabulary,
    hosts: Vec<Host>,
    rng: Rng,
    next_id: u64,
    next_path: u64,
    params: SketchParams,
    canon: Canon,
    /// The hosts as they were before this sweep's redesign (only during such a sweep):
    /// the previous version of a page is rendered with them.
    before: Option<Vec<Host>>,
}

#[derive(Clone)]
struct Host {
    name: String,
    /// `<head>` markup after the title: metas, links, inline style and script, as real
    /// templates carry (skipped by canonicalization, but read and scanned).
    head: String,
    header: String,
    footer: String,
    not_found: String,
    /// After a redesign: a navigation sidebar and a per-page version line.
    chrome: Option<Chrome>,
}

/// What a redesign adds around every page of a host.
#[derive(Clone)]
struct Chrome {
    /// A navigation sidebar (table of contents), the same on every page.
    sidebar: String,
    /// The version the pages say they document.
    version: String,
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
        canon: Canon::default(),
        before: None,
    };
    let mut pages: Vec<Page> = (0..opts.pages).map(|_| web.new_page(None)).collect();
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
            }
            pages = web.evolve(pages, &opts.rates, steady, &mut truth, &mut captures);
            web.before = None;
        }
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

enum Planned {
    Page { index: usize, revisit: bool },
    Redirect { url: String, to: String },
    NotFound { url: String, host: usize },
}

fn timestamp_at(day: &chrono::NaiveDate, n: usize) -> String {
    let t = day.and_hms_opt(0, 0, 0).expect("midnight") + chrono::Duration::seconds(n as i64);
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn make_host(i: usize, vocab: &Vocabulary, rng: &mut Rng) -> Host {
    const TLDS: &[&str] = &["com", "org", "net", "example"];
    let base = &vocab.words[100 + rng.below(2000)];
    let name = format!("www.{base}{i}.{}", TLDS[i % TLDS.len()]);
    let words = |rng: &mut Rng, n: usize| -> String {
        (0..n)
            .map(|_| vocab.words[vocab.word(rng) as usize].as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut header = format!(
        "<header><div class=\"logo\">{}</div><nav><ul>",
        words(rng, 3)
    );
    for _ in 0..rng.range(6, 10) {
        let n = rng.range(1, 3);
        let label = words(rng, n);
        header.push_str(&format!(
            "<li><a href=\"/{}/\">{label}</a></li>",
            label.replace(' ', "-")
        ));
    }
    header.push_str("</ul></nav></header>\n");
    let n = rng.range(20, 40);
    let footer = format!(
        "<footer><p>{}</p><p>&copy; {} {}</p></footer>\n",
        words(rng, n),
        2000 + i,
        words(rng, 4)
    );
    let not_found = format!(
        "<!DOCTYPE html><html><head><title>Not found</title></head><body>{header}<h1>Page not found</h1><p>The page you asked for is not here.</p>{footer}</body></html>"
    );
    let mut head =
        String::from("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    for i in 0..rng.range(4, 9) {
        head.push_str(&format!(
            "<meta property=\"og:{}\" content=\"{}\">\n",
            vocab.words[rng.below(500)],
            words(rng, 3)
        ));
        head.push_str(&format!(
            "<link rel=\"stylesheet\" href=\"/static/css/{}-{i}.css?v={}\">\n",
            vocab.words[rng.below(500)],
            rng.next_u64() % 100_000
        ));
    }
    head.push_str("<style>\n");
    for _ in 0..rng.range(15, 25) {
        let n = rng.range(2, 5);
        head.push_str(&format!(
            ".{}-{} {{ margin: {}px {}px; color: #{:06x}; font-size: {}rem; }}\n",
            vocab.words[rng.below(800)],
            vocab.words[rng.below(800)],
            rng.below(40),
            n * 4,
            rng.next_u64() & 0xffffff,
            n
        ));
    }
    head.push_str("</style>\n<script>\n");
    for _ in 0..rng.range(15, 30) {
        head.push_str(&format!(
            "  window.{0}_{1} = function({2}) {{ if (!{2}) {{ return document.querySelector('.{1}'); }} return {2}.{0} || {3}; }};\n",
            vocab.words[rng.below(800)], vocab.words[rng.below(800)], vocab.words[rng.below(200)], rng.below(1000)
        ));
    }
    head.push_str("</script>\n");
    Host {
        name,
        head,
        header,
        footer,
        not_found,
        chrome: None,
    }
}

impl Web {
    fn url(&self, p: &Page) -> String {
        format!("https://{}{}", self.hosts[p.host].name, p.path)
    }

    fn new_path(&mut self) -> String {
        self.next_path += 1;
        let a = &self.vocab.words[self.rng.below(3000)];
        let b = &self.vocab.words[self.rng.below(3000)];
        format!("/{a}/{b}-{}.html", self.next_path)
    }

    fn new_content(&mut self) -> Content {
        // Page length: log-normal-ish, median ~45 sentences, from a few to a few hundred.
        let z: f64 = (0..4).map(|_| self.rng.unit()).sum::<f64>() - 2.0;
        let n = ((45.0 * (z * 1.1).exp()) as usize).clamp(2, 600);
        let title = self.vocab.sentence(&mut self.rng)[..4].to_vec();
        let mut sentences = Vec::with_capacity(n);
        let mut para = 0u16;
        for i in 0..n {
            if i > 0 && self.rng.chance(0.2) {
                para += 1;
            }
            sentences.push((para, self.vocab.sentence(&mut self.rng)));
        }
        Content { title, sentences }
    }

    fn new_page(&mut self, host: Option<usize>) -> Page {
        self.next_id += 1;
        let host = host.unwrap_or_else(|| self.rng.below(self.hosts.len()));
        let path = self.new_path();
        let content = self.new_content();
        Page {
            id: self.next_id,
            host,
            path,
            content,
            last_full: None,
        }
    }

    /// Every host changes its template (sweep `s`, counted from 0): a new head, header
    /// and footer, a sidebar of 80–200 words and a version line. The old hosts are kept
    /// for the truth's resemblances until the sweep is planned.
    fn redesign(&mut self, s: usize) {
        let old = self.hosts.clone();
        for (i, h) in self.hosts.iter_mut().enumerate() {
            let fresh = make_host(i, &self.vocab, &mut self.rng);
            let mut sidebar = String::from("<aside class=\"sidebar\"><ul>");
            let mut words = 0;
            let total = self.rng.range(80, 200);
            while words < total {
                let n = self.rng.range(1, 5);
                let label = (0..n)
                    .map(|_| self.vocab.words[self.vocab.word(&mut self.rng) as usize].as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                sidebar.push_str(&format!(
                    "<li><a href=\"/{}.html\">{label}</a></li>",
                    label.replace(' ', "-")
                ));
                words += n;
            }
            sidebar.push_str("</ul></aside>\n");
            *h = Host {
                name: h.name.clone(),
                chrome: Some(Chrome {
                    sidebar,
                    version: format!("{}.{}", 2 + s, self.rng.below(10)),
                }),
                ..fresh
            };
        }
        self.before = Some(old);
    }

    fn render(&self, p: &Page) -> String {
        self.render_with(&self.hosts, p)
    }

    /// The page as rendered with the templates of `hosts`.
    fn render_with(&self, hosts: &[Host], p: &Page) -> String {
        let w = |ids: &[u32]| {
            ids.iter()
                .map(|i| self.vocab.words[*i as usize].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let host = &hosts[p.host];
        let title = w(&p.content.title);
        let mut html = String::with_capacity(16384);
        html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
        html.push_str(&title);
        html.push_str("</title>\n");
        html.push_str(&host.head);
        html.push_str("</head>\n<body>");
        html.push_str(&host.header);
        if let Some(c) = &host.chrome {
            html.push_str(&c.sidebar);
            // A breadcrumb of the page's own path, and the version documented.
            html.push_str("<div class=\"version\">");
            for part in p.path.trim_end_matches(".html").split('/') {
                html.push_str(part);
                html.push_str(" &raquo; ");
            }
            html.push_str(&format!("documentation for version {}</div>\n", c.version));
        }
        html.push_str("<main><h1>");
        html.push_str(&title);
        html.push_str("</h1>\n<p>");
        let mut para = 0;
        for (pi, s) in &p.content.sentences {
            if *pi != para {
                html.push_str("</p>\n<p>");
                para = *pi;
            }
            // Links and emphasis inside the text, decided by the sentence itself (render
            // is a pure function of the content).
            let link_at = if s.len() > 4 && s[0] % 4 == 0 {
                Some(2 + (s[1] as usize) % (s.len() - 3))
            } else {
                None
            };
            for (k, id) in s.iter().enumerate() {
                let word = self.vocab.words[*id as usize].as_str();
                if k > 0 {
                    html.push(' ');
                }
                let cap = |html: &mut String| {
                    if k == 0 {
                        let mut chars = word.chars();
                        if let Some(f) = chars.next() {
                            html.extend(f.to_uppercase());
                            html.push_str(chars.as_str());
                        }
                    } else {
                        html.push_str(word);
                    }
                };
                if Some(k) == link_at {
                    html.push_str(&format!(
                        "<a href=\"/{word}/{}.html\" class=\"inline-link\">",
                        s[0]
                    ));
                    cap(&mut html);
                    html.push_str("</a>");
                } else if s[0] % 7 == 1 && k == 1 {
                    html.push_str("<strong>");
                    cap(&mut html);
                    html.push_str("</strong>");
                } else {
                    cap(&mut html);
                }
            }
            html.push_str(". ");
        }
        html.push_str("</p></main>\n");
        html.push_str(&host.footer);
        html.push_str("</body></html>\n");
        html
    }

    /// Exact Jaccard of the two versions' shingle sets, and the smaller set's size; `a`
    /// as it was rendered before this sweep's redesign, if any.
    ///
    /// Also the exact *content* Jaccard: both sets without the shingles of the templates
    /// of both pages' hosts (before and now), a template's shingles being those of a page
    /// of its host with nothing of its own (no title, path or text). Shingles that span
    /// a template's edge and a page's own words stay content: they are on one page.
    fn jaccard(&mut self, a: &Page, b: &Page) -> (f64, usize, f64) {
        let bare = |host: usize| Page {
            id: 0,
            host,
            path: String::new(),
            content: Content::default(),
            last_full: None,
        };
        let [ha, hb, ta, tb] = {
            let old = self.before.as_deref().unwrap_or(&self.hosts);
            [
                self.render_with(old, a),
                self.render(b),
                self.render_with(old, &bare(a.host)),
                self.render(&bare(b.host)),
            ]
        };
        let (sa, sb) = (self.shingle_set(&ha), self.shingle_set(&hb));
        let (r, min) = exact_jaccard(&sa, &sb);
        let mut template = self.shingle_set(&ta);
        template.extend(self.shingle_set(&tb));
        template.sort_unstable();
        let without = |s: &[u64]| -> Vec<u64> {
            s.iter()
                .copied()
                .filter(|v| template.binary_search(v).is_err())
                .collect()
        };
        let (content, _) = exact_jaccard(&without(&sa), &without(&sb));
        (r, min, content)
    }

    fn shingle_set(&mut self, html: &str) -> Vec<u64> {
        canonicalize(html.as_bytes(), MediaKind::Html, None, &mut self.canon);
        let mut out = Vec::new();
        shingles(self.canon.token_iter(), &self.params, &mut out);
        out
    }

    fn edit(&mut self, c: &mut Content, share: f64, min: usize) {
        let n = c.sentences.len();
        let k = ((n as f64 * share).round() as usize).max(min).min(n.max(1));
        for _ in 0..k {
            let op = self.rng.below(4);
            let i = self.rng.below(c.sentences.len().max(1));
            match op {
                0 if c.sentences.len() > 2 => {
                    c.sentences.remove(i);
                }
                1 => {
                    let para = c.sentences.get(i).map(|s| s.0).unwrap_or(0);
                    let s = self.vocab.sentence(&mut self.rng);
                    c.sentences.insert(i.min(c.sentences.len()), (para, s));
                }
                _ => {
                    if let Some(slot) = c.sentences.get_mut(i) {
                        slot.1 = self.vocab.sentence(&mut self.rng);
                    }
                }
            }
        }
    }

    fn evolve(
        &mut self,
        pages: Vec<Page>,
        r: &ChangeRates,
        steady: Option<usize>,
        truth: &mut Truth,
        caps: &mut Vec<Planned>,
    ) -> Vec<Page> {
        let mut next: Vec<Page> = Vec::with_capacity(pages.len() + pages.len() / 10);
        let mut mirrors: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for page in pages {
            let url = self.url(&page);
            let u = self.rng.unit();
            let mut acc = r.delete;
            if u < acc {
                let status = if self.rng.chance(0.5) {
                    Some(404)
                } else {
                    None
                };
                if status.is_some() {
                    caps.push(Planned::NotFound {
                        url: url.clone(),
                        host: page.host,
                    });
                }
                truth.deleted.push(Gone { url, status });
                continue;
            }
            acc += r.moved;
            if u < acc {
                let mut moved = page.clone();
                if self.rng.chance(r.move_across_hosts) && self.hosts.len() > 1 {
                    let mut h = self.rng.below(self.hosts.len() - 1);
                    if h >= page.host {
                        h += 1;
                    }
                    moved.host = h;
                }
                moved.path = self.new_path();
                moved.last_full = None;
                if self.rng.chance(r.moved_and_edited) {
                    let mut c = moved.content.clone();
                    self.edit(&mut c, 0.03, 1);
                    moved.content = c;
                }
                let (res, min_sh, content_res) = self.jaccard(&page, &moved);
                let to = self.url(&moved);
                let old_status = match self.rng.below(10) {
                    0..=3 => Some(301),
                    4..=6 => Some(404),
                    _ => None,
                };
                match old_status {
                    Some(301) => caps.push(Planned::Redirect {
                        url: url.clone(),
                        to: to.clone(),
                    }),
                    Some(_) => caps.push(Planned::NotFound {
                        url: url.clone(),
                        host: page.host,
                    }),
                    None => {}
                }
                truth.moves.push(Move {
                    from: url,
                    to,
                    old_status,
                    across_hosts: moved.host != page.host,
                    resemblance: res,
                    content_resemblance: content_res,
                    min_shingles: min_sh,
                });
                caps.push(Planned::Page {
                    index: next.len(),
                    revisit: false,
                });
                next.push(moved);
                continue;
            }
            let mut edited = page.clone();
            let kind = {
                acc += r.rewrite;
                if u < acc {
                    let mut c = edited.content.clone();
                    // Keep a few sentences: a rewrite, not a new page.
                    let keep = c.sentences.len() / 8;
                    let mut fresh = self.new_content();
                    fresh.sentences.truncate(c.sentences.len().max(4));
                    fresh.sentences.extend(c.sentences.drain(..keep));
                    fresh.title = c.title.clone();
                    edited.content = fresh;
                    Some("rewrite")
                } else {
                    acc += r.major_edit;
                    if u < acc {
                        let mut c = edited.content.clone();
                        self.edit(&mut c, 0.12, 2);
                        edited.content = c;
                        Some("major")
                    } else {
                        acc += r.minor_edit;
                        if u < acc {
                            let mut c = edited.content.clone();
                            let k = self.rng.range(1, 3);
                            self.edit(&mut c, 0.0, k);
                            edited.content = c;
                            Some("minor")
                        } else {
                            None
                        }
                    }
                }
            };
            let changed = match kind {
                Some(kind) if edited.content != page.content => Some(kind),
                // Same body, new template: a new doc like its predecessor.
                _ if self.before.is_some() => Some("template"),
                _ => None,
            };
            match changed {
                Some(kind) => {
                    let (res, min_sh, content_res) = self.jaccard(&page, &edited);
                    truth.edits.push(Edit {
                        url: url.clone(),
                        kind,
                        resemblance: res,
                        content_resemblance: content_res,
                        min_shingles: min_sh,
                    });
                    edited.last_full = None;
                    caps.push(Planned::Page {
                        index: next.len(),
                        revisit: false,
                    });
                }
                None => {
                    truth.unchanged += 1;
                    let revisit = self.rng.chance(r.revisit);
                    caps.push(Planned::Page {
                        index: next.len(),
                        revisit,
                    });
                }
            }
            if self.rng.chance(r.mirror) && self.hosts.len() > 1 {
                let mut copy = edited.clone();
                let mut h = self.rng.below(self.hosts.len() - 1);
                if h >= copy.host {
                    h += 1;
                }
                copy.host = h;
                copy.path = self.new_path();
                copy.last_full = None;
                self.next_id += 1;
                copy.id = self.next_id;
                let group = mirrors
                    .entry(edited.id)
                    .or_insert_with(|| vec![url.clone()]);
                group.push(self.url(&copy));
                next.push(edited);
                caps.push(Planned::Page {
                    index: next.len(),
                    revisit: false,
                });
                next.push(copy);
                continue;
            }
            next.push(edited);
        }
        let new_pages = match steady {
            Some(live) => live.saturating_sub(next.len()),
            None => (next.len() as f64 * r.create).round() as usize,
        };
        for _ in 0..new_pages {
            let p = self.new_page(None);
            truth.created.push(self.url(&p));
            caps.push(Planned::Page {
                index: next.len(),
                revisit: false,
            });
            next.push(p);
        }
        truth.mirror_groups = mirrors.into_values().collect();
        next
    }
}
