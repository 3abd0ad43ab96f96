//! URL canonicalization to SURT (Sort-friendly URI Reordering Transform), the key
//! archives index captures by: `http://www.archive.org/goo/?b&a=1` → `org,archive)/goo?a=1&b`.
//!
//! As the Internet Archive's default canonicalizer: scheme, `www`-prefix, default port,
//! fragment and trailing path slash are dropped; host labels reversed; everything
//! lower-cased; query parameters sorted. So `http://www.Example.com/a` and
//! `https://example.com/a/` share one key. URLs that are not http(s) (`dns:`, `urn:`…)
//! are kept whole, lower-cased.

/// The SURT key of a URL.
pub fn surt(url: &str) -> String {
    let u = url.trim();
    let lower = u.to_ascii_lowercase();
    let rest = if let Some(r) = lower.strip_prefix("http://") {
        r
    } else if let Some(r) = lower.strip_prefix("https://") {
        r
    } else if lower.contains("://")
        || lower.starts_with("dns:")
        || lower.starts_with("urn:")
        || lower.starts_with("mailto:")
    {
        return lower;
    } else {
        // No scheme: read as http.
        lower.as_str()
    };
    let rest = rest.split('#').next().unwrap_or("");
    let (authority, path_query) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = host_and_port(authority);
    let host = strip_www(host);
    let port = port.filter(|p| *p != "80" && *p != "443");
    let is_ip = host.split('.').count() == 4
        && host
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let mut out = String::with_capacity(u.len() + 4);
    if is_ip || host.starts_with('[') {
        out.push_str(host);
    } else {
        let labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
        out.push_str(&labels.iter().rev().copied().collect::<Vec<_>>().join(","));
    }
    if let Some(p) = port {
        out.push(':');
        out.push_str(p);
    }
    out.push(')');
    let (path, query) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_query, None),
    };
    let path = if path.is_empty() { "/" } else { path };
    let path = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    out.push_str(if path.is_empty() { "/" } else { path });
    if let Some(q) = query {
        let mut params: Vec<&str> = q.split('&').filter(|p| !p.is_empty()).collect();
        params.sort_unstable();
        if !params.is_empty() {
            out.push('?');
            out.push_str(&params.join("&"));
        }
    }
    out
}

fn strip_www(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix("www") {
        let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
        if rest[digits..].starts_with('.') && rest[digits + 1..].contains('.') {
            return &rest[digits + 1..];
        }
    }
    host
}

/// Checks that a URL given on a command line can be a page's address: an optional
/// http(s) scheme, a host, no spaces. Says what was expected when it cannot.
pub fn check(url: &str) -> Result<(), String> {
    let u = url.trim();
    let rest = u
        .strip_prefix("http://")
        .or_else(|| u.strip_prefix("https://"))
        .or_else(|| u.strip_prefix("HTTP://"))
        .or_else(|| u.strip_prefix("HTTPS://"))
        .unwrap_or(u);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or(authority);
    // Another scheme (`ftp://`, `http://http://`) ends the authority at its `://`; one
    // later, in the path or the query (`/login?next=http://b.com/`), is part of the URL.
    let other_scheme = rest.find("://").is_some_and(|i| i <= authority.len());
    if u.is_empty()
        || u.chars().any(char::is_whitespace)
        || other_scheme
        || host.is_empty()
        || host.starts_with(['.', ':'])
        || !host.chars().any(|c| c.is_alphanumeric())
    {
        return Err(format!(
            "{url:?} is not a URL: expected http(s)://host/path (the scheme may be left out)"
        ));
    }
    Ok(())
}

/// The host and port of an authority (`user@host.:port`, `[v6]:port`): no user, no
/// trailing dot.
fn host_and_port(authority: &str) -> (&str, Option<&str>) {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if authority.starts_with('[') {
        // IPv6 literal.
        match authority.find("]:") {
            Some(i) => (&authority[..=i], Some(&authority[i + 2..])),
            None => (authority, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => {
                (h, Some(p).filter(|p| !p.is_empty()))
            }
            _ => (authority, None),
        }
    };
    (host.trim_end_matches('.'), port)
}

/// The host of a URL as written (lower-case, `www.` kept, without user or port), as
/// Common Crawl's `url_host_name`; None for URLs without one (`urn:`, `dns:`).
pub fn host_as_written(url: &str) -> Option<String> {
    let lower = url.trim().to_ascii_lowercase();
    let rest = &lower[lower.find("://")? + 3..];
    let (host, _) = host_and_port(rest.split(['/', '?', '#']).next().unwrap_or(""));
    (!host.is_empty()).then(|| host.to_string())
}

/// The host of a URL (lower-case, without `www.` and port), for per-host figures.
pub fn host(url: &str) -> String {
    let s = surt(url);
    let h = s.split(')').next().unwrap_or("");
    let h = h.split(':').next().unwrap_or(h);
    let mut labels: Vec<&str> = h.split(',').collect();
    labels.reverse();
    labels.join(".")
}

/// Resolves a redirect `Location` against the URL that sent it. An absolute one (a
/// scheme before any `/`, `?` or `#`) is kept as given; a relative one is joined as a
/// browser joins it (WHATWG URL: `?q` keeps the path, `../` goes up, a URL in the query
/// stays in the query), or, when the base does not parse, by its origin and folder.
pub fn resolve(base: &str, location: &str) -> String {
    let loc = location.trim();
    if has_scheme(loc) {
        return loc.to_string();
    }
    if let Ok(joined) = url::Url::parse(base.trim()).and_then(|b| b.join(loc)) {
        return joined.to_string();
    }
    let (scheme, rest) = match base.split_once("://") {
        Some((s, r)) => (s, r),
        None => return loc.to_string(),
    };
    if let Some(r) = loc.strip_prefix("//") {
        return format!("{scheme}://{r}");
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let origin = format!("{scheme}://{}", &rest[..authority_end]);
    if loc.starts_with('/') {
        return format!("{origin}{loc}");
    }
    let path = &rest[authority_end..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    let dir = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "/",
    };
    format!("{origin}{dir}{loc}")
}

/// Whether a URL starts with a scheme (`http:`, `mailto:`): letters, digits, `+`, `-`
/// or `.` after a letter, then `:`, before any `/`, `?` or `#`.
fn has_scheme(u: &str) -> bool {
    let Some(i) = u.find(':') else {
        return false;
    };
    let scheme = u[..i].as_bytes();
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
}

/// The host part of a SURT key (through its `)`), or the whole key.
pub fn host_of_surt(surt: &str) -> &str {
    match surt.find(')') {
        Some(i) => &surt[..=i],
        None => surt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_as_a_browser_resolves_them() {
        let base = "http://a.com/dir/page.html?x=1";
        for (loc, want) in [
            ("https://b.org/x", "https://b.org/x"),
            (
                "/out?to=https://x.org/",
                "http://a.com/out?to=https://x.org/",
            ),
            ("?q=2", "http://a.com/dir/page.html?q=2"),
            ("../up.html", "http://a.com/up.html"),
            ("./same.html", "http://a.com/dir/same.html"),
            ("next.html", "http://a.com/dir/next.html"),
            ("//c.net/p", "http://c.net/p"),
            ("#frag", "http://a.com/dir/page.html?x=1#frag"),
        ] {
            assert_eq!(resolve(base, loc), want, "{loc}");
        }
        assert!(!has_scheme("/out?to=https://x.org/"));
        assert!(has_scheme("mailto:a@b.c"));
    }

    #[test]
    fn urls_with_urls_in_their_query_are_urls() {
        for ok in [
            "http://a.com/login?next=http://b.com/",
            "a.com/share?u=https://x.org/p#top",
            "https://t.co/r?to=ftp://files.example/x",
            "http://a.com/web/2020/http://b.com/",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for bad in [
            "ftp://a.com/",
            "http://http://a.com/",
            "://a.com",
            "http://",
            "a b",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn surt_as_archives_write_it() {
        assert_eq!(
            surt("http://www.archive.org/goo/?b&a=1"),
            "org,archive)/goo?a=1&b"
        );
        assert_eq!(
            surt("http://www.Example.com/a"),
            surt("https://example.com/a")
        );
        assert_eq!(
            surt("https://example.com:443/A/b/#frag"),
            "com,example)/a/b"
        );
        assert_eq!(surt("http://example.com:8080"), "com,example:8080)/");
        assert_eq!(surt("http://user@www2.example.co.uk/x"), "uk,co,example)/x");
        assert_eq!(surt("http://192.168.1.1/x"), "192.168.1.1)/x");
        assert_eq!(surt("dns:www.archive.org"), "dns:www.archive.org");
        assert_eq!(surt("example.com/x?"), "com,example)/x");
        assert_eq!(surt("http://www.com/"), "com,www)/");
    }

    #[test]
    fn hosts_and_redirects() {
        assert_eq!(host("https://www.Example.com:8080/a"), "example.com");
        assert_eq!(
            resolve("https://a.com/x/y.html?q", "z.html"),
            "https://a.com/x/z.html"
        );
        assert_eq!(resolve("https://a.com/x/y.html", "/r"), "https://a.com/r");
        assert_eq!(resolve("https://a.com/x", "//b.org/p"), "https://b.org/p");
        assert_eq!(resolve("https://a.com/x", "http://c.net/"), "http://c.net/");
    }
}
