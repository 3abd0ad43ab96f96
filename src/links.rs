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
    let base = match &canon.base {
        Some(b) if !b.is_empty() => crate::url::resolve(page_url, b),
        _ => page_url.to_string(),
    };
    let own = crate::url::surt(page_url);
    let tokens: Vec<&str> = canon.token_iter().collect();
    let n = tokens.len();
    let mut by_target: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for l in &canon.links {
        if !names_a_page(&l.href) {
            continue;
        }
        let resolved = crate::url::resolve(&base, &l.href);
        let resolved = resolved.split('#').next().unwrap_or("");
        let lower = resolved.get(..8).unwrap_or(resolved).to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            continue;
        }
        if crate::url::check(resolved).is_err() {
            continue;
        }
        let target = crate::url::surt(resolved);
        if target == own {
            continue;
        }
        let (start, end) = ((l.start as usize).min(n), (l.end as usize).min(n));
        let end = end.max(start);
        let anchor_end = end.min(start + MAX_ANCHOR_TOKENS);
        let w = format!(
            "{}\t{}\t{}",
            tokens[start.saturating_sub(window)..start].join(" "),
            tokens[start..anchor_end].join(" "),
            tokens[end..(end + window).min(n)].join(" ")
        );
        let windows = by_target.entry(target).or_default();
        if windows.len() < MAX_WINDOWS_PER_TARGET {
            windows.push(w);
        }
    }
    by_target
        .into_iter()
        .map(|(target, windows)| OutLink { target, windows })
        .collect()
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
}
