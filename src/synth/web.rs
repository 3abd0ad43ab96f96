//! The web the generator models: hosts with their templates (head, header, footer,
//! a redesign's chrome), pages with content drawn from the vocabulary, and how a page is
//! rendered as HTML.

use super::rng::Rng;
use super::truth::{exact_jaccard, jaccard_without, union_sorted, very_common, Truth};
use super::vocabulary::Vocabulary;
use crate::canon::{canonicalize, Canon, MediaKind};
use crate::sketch::{shingles, SketchParams};

/// One page's content: title and sentences grouped in paragraphs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Content {
    pub(super) title: Vec<u32>,
    /// (paragraph number, sentence).
    pub(super) sentences: Vec<(u16, Vec<u32>)>,
}

#[derive(Debug, Clone)]
pub(super) struct Page {
    /// Stable identity of the page's content line (survives moves).
    pub(super) id: u64,
    pub(super) host: usize,
    pub(super) path: String,
    pub(super) content: Content,
    /// Date (14 digits) and URL of the last capture with a full response (revisits refer to it).
    pub(super) last_full: Option<(String, String)>,
    /// Its topic, with topics on.
    pub(super) topic: Option<u32>,
    /// Its links to other pages (by id: they follow a page that moves), with topics on.
    pub(super) links: Vec<PageLink>,
}

/// A link of a page to another, rendered as one sentence: words, the target's title as
/// the anchor, words.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PageLink {
    pub(super) to: u64,
    pub(super) before: Vec<u32>,
    pub(super) after: Vec<u32>,
}

/// Where a page is and what its title says, by page id: links are rendered with it.
/// A deleted page keeps its last place (the links to it go dead).
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub(super) host: usize,
    pub(super) path: String,
    pub(super) title: Vec<u32>,
}

/// Links a page of a topic has.
pub(super) const LINKS_PER_PAGE: usize = 6;
/// Share of a page's links to pages of its own topic.
pub(super) const IN_TOPIC: f64 = 0.85;
/// Words of each topic.
const TOPIC_WORDS: usize = 6;

pub(super) struct Web {
    pub(super) vocab: Vocabulary,
    pub(super) hosts: Vec<Host>,
    pub(super) rng: Rng,
    pub(super) next_id: u64,
    pub(super) next_path: u64,
    pub(super) params: SketchParams,
    /// The hosts as they were before this sweep's redesign (only during such a sweep):
    /// the previous version of a page is rendered with them.
    pub(super) before: Option<Vec<Host>>,
    /// The sweep's edits and moves whose truth is settled at its end.
    pub(super) pending: Vec<Pending>,
    /// Each topic's words (none: pages have no topics and no links to each other).
    pub(super) topics: Vec<Vec<u32>>,
    /// Every page's place, by id (with topics on).
    pub(super) places: std::collections::HashMap<u64, Place>,
}

#[derive(Clone)]
pub(super) struct Host {
    pub(super) name: String,
    /// `<head>` markup after the title: metas, links, inline style and script, as real
    /// templates carry (skipped by canonicalization, but read and scanned).
    pub(super) head: String,
    pub(super) header: String,
    pub(super) footer: String,
    pub(super) not_found: String,
    /// After a redesign: a navigation sidebar and a per-page version line.
    pub(super) chrome: Option<Chrome>,
    /// Parts of the site (a library, a book), each the first segment of its pages' paths
    /// and with a navigation sidebar of its own on its pages only (none: paths are random
    /// words, as without `--sections`).
    pub(super) sections: Vec<Section>,
}

/// A part of a host's site with its own navigation.
#[derive(Clone)]
pub(super) struct Section {
    /// The first segment of its pages' paths.
    pub(super) name: String,
    /// Its navigation sidebar, on its pages only.
    pub(super) sidebar: String,
}

/// What a redesign adds around every page of a host.
#[derive(Clone)]
pub(super) struct Chrome {
    /// A navigation sidebar (table of contents), the same on every page.
    pub(super) sidebar: String,
    /// The version the pages say they document.
    pub(super) version: String,
}

pub(super) fn make_host(i: usize, vocab: &Vocabulary, rng: &mut Rng) -> Host {
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
        sections: Vec::new(),
    }
}

impl Web {
    pub(super) fn url(&self, p: &Page) -> String {
        format!("https://{}{}", self.hosts[p.host].name, p.path)
    }

    /// A new page's path on `host`: in one of its sections, if it has any.
    pub(super) fn new_path(&mut self, host: usize) -> String {
        self.next_path += 1;
        let sections = self.hosts[host].sections.len();
        let a = if sections > 0 {
            self.hosts[host].sections[self.rng.below(sections)]
                .name
                .clone()
        } else {
            self.vocab.words[self.rng.below(3000)].clone()
        };
        let b = &self.vocab.words[self.rng.below(3000)];
        format!("/{a}/{b}-{}.html", self.next_path)
    }

    /// A navigation sidebar of about `total` words of links, in an element of `class`.
    fn sidebar(&mut self, class: &str, total: usize) -> String {
        let mut sidebar = format!("<aside class=\"{class}\"><ul>");
        let mut words = 0;
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
        sidebar
    }

    /// Gives every host `n` sections, each with its own sidebar of 60–150 words.
    pub(super) fn add_sections(&mut self, n: usize) {
        for h in 0..self.hosts.len() {
            let mut sections: Vec<Section> = Vec::with_capacity(n);
            while sections.len() < n {
                let name = self.vocab.words[self.rng.below(3000)].clone();
                if sections.iter().any(|s| s.name == name) {
                    continue;
                }
                let total = self.rng.range(60, 150);
                let sidebar = self.sidebar("section-nav", total);
                sections.push(Section { name, sidebar });
            }
            self.hosts[h].sections = sections;
        }
    }

    pub(super) fn new_content(&mut self) -> Content {
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

    pub(super) fn new_page(&mut self, host: Option<usize>) -> Page {
        self.next_id += 1;
        let host = host.unwrap_or_else(|| self.rng.below(self.hosts.len()));
        let path = self.new_path(host);
        let mut content = self.new_content();
        let topic = if self.topics.is_empty() {
            None
        } else {
            // A topic's page is titled by two of its words and two of its own.
            let t = self.rng.below(self.topics.len()) as u32;
            let words = &self.topics[t as usize];
            content.title[0] = words[self.rng.below(words.len())];
            content.title[1] = words[self.rng.below(words.len())];
            Some(t)
        };
        Page {
            id: self.next_id,
            host,
            path,
            content,
            last_full: None,
            topic,
            links: Vec::new(),
        }
    }

    /// Draws `n` topics of [`TOPIC_WORDS`] words each (mid-frequency words).
    pub(super) fn add_topics(&mut self, n: usize) {
        self.topics = (0..n)
            .map(|_| {
                (0..TOPIC_WORDS)
                    .map(|_| (200 + self.rng.below(5000)) as u32)
                    .collect()
            })
            .collect();
    }

    /// Gives `page` its links: [`LINKS_PER_PAGE`], most to pages of its topic, drawn from
    /// `by_topic` (live page ids per topic); each rendered in a sentence of topic words.
    pub(super) fn add_links(&mut self, page: &mut Page, by_topic: &[Vec<u64>]) {
        let Some(t) = page.topic else { return };
        for _ in 0..LINKS_PER_PAGE {
            let topic = if self.rng.chance(IN_TOPIC) {
                t as usize
            } else {
                self.rng.below(self.topics.len())
            };
            let pool = &by_topic[topic];
            if pool.is_empty() {
                continue;
            }
            let to = pool[self.rng.below(pool.len())];
            if to == page.id || page.links.iter().any(|l| l.to == to) {
                continue;
            }
            let words = &self.topics[t as usize];
            let before = vec![
                self.vocab.word(&mut self.rng),
                words[self.rng.below(words.len())],
                self.vocab.word(&mut self.rng),
            ];
            let after = vec![
                words[self.rng.below(words.len())],
                self.vocab.word(&mut self.rng),
            ];
            page.links.push(PageLink { to, before, after });
        }
    }

    /// Notes where the pages are now.
    pub(super) fn place(&mut self, pages: &[Page]) {
        if self.topics.is_empty() {
            return;
        }
        for p in pages {
            self.places.insert(
                p.id,
                Place {
                    host: p.host,
                    path: p.path.clone(),
                    title: p.content.title.clone(),
                },
            );
        }
    }

    /// Every host changes its template (sweep `s`, counted from 0): a new head, header
    /// and footer, a sidebar of 80–200 words and a version line, and each of its sections
    /// a new sidebar. The old hosts are kept for the truth's resemblances until the
    /// sweep's truth is settled.
    pub(super) fn redesign(&mut self, s: usize) {
        let old = self.hosts.clone();
        for i in 0..self.hosts.len() {
            let fresh = make_host(i, &self.vocab, &mut self.rng);
            let total = self.rng.range(80, 200);
            let sidebar = self.sidebar("sidebar", total);
            let mut sections = self.hosts[i].sections.clone();
            for sec in sections.iter_mut() {
                let total = self.rng.range(60, 150);
                sec.sidebar = self.sidebar("section-nav", total);
            }
            let h = &mut self.hosts[i];
            *h = Host {
                name: h.name.clone(),
                chrome: Some(Chrome {
                    sidebar,
                    version: format!("{}.{}", 2 + s, self.rng.below(10)),
                }),
                sections,
                ..fresh
            };
        }
        self.before = Some(old);
    }

    /// In sweep `s` (counted from 0), the first section of every host gets a new sidebar,
    /// the rest of the site unchanged: a section's own template change.
    pub(super) fn redesign_first_sections(&mut self) {
        let old = self.hosts.clone();
        for i in 0..self.hosts.len() {
            if self.hosts[i].sections.is_empty() {
                continue;
            }
            let total = self.rng.range(60, 150);
            self.hosts[i].sections[0].sidebar = self.sidebar("section-nav", total);
        }
        self.before = Some(old);
    }

    /// Whether page `p` looks different in this sweep's templates than before them.
    pub(super) fn template_changed(&self, p: &Page) -> bool {
        let Some(old) = &self.before else {
            return false;
        };
        let (a, b) = (&old[p.host], &self.hosts[p.host]);
        let chrome = |h: &Host| {
            h.chrome
                .as_ref()
                .map(|c| (c.sidebar.clone(), c.version.clone()))
        };
        let section = |h: &Host| section_of(h, &p.path).map(|s| s.sidebar.clone());
        a.head != b.head
            || a.header != b.header
            || a.footer != b.footer
            || chrome(a) != chrome(b)
            || section(a) != section(b)
    }

    pub(super) fn render(&self, p: &Page) -> String {
        self.render_with(&self.hosts, p)
    }

    /// The page as rendered with the templates of `hosts`.
    pub(super) fn render_with(&self, hosts: &[Host], p: &Page) -> String {
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
        if let Some(sec) = section_of(host, &p.path) {
            html.push_str(&sec.sidebar);
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
        // Without links, the page as before topics were modelled (byte for byte).
        html.push_str("</p>");
        if !p.links.is_empty() {
            html.push_str("\n<p class=\"related\">");
            for l in &p.links {
                let Some(to) = self.places.get(&l.to) else {
                    continue;
                };
                html.push_str(&w(&l.before));
                html.push_str(&format!(
                    " <a href=\"https://{}{}\">{}</a> ",
                    hosts[to.host].name,
                    to.path,
                    w(&to.title)
                ));
                html.push_str(&w(&l.after));
                html.push_str(". ");
            }
            html.push_str("</p>\n");
        }
        html.push_str("</main>\n");
        html.push_str(&host.footer);
        html.push_str("</body></html>\n");
        html
    }

    /// The exact resemblances of the sweep's edits and moves (planned by `evolve` into
    /// [`Web::pending`]), now that the sweep's pages (`pages`, all captured) are known:
    /// full, and content as the truth fixes it (both pages without the very common
    /// shingles of their hosts, the old page's in the previous sweep, `common_before`, and
    /// the new one's in this sweep: [`super::truth::very_common`]). Returns this sweep's
    /// very common shingles by host, for the next.
    pub(super) fn settle_truth(
        &mut self,
        pages: &[Page],
        common_before: &[Vec<u64>],
        truth: &mut Truth,
    ) -> Vec<Vec<u64>> {
        let mut by_host: Vec<Vec<usize>> = vec![Vec::new(); self.hosts.len()];
        for (i, p) in pages.iter().enumerate() {
            by_host[p.host].push(i);
        }
        let this = &*self;
        let common_now: Vec<Vec<u64>> = parallel_map(&by_host, |canon, members| {
            let sets: Vec<Vec<u64>> = members
                .iter()
                .map(|&i| this.shingles_of(canon, &this.render(&pages[i])))
                .collect();
            very_common(sets.iter().map(|s| s.as_slice()))
        });
        let pending = std::mem::take(&mut self.pending);
        let this = &*self;
        let old_hosts = self.before.as_deref().unwrap_or(&self.hosts);
        let done: Vec<(f64, usize, f64)> = parallel_map(&pending, |canon, p| {
            let new = &pages[p.new];
            let mut old = p.old.clone();
            if p.same_content {
                old.content = new.content.clone();
            }
            let sa = this.shingles_of(canon, &this.render_with(old_hosts, &old));
            let sb = this.shingles_of(canon, &this.render(new));
            let (r, min) = exact_jaccard(&sa, &sb);
            let none: Vec<u64> = Vec::new();
            let removed = union_sorted(
                common_before.get(old.host).unwrap_or(&none),
                &common_now[new.host],
            );
            let content = jaccard_without(&sa, &sb, &removed).unwrap_or(1.0);
            (r, min, content)
        });
        for (p, (r, min, content)) in pending.iter().zip(done) {
            match p.target {
                Target::Edit(i) => {
                    let e = &mut truth.edits[i];
                    (e.resemblance, e.min_shingles, e.content_resemblance) = (r, min, content);
                }
                Target::Move(i) => {
                    let m = &mut truth.moves[i];
                    (m.resemblance, m.min_shingles, m.content_resemblance) = (r, min, content);
                }
            }
        }
        common_now
    }

    /// The distinct shingles of a page's HTML, sorted.
    fn shingles_of(&self, canon: &mut Canon, html: &str) -> Vec<u64> {
        canonicalize(html.as_bytes(), MediaKind::Html, None, canon);
        let mut out = Vec::new();
        shingles(canon.token_iter(), &self.params, &mut out);
        out
    }
}

/// The section of `host` a page at `path` is in (its path's first segment), if any.
fn section_of<'a>(host: &'a Host, path: &str) -> Option<&'a Section> {
    if host.sections.is_empty() {
        return None;
    }
    let first = path.trim_start_matches('/').split('/').next()?;
    host.sections.iter().find(|s| s.name == first)
}

/// `f` of each item, in order, on two threads, each with a canonicalizer of its own.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&mut Canon, &T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut canon = Canon::default();
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return out;
            };
            out.push((i, f(&mut canon, item)));
        }
    };
    let mut all = std::thread::scope(|s| {
        let other = s.spawn(work);
        let mut mine = work();
        mine.extend(other.join().expect("a truth thread panicked"));
        mine
    });
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// Which truth entry a [`Pending`] fills.
#[derive(Clone, Copy)]
pub(super) enum Target {
    Edit(usize),
    Move(usize),
}

/// An edit or move whose exact resemblances wait for the end of the sweep (the truth's
/// content needs the sweep's very common shingles).
pub(super) struct Pending {
    pub(super) target: Target,
    /// The page as it was (its content left empty when `same_content`).
    pub(super) old: Page,
    pub(super) same_content: bool,
    /// The page now: its index in the sweep's pages.
    pub(super) new: usize,
}
