//! A page's outgoing links as other pages' evidence about their targets: each `<a href>`
//! resolved against the page's URL (or its `<base href>`), SURT-keyed, with its anchor
//! window — the anchor text and `window` tokens either side of it (Haveliwala, Gionis
//! and Indyk, *Scalable Techniques for Clustering the Web*, 2000: 8 words).
//!
//! Read on every core beside the canonical text (the tokens are the page's canonical
//! tokens), kept per sweep in the `links` column family (`schema/README.md`).

pub mod inbound;

use serde::{Deserialize, Serialize};

use crate::canon::Canon;

/// Tokens of an anchor text kept at most (a link around a whole paragraph is evidence
/// of its first words).
pub const MAX_ANCHOR_TOKENS: usize = 16;
/// Tokens either side of an anchor at most (`links.window`).
pub const MAX_WINDOW: u32 = 64;
/// Windows kept per target of one page (a page that links a target from every row of
/// a table says the same thing each time).
pub const MAX_WINDOWS_PER_TARGET: usize = 8;

/// The links of one page to one target, its windows as text (what `inlinks`, `whereis`
/// and `related` show).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutLink {
    /// SURT of the target, fragment dropped.
    pub target: String,
    /// Each link's window, in page order: the tokens before the anchor, the anchor's,
    /// the tokens after, the three separated by `\t`, the tokens of each by one space.
    pub windows: Vec<String>,
}

impl OutLink {
    /// The window's words: before, anchor, after.
    pub fn parts(window: &str) -> (&str, &str, &str) {
        let mut it = window.splitn(3, '\t');
        let before = it.next().unwrap_or("");
        let anchor = it.next().unwrap_or("");
        let after = it.next().unwrap_or("");
        (before, anchor, after)
    }
}

/// A page's outgoing links as kept: the words of their anchor windows once, each window
/// as ranges of them. Windows of nearby links overlap (a menu's links share their
/// neighbours): on llvm-docs a page's windows held 4× the tokens of their union, on the
/// generated 100,000-page sweep 1.5× (2026-11-29), and kept as text each window was
/// stored, encoded and hashed for the bags again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageLinks {
    /// The tokens windows cover, each once, in page order, separated by one space (runs
    /// no window covers are left out: tokens apart on the page may meet here, where no
    /// window crosses from one to the other).
    pub words: String,
    /// The links, by target SURT.
    pub links: Vec<PageLink>,
}

/// The links of one page to one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageLink {
    /// SURT of the target, fragment dropped.
    pub target: String,
    /// Each link's window, in page order.
    pub windows: Vec<Window>,
}

/// Where a window's words are among its page's [`PageLinks::words`]: `before` tokens
/// from token `at`, then the anchor's `anchor` tokens, then `skip` tokens not in the
/// window (an anchor's past [`MAX_ANCHOR_TOKENS`]), then the `after` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// The window's first token.
    pub at: u32,
    /// Tokens before the anchor.
    pub before: u32,
    /// The anchor's tokens kept.
    pub anchor: u32,
    /// Tokens among the words between the anchor's kept tokens and the after part: the
    /// anchor's tail past [`MAX_ANCHOR_TOKENS`] as far as other windows keep it (0 when
    /// none does, or the anchor was not cut).
    pub skip: u32,
    /// Tokens after the anchor.
    pub after: u32,
}

impl Window {
    /// Its token ranges among the page's words: before, anchor, after.
    pub fn ranges(&self) -> [std::ops::Range<usize>; 3] {
        let at = self.at as usize;
        let anchor_at = at + self.before as usize;
        let after_at = anchor_at + self.anchor as usize + self.skip as usize;
        [
            at..anchor_at,
            anchor_at..anchor_at + self.anchor as usize,
            after_at..after_at + self.after as usize,
        ]
    }

    /// The window as text (before, anchor, after joined by `\t`), as [`OutLink`] holds it.
    pub fn text(&self, tokens: &Tokens<'_>) -> String {
        let [b, a, f] = self.ranges();
        let mut s = String::new();
        s.push_str(tokens.span(b));
        s.push('\t');
        s.push_str(tokens.span(a));
        s.push('\t');
        s.push_str(tokens.span(f));
        s
    }
}

/// [`PageLinks`] borrowed from its stored bytes (a scan of a sweep's links copies no
/// string).
#[derive(Debug, Deserialize)]
pub struct PageLinksRef<'a> {
    /// As [`PageLinks::words`].
    #[serde(borrow)]
    pub words: &'a str,
    /// As [`PageLinks::links`].
    #[serde(borrow)]
    pub links: Vec<PageLinkRef<'a>>,
}

/// [`PageLink`] borrowed.
#[derive(Debug, Deserialize)]
pub struct PageLinkRef<'a> {
    /// As [`PageLink::target`].
    #[serde(borrow)]
    pub target: &'a str,
    /// As [`PageLink::windows`].
    pub windows: Vec<Window>,
}

impl PageLinks {
    /// The same links borrowed.
    pub fn as_ref(&self) -> PageLinksRef<'_> {
        PageLinksRef {
            words: &self.words,
            links: (self.links.iter())
                .map(|l| PageLinkRef {
                    target: &l.target,
                    windows: l.windows.clone(),
                })
                .collect(),
        }
    }

    /// Links whose windows are text ([`OutLink`]), each window's tokens kept apart.
    pub fn from_texts(links: &[(&str, Vec<&str>)]) -> PageLinks {
        let mut out = PageLinks::default();
        let mut n = 0u32;
        for (target, windows) in links {
            let mut ws = Vec::with_capacity(windows.len());
            for w in windows {
                let (b, a, f) = OutLink::parts(w);
                let mut count = |part: &str| -> u32 {
                    let mut c = 0;
                    for t in part.split(' ').filter(|t| !t.is_empty()) {
                        if !out.words.is_empty() {
                            out.words.push(' ');
                        }
                        out.words.push_str(t);
                        c += 1;
                    }
                    c
                };
                let at = n;
                let (before, anchor, after) = (count(b), count(a), count(f));
                n += before + anchor + after;
                ws.push(Window {
                    at,
                    before,
                    anchor,
                    skip: 0,
                    after,
                });
            }
            out.links.push(PageLink {
                target: target.to_string(),
                windows: ws,
            });
        }
        out
    }

    /// The links with their windows as text.
    pub fn to_out_links(&self) -> Vec<OutLink> {
        self.as_ref().to_out_links()
    }

    /// Whether the page links nothing.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
}

impl PageLinksRef<'_> {
    /// The links with their windows as text.
    pub fn to_out_links(&self) -> Vec<OutLink> {
        let tokens = Tokens::of(self.words);
        (self.links.iter())
            .map(|l| OutLink {
                target: l.target.to_string(),
                windows: l.windows.iter().map(|w| w.text(&tokens)).collect(),
            })
            .collect()
    }
}

/// The tokens of a [`PageLinks::words`], by index.
pub struct Tokens<'a> {
    words: &'a str,
    /// Byte offset just past each token.
    ends: Vec<u32>,
}

impl<'a> Tokens<'a> {
    /// The tokens of `words` (one space between tokens).
    pub fn of(words: &'a str) -> Tokens<'a> {
        let mut ends: Vec<u32> = memchr::memchr_iter(b' ', words.as_bytes())
            .map(|i| i as u32)
            .collect();
        if !words.is_empty() {
            ends.push(words.len() as u32);
        }
        Tokens { words, ends }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Tokens `r` as the words hold them (one space between); "" for a range past them.
    pub fn span(&self, r: std::ops::Range<usize>) -> &'a str {
        span_of(self.words, &self.ends, r)
    }

    /// Each token's [`word_hash`]'s top 32 bits (what a bag keeps of a word).
    pub fn word_hashes(&self, seed: u64) -> impl Iterator<Item = u32> + '_ {
        let mut from = 0usize;
        self.ends.iter().map(move |&e| {
            let w = &self.words.as_bytes()[from..e as usize];
            from = e as usize + 1;
            (word_hash(w, seed) >> 32) as u32
        })
    }
}

/// Whether an href can name a page: not a fragment of this one, not a script, mail or
/// telephone link, not inline data.
fn names_a_page(href: &str) -> bool {
    let lower = href.get(..11).unwrap_or(href).to_ascii_lowercase();
    !(href.is_empty()
        || href.starts_with('#')
        || lower.starts_with("javascript:")
        || lower.starts_with("mailto:")
        || lower.starts_with("tel:")
        || lower.starts_with("data:"))
}

/// The outgoing links of the page at `page_url` whose canonical form is `canon`, by
/// target SURT (sorted); links to the page itself left out. `window` tokens either
/// side of each anchor.
pub fn out_links(canon: &Canon, page_url: &str, window: usize) -> PageLinks {
    if canon.links.is_empty() {
        return PageLinks::default();
    }
    // Parsed once; each href is joined to it (an absolute one replaces it).
    let page = url::Url::parse(page_url.trim()).ok();
    let base = match (&canon.base, &page) {
        (Some(b), Some(p)) if !b.is_empty() => p.join(b).ok().or_else(|| page.clone()),
        _ => page.clone(),
    };
    let Some(base) = base else {
        return PageLinks::default();
    };
    let plain = Plain::of(&base);
    let own = crate::url::surt(page_url);
    let n = canon.ends.len();
    // Each link's target and window as page token positions: before from .0, anchor
    // .1..=.2, after .3..=.4.
    let mut found: Vec<(String, [usize; 5])> = Vec::with_capacity(canon.links.len());
    for l in &canon.links {
        if !names_a_page(&l.href) {
            continue;
        }
        let target = match plain.as_ref().and_then(|p| p.resolve(&l.href)) {
            Some(resolved) => crate::url::surt_as_pywb(&resolved),
            None => {
                let Ok(mut resolved) = base.join(&l.href) else {
                    continue;
                };
                if !matches!(resolved.scheme(), "http" | "https") || resolved.host_str().is_none() {
                    continue;
                }
                resolved.set_fragment(None);
                crate::url::surt_as_pywb(resolved.as_str())
            }
        };
        let Some(target) = target else {
            continue;
        };
        if target == own {
            continue;
        }
        let (start, end) = ((l.start as usize).min(n), (l.end as usize).min(n));
        let end = end.max(start);
        let anchor_end = end.min(start + MAX_ANCHOR_TOKENS);
        found.push((
            target,
            [
                start.saturating_sub(window),
                start,
                anchor_end,
                end,
                (end + window).min(n),
            ],
        ));
    }
    // By target, each target's in page order, its first windows kept.
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut kept = 0;
    for i in 0..found.len() {
        kept = if i > 0 && found[i].0 == found[i - 1].0 {
            kept + 1
        } else {
            0
        };
        if kept >= MAX_WINDOWS_PER_TARGET {
            found[i].1[0] = usize::MAX;
        }
    }
    found.retain(|f| f.1[0] != usize::MAX);
    // The tokens the windows cover, as runs of page tokens, merged.
    let mut runs: Vec<(usize, usize)> = Vec::with_capacity(2 * found.len());
    for (_, w) in &found {
        runs.push((w[0], w[2]));
        runs.push((w[3], w[4]));
    }
    runs.retain(|r| r.0 < r.1);
    runs.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
    for r in runs {
        match merged.last_mut() {
            Some(m) if r.0 <= m.1 => m.1 = m.1.max(r.1),
            _ => merged.push(r),
        }
    }
    // Each run's first token among the words.
    let mut firsts = Vec::with_capacity(merged.len());
    let (text, ends) = (canon.text.as_str(), &canon.ends);
    let mut words = String::new();
    let mut count = 0usize;
    for &(from, to) in &merged {
        firsts.push(count);
        count += to - from;
        if !words.is_empty() {
            words.push(' ');
        }
        words.push_str(span_of(text, ends, from..to));
    }
    // A page token's place among the words (a token in a run, or the end of the run
    // before it for a position just past a run).
    let place = |t: usize| -> usize {
        let i = merged.partition_point(|r| r.0 <= t);
        if i == 0 {
            return 0;
        }
        let (from, to) = merged[i - 1];
        firsts[i - 1] + (t.min(to) - from)
    };
    let mut links: Vec<PageLink> = Vec::new();
    for (target, w) in found {
        let window = {
            let at = place(w[0]);
            let (before, anchor, after) = (w[1] - w[0], w[2] - w[1], w[4] - w[3]);
            // The after part's first token: where it lies when it has tokens,
            // else just past the anchor.
            let after_at = if after > 0 {
                place(w[3])
            } else {
                at + before + anchor
            };
            Window {
                at: at as u32,
                before: before as u32,
                anchor: anchor as u32,
                skip: (after_at - (at + before + anchor)) as u32,
                after: after as u32,
            }
        };
        match links.last_mut() {
            Some(l) if l.target == target => l.windows.push(window),
            _ => links.push(PageLink {
                target,
                windows: vec![window],
            }),
        }
    }
    PageLinks { words, links }
}

/// Resolves plain hrefs against a page's base without the URL parser, as it would (most
/// of a page's links are `/path`, `name.html` or `dir/name.html#part`: the parser's
/// join was a fifth of the links' time).
struct Plain {
    /// `scheme://host[:port]`.
    origin: String,
    /// The origin and the base's path up to its last `/`.
    dir: String,
}

impl Plain {
    /// For an http(s) base without user or password.
    fn of(base: &url::Url) -> Option<Plain> {
        if !matches!(base.scheme(), "http" | "https")
            || !base.username().is_empty()
            || base.password().is_some()
        {
            return None;
        }
        let mut origin = format!("{}://{}", base.scheme(), base.host_str()?);
        if let Some(port) = base.port() {
            origin.push_str(&format!(":{port}"));
        }
        let path = base.path();
        let dir = format!("{origin}{}", &path[..path.rfind('/')? + 1]);
        Some(Plain { origin, dir })
    }

    /// The URL `href` names, fragment dropped, when it is a plain path: letters, digits,
    /// `-._~/`, no `.` or `..` segment, not `//…`. None for any other href.
    fn resolve(&self, href: &str) -> Option<String> {
        let href = href.split('#').next().unwrap_or("");
        let plain =
            |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/');
        if href.is_empty()
            || href.starts_with("//")
            || !href.bytes().all(|b| plain(&b))
            || href.split('/').any(|s| s == "." || s == "..")
        {
            return None;
        }
        let head = match href.starts_with('/') {
            true => &self.origin,
            false => &self.dir,
        };
        let mut url = String::with_capacity(head.len() + href.len());
        url.push_str(head);
        url.push_str(href);
        Some(url)
    }
}

/// How a URL's inbound anchor windows are sketched: part of the index's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BagParams {
    /// Links from the target's own host are counted (off: a site's navigation leaves
    /// its pages' bags to other sites).
    pub own_host: bool,
    /// T of the bag's sample (between T and 2T values; every element of a smaller bag).
    pub sample_target: u32,
    /// The index's sketch seed (token hash and permutation).
    pub seed: u64,
}

/// Tokens `r` of a text whose tokens end at `ends` and are separated by one character
/// (a space): the text between the first's start and the last's end; "" for a range
/// past them.
fn span_of<'t>(text: &'t str, ends: &[u32], r: std::ops::Range<usize>) -> &'t str {
    if r.start >= r.end || r.end > ends.len() {
        return "";
    }
    let start = match r.start {
        0 => 0,
        s => ends[s - 1] as usize + 1,
    };
    text.get(start..ends[r.end - 1] as usize).unwrap_or("")
}

/// The hash of a word (bags keep its top 32 bits: two words of a bag share them by
/// chance with a probability far below the sample's own error).
#[inline]
pub fn word_hash(word: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(word, seed)
}

/// The permuted value of the `k`-th occurrence (from 0) of the word hashed `h` in a
/// bag: a bag is the set of (word, occurrence) pairs, so that the resemblance of two
/// sets of them is Σ min / Σ max of the word counts (Haveliwala et al.'s bag
/// resemblance).
#[inline]
pub fn element_value(h: u64, k: u32, seed: u64) -> u64 {
    let perm_seed = seed.rotate_left(32) ^ crate::sketch::PERM_MIX;
    crate::sketch::fmix64(h.wrapping_add((k as u64).wrapping_mul(crate::sketch::BASE)) ^ perm_seed)
}

/// The sample of a bag given its words' hashes with their counts (any order), in
/// [`crate::sketch::compact`] form, ascending: the MOD sample of pages
/// ([`crate::sketch::Sketch::from_shingles`]) over the bag's elements. Returns
/// (elements, level, values).
pub fn bag_sample(counts: &[(u64, u32)], p: &BagParams) -> (u32, u8, Vec<u32>) {
    let n: u64 = counts.iter().map(|(_, c)| *c as u64).sum();
    let t2 = 2 * p.sample_target.max(1) as u64;
    let mut level = 0u8;
    while (n >> level) >= t2 && level < 31 {
        level += 1;
    }
    let mask = (1u64 << level) - 1;
    let mut values = Vec::with_capacity(n.min(t2 * 2) as usize);
    for &(h, c) in counts {
        for k in 0..c {
            let v = element_value(h, k, p.seed);
            if v & mask == 0 {
                values.push(crate::sketch::compact(v));
            }
        }
    }
    values.sort_unstable();
    values.dedup();
    (n.min(u32::MAX as u64) as u32, level, values)
}

/// The resemblance of two bag samples (compact values, ascending) at their larger
/// level, and the values they share there.
pub fn bag_resemblance(a: (u8, &[u32]), b: (u8, &[u32])) -> crate::sketch::Estimate {
    let level = a.0.max(b.0) as u32;
    let at = |v: &[u32]| -> Vec<u32> { v.iter().copied().filter(|c| (c & 31) >= level).collect() };
    crate::sketch::estimate_compact(&at(a.1), &at(b.1))
}

/// A page of random words and links (`p0.html` … `p11.html`): anchors unclosed,
/// empty and longer than kept, neighbours close; and a window width from 0 to 10.
/// The links of [`random_page`]`(case)` read at `url` (for tests of what is built from
/// a sweep's links).
#[cfg(test)]
pub(crate) fn random_page_links(case: u64, url: &str) -> PageLinks {
    let (html, window) = random_page(case);
    let mut c = crate::canon::Canon::default();
    crate::canon::canonicalize(html.as_bytes(), crate::canon::MediaKind::Html, None, &mut c);
    out_links(&c, url, window)
}

#[cfg(test)]
pub(crate) fn random_page(case: u64) -> (String, usize) {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ case.wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut next = |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    let mut html = String::from("<html><body><p>");
    for _ in 0..next(60) {
        match next(10) {
            0..=6 => html.push_str(&format!("w{} ", next(40))),
            7 => html.push_str(&format!("<a href=\"p{}.html\">", next(12))),
            8 => {
                let words: Vec<String> = (0..next(30)).map(|i| format!("a{i}")).collect();
                html.push_str(&format!(
                    "<a href=\"p{}.html\">{}</a> ",
                    next(12),
                    words.join(" ")
                ));
            }
            _ => html.push_str("</a> "),
        }
    }
    html.push_str("</p></body></html>");
    (html, next(11) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::{canonicalize, MediaKind};
    use crate::index::columns::links::{decode_page_links, encode_page_links, with_page_links};

    fn links_of(html: &str, url: &str, window: usize) -> Vec<OutLink> {
        let mut c = Canon::default();
        canonicalize(html.as_bytes(), MediaKind::Html, None, &mut c);
        out_links(&c, url, window).to_out_links()
    }

    /// The windows as the page's own tokens give them (before, anchor, after), link by
    /// link, grouped by target: what the words kept once must give back.
    fn windows_from_the_page(c: &Canon, base: &str, window: usize) -> Vec<OutLink> {
        let n = c.ends.len();
        let span = |from: usize, to: usize| -> String {
            (from..to)
                .map(|i| {
                    let s = if i == 0 {
                        0
                    } else {
                        c.ends[i - 1] as usize + 1
                    };
                    &c.text[s..c.ends[i] as usize]
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut by: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for l in &c.links {
            let target = crate::url::surt_as_pywb(&format!("{base}{}", l.href)).unwrap();
            let (start, end) = ((l.start as usize).min(n), (l.end as usize).min(n));
            let end = end.max(start);
            let w = by.entry(target).or_default();
            if w.len() < MAX_WINDOWS_PER_TARGET {
                w.push(format!(
                    "{}\t{}\t{}",
                    span(start.saturating_sub(window), start),
                    span(start, end.min(start + MAX_ANCHOR_TOKENS)),
                    span(end, (end + window).min(n))
                ));
            }
        }
        by.into_iter()
            .map(|(target, windows)| OutLink { target, windows })
            .collect()
    }

    /// Windows kept as runs of the page's words once give each link's window back:
    /// neighbours that overlap, anchors longer than kept, anchors without words,
    /// targets linked more often than kept, windows of every width.
    #[test]
    fn windows_kept_once_give_each_window_back() {
        let mut shared = 0usize;
        for case in 0..400 {
            let (html, window) = super::random_page(case);
            let mut c = Canon::default();
            canonicalize(html.as_bytes(), MediaKind::Html, None, &mut c);
            let kept = out_links(&c, "http://example.org/d/page.html", window);
            let want = windows_from_the_page(&c, "http://example.org/d/", window);
            assert_eq!(
                kept.to_out_links(),
                want,
                "case {case}: {html} window {window}"
            );
            // Through the stored bytes too.
            let bytes = encode_page_links(&kept, 7);
            assert_eq!(decode_page_links(&bytes).unwrap(), kept);
            let windows: usize = want.iter().map(|l| l.windows.len()).sum();
            let tokens = Tokens::of(&kept.words).len();
            let in_windows: usize = (want.iter())
                .flat_map(|l| &l.windows)
                .map(|w| w.split(['\t', ' ']).filter(|t| !t.is_empty()).count())
                .sum();
            assert!(tokens <= in_windows, "case {case}");
            shared += (windows > 1 && tokens < in_windows) as usize;
        }
        assert!(shared > 100, "{shared}");
    }

    /// Values of the first layout (windows as text) read as the same links.
    #[test]
    fn links_kept_as_text_read_as_they_were() {
        let old = vec![
            OutLink {
                target: "org,example)/a".into(),
                windows: vec!["one two\tthe a\tthree".into(), "\tA\t".into()],
            },
            OutLink {
                target: "org,example)/b".into(),
                windows: vec!["x\t\ty z".into()],
            },
        ];
        let bytes = crate::index::codec::encode(&old);
        assert_eq!(bytes[0], 1);
        assert_eq!(decode_page_links(&bytes).unwrap().to_out_links(), old);
        // A window past its words, or wider than any page's, is refused.
        let mut bad = PageLinks::from_texts(&[("org,example)/a", vec!["one two\tthe a\tthree"])]);
        bad.links[0].windows[0].after = 3;
        let e = with_page_links(&encode_page_links(&bad, 7), |_| ()).unwrap_err();
        assert!(e.contains("not within its 5 words"), "{e}");
        bad.links[0].windows[0] = Window {
            at: 0,
            before: 65,
            anchor: 0,
            skip: 0,
            after: 0,
        };
        assert!(with_page_links(&encode_page_links(&bad, 7), |_| ()).is_err());
        assert!(with_page_links(&[9, 0], |_| ())
            .unwrap_err()
            .contains("links format 9"));
    }

    #[test]
    fn anchors_resolved_with_their_windows() {
        let html = r##"<html><head><title>T</title></head><body>
            <p>one two three four <a href="b.html#top">the B page</a> five six seven</p>
            <p><a href="/c?x=1&amp;y=2">C</a> <a href="#here">here</a>
            <a href="mailto:x@example.org">mail</a> <a href="a.html">self</a>
            <a href="HTTPS://Other.Example/d">D <b>bold</b></a></p></body></html>"##;
        let got = links_of(html, "http://example.org/dir/a.html", 3);
        let targets: Vec<&str> = got.iter().map(|l| l.target.as_str()).collect();
        assert_eq!(
            targets,
            [
                "example,other)/d",
                "org,example)/c?x=1&y=2",
                "org,example)/dir/b.html"
            ]
        );
        let b = &got[2];
        assert_eq!(b.windows, ["two three four\tthe b page\tfive six seven"]);
        assert_eq!(OutLink::parts(&b.windows[0]).1, "the b page");
        assert_eq!(OutLink::parts(&got[0].windows[0]).1, "d bold");
    }

    /// Plain hrefs resolve as the URL parser resolves them.
    #[test]
    fn plain_hrefs_resolve_as_the_parser_resolves_them() {
        let bases = [
            "http://example.org/dir/a.html",
            "https://Example.ORG:8443/dir/sub/",
            "http://example.org",
            "http://example.org/a.html?q=1#f",
            "http://u:p@example.org/dir/",
            "http://example.org:80/x/y",
        ];
        let hrefs = [
            "b.html",
            "/c/d.html",
            "sub/e.html#part",
            "x",
            "./x",
            "../x",
            "a/../b",
            "/",
            "//other.org/x",
            "a b",
            "a%20b",
            "a?b",
            "#f",
            "a.html#",
            "dir/",
            "~user/",
            "A/B.HTML",
            "..",
            ".",
            "a//b",
            "http://other.org/x",
            "javascript:x",
            "a:b",
        ];
        let mut plain = 0;
        for b in bases {
            let base = url::Url::parse(b).unwrap();
            let Some(p) = Plain::of(&base) else { continue };
            for h in hrefs {
                if let Some(got) = p.resolve(h) {
                    plain += 1;
                    let mut want = base.join(h).unwrap();
                    want.set_fragment(None);
                    assert_eq!(got, want.as_str(), "{b} + {h}");
                }
            }
        }
        assert!(plain > 30, "{plain}");
    }

    #[test]
    fn base_href_and_unclosed_anchors() {
        let html = r#"<base href="http://mirror.example/docs/"><a href="x.html">x one
            <a href="y.html">y two</a> tail"#;
        let got = links_of(html, "http://example.org/a", 8);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].target, "example,mirror)/docs/x.html");
        // An anchor not closed ends where the next begins.
        assert_eq!(got[0].windows, ["\tx one\ty two tail"]);
        assert_eq!(got[1].windows, ["x one\ty two\ttail"]);
    }

    /// The bag sample's resemblance is Σ min / Σ max of the word counts when every
    /// element is kept.
    #[test]
    fn bags_compare_by_their_counts() {
        let p = BagParams {
            own_host: true,
            sample_target: 512,
            seed: 7,
        };
        let bag = |words: &[(&str, u32)]| {
            let c: Vec<(u64, u32)> = words
                .iter()
                .map(|(w, n)| (word_hash(w.as_bytes(), 7), *n))
                .collect();
            bag_sample(&c, &p)
        };
        let (na, la, a) = bag(&[("alpha", 3), ("beta", 1), ("gamma", 2)]);
        let (nb, lb, b) = bag(&[("alpha", 1), ("beta", 1), ("delta", 2)]);
        assert_eq!((na, nb, la, lb), (6, 4, 0, 0));
        // Σ min = 1 + 1 = 2; Σ max = 3 + 1 + 2 + 2 = 8.
        let e = bag_resemblance((la, &a), (lb, &b));
        assert_eq!((e.common, e.union), (2, 8));
        // A large bag is sampled: between T and 2T values.
        let big: Vec<(u64, u32)> = (0..5000u64)
            .map(|i| (word_hash(i.to_string().as_bytes(), 7), 1))
            .collect();
        let (n, level, v) = bag_sample(&big, &p);
        assert_eq!(n, 5000);
        assert!(
            level >= 2 && v.len() >= 300 && v.len() < 1024 + 100,
            "{level} {}",
            v.len()
        );
    }
}
