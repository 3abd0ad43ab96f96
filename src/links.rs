//! A page's outgoing links as other pages' evidence about their targets: each `<a href>`
//! resolved against the page's URL (or its `<base href>`), SURT-keyed, with its anchor
//! window — the anchor text and `window` tokens either side of it (Haveliwala, Gionis
//! and Indyk, *Scalable Techniques for Clustering the Web*, 2000: 8 words).
//!
//! Read on every core beside the canonical text (the tokens are the page's canonical
//! tokens), kept per sweep in the `links` column family (`schema/README.md`).

use serde::{Deserialize, Serialize};

use crate::canon::Canon;

/// Tokens of an anchor text kept at most (a link around a whole paragraph is evidence
/// of its first words).
pub const MAX_ANCHOR_TOKENS: usize = 16;
/// Windows kept per target of one page (a page that links a target from every row of
/// a table says the same thing each time).
pub const MAX_WINDOWS_PER_TARGET: usize = 8;

/// The links of one page to one target.
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
pub fn out_links(canon: &Canon, page_url: &str, window: usize) -> Vec<OutLink> {
    if canon.links.is_empty() {
        return Vec::new();
    }
    // Parsed once; each href is joined to it (an absolute one replaces it).
    let page = url::Url::parse(page_url.trim()).ok();
    let base = match (&canon.base, &page) {
        (Some(b), Some(p)) if !b.is_empty() => p.join(b).ok().or_else(|| page.clone()),
        _ => page.clone(),
    };
    let Some(base) = base else {
        return Vec::new();
    };
    let plain = Plain::of(&base);
    let own = crate::url::surt(page_url);
    // Tokens `from..to` as the text holds them: separated by one space.
    let (text, ends) = (canon.text.as_str(), &canon.ends);
    let n = ends.len();
    let span = |from: usize, to: usize| -> &str {
        if from >= to {
            return "";
        }
        let start = if from == 0 {
            0
        } else {
            ends[from - 1] as usize + 1
        };
        text.get(start..ends[to - 1] as usize).unwrap_or("")
    };
    let mut by_target: std::collections::BTreeMap<String, Vec<String>> = Default::default();
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
        let windows = by_target.entry(target).or_default();
        if windows.len() < MAX_WINDOWS_PER_TARGET {
            let parts = [
                span(start.saturating_sub(window), start),
                span(start, anchor_end),
                span(end, (end + window).min(n)),
            ];
            windows.push(parts.join("\t"));
        }
    }
    by_target
        .into_iter()
        .map(|(target, windows)| OutLink { target, windows })
        .collect()
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
        Some(match href.starts_with('/') {
            true => format!("{}{href}", self.origin),
            false => format!("{}{href}", self.dir),
        })
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

/// The words of a window: before, anchor and after together.
pub fn window_words(window: &str) -> impl Iterator<Item = &[u8]> {
    (window.as_bytes().split(|b| matches!(b, b'\t' | b' '))).filter(|w| !w.is_empty())
}

/// What a bag keeps of each word of a window: the top 32 bits of its hash.
pub fn window_word_hashes(window: &str, seed: u64) -> impl Iterator<Item = u32> + '_ {
    window_words(window).map(move |w| (word_hash(w, seed) >> 32) as u32)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::{canonicalize, MediaKind};

    fn links_of(html: &str, url: &str, window: usize) -> Vec<OutLink> {
        let mut c = Canon::default();
        canonicalize(html.as_bytes(), MediaKind::Html, None, &mut c);
        out_links(&c, url, window)
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
