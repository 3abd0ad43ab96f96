//! The web the generator models: hosts with their templates (head, header, footer,
//! a redesign's chrome), pages with content drawn from the vocabulary, and how a page is
//! rendered as HTML.

use super::rng::Rng;
use super::truth::exact_jaccard;
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
}

pub(super) struct Web {
    pub(super) vocab: Vocabulary,
    pub(super) hosts: Vec<Host>,
    pub(super) rng: Rng,
    pub(super) next_id: u64,
    pub(super) next_path: u64,
    pub(super) params: SketchParams,
    pub(super) canon: Canon,
    /// The hosts as they were before this sweep's redesign (only during such a sweep):
    /// the previous version of a page is rendered with them.
    pub(super) before: Option<Vec<Host>>,
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
    }
}

impl Web {
    pub(super) fn url(&self, p: &Page) -> String {
        format!("https://{}{}", self.hosts[p.host].name, p.path)
    }

    pub(super) fn new_path(&mut self) -> String {
        self.next_path += 1;
        let a = &self.vocab.words[self.rng.below(3000)];
        let b = &self.vocab.words[self.rng.below(3000)];
        format!("/{a}/{b}-{}.html", self.next_path)
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
    pub(super) fn redesign(&mut self, s: usize) {
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
    pub(super) fn jaccard(&mut self, a: &Page, b: &Page) -> (f64, usize, f64) {
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

    pub(super) fn shingle_set(&mut self, html: &str) -> Vec<u64> {
        canonicalize(html.as_bytes(), MediaKind::Html, None, &mut self.canon);
        let mut out = Vec::new();
        shingles(self.canon.token_iter(), &self.params, &mut out);
        out
    }
}
