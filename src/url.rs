//! URL canonicalization to SURT (Sort-friendly URI Reordering Transform), the key
//! archives index captures by: `http://www.archive.org/goo/?b&a=1` → `org,archive)/goo?a=1&b`.
//!
//! Exactly as pywb writes its keys (the Python `surt` package, 0.3.1, with its defaults:
//! Google's canonicalizer, then the Internet Archive's), so that a capture has the key an
//! `.aclj` rule or a CDX client written for pywb expects:
//! - the scheme is dropped (http, https, ftp share keys) and `http://` assumed when none
//!   is given; `user:pass@`, the fragment, the default port (80 for http, 443 for
//!   https) and a leading `www`, `www2`… label are dropped;
//! - percent-escapes are decoded again and again, then everything outside printable
//!   ASCII, `#` and `%` escaped once, so `po%69son` and `poison` are one key and a space
//!   is `%20`;
//! - the host: IDN to punycode, numeric forms of IPv4 (`3232235777`, `0300.0250.1.1`)
//!   dotted, labels reversed (IP addresses too: `34,216,184,93)`), a port kept inside;
//! - the path: `.` and `..` resolved, empty segments dropped, lower-cased, a trailing `/`
//!   dropped, ASP.NET session ids dropped;
//! - the query: session ids dropped, lower-cased, its `&`-separated arguments sorted;
//! - a URL without a host (`dns:host`, `urn:…`) keeps its scheme: `dns:www.archive.org`.

use regex::bytes::Regex;
use std::sync::LazyLock;

/// The SURT key of a URL, as pywb's (Python `surt`'s) for every URL it can read; for a
/// URL it cannot (a port that is not a number: pywb refuses it), the URL lower-cased.
pub fn surt(url: &str) -> String {
    surt_as_pywb(url).unwrap_or_else(|| url.trim().to_ascii_lowercase())
}

/// Checks that a URL asked of a capture index has a key as pywb reads URLs: anything
/// but an empty one or one whose port is not a number up to 65535 (pywb refuses those).
/// `dns:`, `urn:`, `chrome-extension:`… URLs are keyed as captures of them are.
pub fn check_key(url: &str) -> Result<(), String> {
    if url.trim().is_empty() || surt_as_pywb(url).is_none() {
        return Err(format!(
            "{url:?} is not a URL: expected [scheme:][//host[:port]][/path][?query], a port from 0 to 65535"
        ));
    }
    Ok(())
}

/// The key Python's `surt.surt(url)` gives, or None where it raises.
pub(crate) fn surt_as_pywb(url: &str) -> Option<String> {
    let raw = url.as_bytes();
    if raw.is_empty() {
        return Some("-".into());
    }
    if raw.starts_with(b"filedesc") {
        return Some(url.to_string());
    }
    if let Some(key) = plain_surt(raw) {
        return Some(key);
    }
    let u = Parsed::parse(raw)?;
    Some(String::from_utf8_lossy(&u.canonical()).into_owned())
}

/// The key of a plain URL — `http(s)://host[/path]`, the host a name of letters, digits,
/// `-` and inner dots, the path of letters, digits, `-._~/` without empty, `.` or `..`
/// segments, no port, query or fragment — without the general steps, which give it
/// the same (every URL a page links is keyed: the general steps were 7% of the CPU of
/// a generated sweep's ingest). None for any other URL.
fn plain_surt(raw: &[u8]) -> Option<String> {
    let rest = (raw.strip_prefix(b"http://")).or_else(|| raw.strip_prefix(b"https://"))?;
    let host_end = rest.iter().position(|b| *b == b'/').unwrap_or(rest.len());
    let (host, path) = rest.split_at(host_end);
    let label =
        |l: &[u8]| !l.is_empty() && l.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-');
    // A name, not an address (`inet_aton` reads digits and dots as one).
    if !host.split(|b| *b == b'.').all(label)
        || host.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        || host.starts_with(b"0x")
        || host.starts_with(b"0X")
    {
        return None;
    }
    let segment = |s: &[u8]| {
        !matches!(s, b"" | b"." | b"..")
            && s.iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
    };
    if !path.is_empty() {
        let inner = path[1..].strip_suffix(b"/").unwrap_or(&path[1..]);
        if path.len() > 1 && !inner.split(|b| *b == b'/').all(segment) {
            return None;
        }
    }
    let mut host = host.to_ascii_lowercase();
    if let Some(after) = host.strip_prefix(b"www") {
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        if after.get(digits) == Some(&b'.') {
            host.drain(..3 + digits + 1);
        }
    }
    let mut out = String::with_capacity(host.len() + path.len() + 2);
    for (i, l) in host.rsplit(|b| *b == b'.').enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(std::str::from_utf8(l).ok()?);
    }
    out.push(')');
    let path = match path {
        b"" | b"/" => &b"/"[..],
        p => p.strip_suffix(b"/").unwrap_or(p),
    };
    out.push_str(&std::str::from_utf8(path).ok()?.to_ascii_lowercase());
    Some(out)
}

/// A URL split as `handyurl.parse` splits it.
#[derive(Debug, Default)]
struct Parsed {
    scheme: Vec<u8>,
    host: Option<Vec<u8>>,
    port: Option<u32>,
    path: Option<Vec<u8>>,
    query: Option<Vec<u8>>,
}

impl Parsed {
    fn parse(raw: &[u8]) -> Option<Parsed> {
        let trimmed = raw.trim_ascii();
        let mut u: Vec<u8> = (trimmed.iter())
            .copied()
            .filter(|b| !matches!(b, b'\n' | b'\r' | b'\t'))
            .collect();
        if u.is_empty() {
            return Some(Parsed {
                scheme: b"http".to_vec(),
                ..Default::default()
            });
        }
        if scheme_len(&u).is_none() {
            u.splice(0..0, b"http://".iter().copied());
        }
        // `^(https?://)+` → its last repetition.
        let mut at = 0;
        let mut last = None;
        loop {
            let n = if u[at..].starts_with(b"http://") {
                7
            } else if u[at..].starts_with(b"https://") {
                8
            } else {
                break;
            };
            last = Some(at);
            at += n;
        }
        if let Some(l) = last {
            u.drain(..l);
        }
        // RFC 2396's split.
        let sl = scheme_len(&u)?;
        let scheme = u[..sl].to_vec();
        let mut rest = &u[sl + 1..];
        let mut netloc: &[u8] = b"";
        if rest.starts_with(b"//") {
            let end = (rest[2..].iter())
                .position(|b| matches!(b, b'/' | b'?' | b'#'))
                .map_or(rest.len(), |i| i + 2);
            netloc = &rest[2..end];
            rest = &rest[end..];
        }
        let pend = (rest.iter())
            .position(|b| matches!(b, b'?' | b'#'))
            .unwrap_or(rest.len());
        let path = &rest[..pend];
        rest = &rest[pend..];
        let mut query: &[u8] = b"";
        if let Some(q) = rest.strip_prefix(b"?") {
            let qend = q.iter().position(|b| *b == b'#').unwrap_or(q.len());
            query = &q[..qend];
        }
        // A host ending in `:` with no port.
        while let Some(n) = netloc.strip_suffix(b":") {
            netloc = n;
        }
        let (hostname, port) = host_port(netloc)?;
        let mut host = hostname.filter(|h| !h.is_empty());
        let mut path = Some(path.to_vec()).filter(|p| !p.is_empty());
        if scheme.starts_with(b"http") && host.is_none() {
            if let Some(p) = &path {
                let p = trim_start(p, b'/');
                let (h, tail) = match p.iter().position(|b| *b == b'/') {
                    Some(i) => (&p[..i], &p[i + 1..]),
                    None => (p, &b""[..]),
                };
                host = Some(h.to_vec());
                let mut np = b"/".to_vec();
                np.extend_from_slice(tail);
                path = Some(np);
            }
        }
        Some(Parsed {
            scheme,
            host: host.filter(|h| !h.is_empty()),
            port,
            path,
            query: Some(query.to_vec()).filter(|q| !q.is_empty()),
        })
    }

    /// Google's canonicalizer, then the Internet Archive's, then the SURT form.
    fn canonical(mut self) -> Vec<u8> {
        // Google's.
        if let Some(q) = &self.query {
            self.query = Some(escape_once(&unescape_repeatedly(q)));
        }
        if let Some(h) = &self.host {
            let mut h = unescape_repeatedly(h);
            if !h.is_ascii() {
                let text = String::from_utf8_lossy(&h).replace('\u{FFFD}', "");
                if let Ok(a) = idna::domain_to_ascii(&text) {
                    h = a.into_bytes();
                }
            }
            let h = replace_double_dots(&h);
            let h = trim_dots(&h);
            self.host = Some(match ip_formats(h) {
                Some(ip) => ip.into_bytes(),
                None => escape_once(&h.to_ascii_lowercase()),
            });
        }
        let mut path = self.path.as_deref().map(unescape_repeatedly);
        if self.host.as_ref().is_some_and(|h| !h.is_empty()) {
            path = Some(normalize_path(path.as_deref().unwrap_or(b"")));
        }
        self.path = path.map(|p| escape_once(&p)).filter(|p| !p.is_empty());
        // The Internet Archive's.
        if let Some(h) = &mut self.host {
            h.make_ascii_lowercase();
            if self.scheme != b"dns" {
                if let Some(m) = WWW.find(h) {
                    h.drain(..m.end());
                }
            }
        }
        let default_port = match self.scheme.to_ascii_lowercase().as_slice() {
            b"http" => 80,
            b"https" => 443,
            _ => 0,
        };
        if self.port == Some(default_port) {
            self.port = None;
        }
        if let Some(p) = &mut self.path {
            p.make_ascii_lowercase();
            let mut p2 = strip_path_session_id(p);
            if p2.len() > 1 && p2.ends_with(b"/") {
                p2.pop();
            }
            *p = p2;
        }
        self.path = self.path.filter(|p| !p.is_empty());
        if let Some(q) = &self.query {
            let mut q = strip_query_session_id(q);
            q.make_ascii_lowercase();
            self.query = Some(alpha_reorder(&q)).filter(|q| !q.is_empty());
        }
        // The SURT form, without the scheme.
        let mut out = Vec::new();
        match self.host.as_ref().filter(|h| !h.is_empty()) {
            Some(h) => {
                let mut labels: Vec<&[u8]> = h.split(|b| *b == b'.').collect();
                labels.reverse();
                out.extend_from_slice(&labels.join(&b',')[..]);
                if let Some(p) = self.port {
                    out.extend_from_slice(format!(":{p}").as_bytes());
                }
                out.push(b')');
            }
            None => {
                out.extend_from_slice(&self.scheme);
                out.push(b':');
            }
        }
        match &self.path {
            Some(p) => out.extend_from_slice(p),
            None if self.query.is_some() => out.push(b'/'),
            None => {}
        }
        if let Some(q) = &self.query {
            out.push(b'?');
            out.extend_from_slice(q);
        }
        out
    }
}

static WWW: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^www\d*\.").expect("a regex"));

/// The length of a leading `scheme` (a letter, then letters, digits, `+`, `-`, `.`)
/// followed by `:`.
fn scheme_len(u: &[u8]) -> Option<usize> {
    if !u.first()?.is_ascii_alphabetic() {
        return None;
    }
    let n = (u.iter())
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))
        .unwrap_or(u.len());
    (u.get(n) == Some(&b':')).then_some(n)
}

/// Host and port of a network location as Python's `urlsplit` reads them (the host
/// lower-cased, without brackets); None where Python raises (a port not a number or
/// past 65535).
#[allow(clippy::type_complexity)]
fn host_port(netloc: &[u8]) -> Option<(Option<Vec<u8>>, Option<u32>)> {
    let info = match netloc.iter().rposition(|b| *b == b'@') {
        Some(i) => &netloc[i + 1..],
        None => netloc,
    };
    let (host, port): (&[u8], &[u8]) = match info.iter().position(|b| *b == b'[') {
        Some(i) => {
            let br = &info[i + 1..];
            let (h, after) = match br.iter().position(|b| *b == b']') {
                Some(j) => (&br[..j], &br[j + 1..]),
                None => (br, &b""[..]),
            };
            let port = match after.iter().position(|b| *b == b':') {
                Some(k) => &after[k + 1..],
                None => b"",
            };
            (h, port)
        }
        None => match info.iter().position(|b| *b == b':') {
            Some(i) => (&info[..i], &info[i + 1..]),
            None => (info, &b""[..]),
        },
    };
    let port = match port {
        b"" => None,
        p if p.iter().all(u8::is_ascii_digit) => {
            let n: u64 = std::str::from_utf8(p).ok()?.parse().ok()?;
            if n > 65535 {
                return None;
            }
            Some(n as u32).filter(|n| *n != 0)
        }
        _ => return None,
    };
    let host = (!host.is_empty()).then(|| host.to_ascii_lowercase());
    Some((host, port))
}

fn trim_start(p: &[u8], c: u8) -> &[u8] {
    let n = p.iter().take_while(|b| **b == c).count();
    &p[n..]
}

fn trim_dots(h: &[u8]) -> &[u8] {
    let h = trim_start(h, b'.');
    let n = h.iter().rev().take_while(|b| **b == b'.').count();
    &h[..h.len() - n]
}

/// Python's `replace(b'..', b'.')`: one pass, left to right, not overlapping.
fn replace_double_dots(h: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(h.len());
    let mut i = 0;
    while i < h.len() {
        if h[i] == b'.' && h.get(i + 1) == Some(&b'.') {
            out.push(b'.');
            i += 2;
        } else {
            out.push(h[i]);
            i += 1;
        }
    }
    out
}

/// `%XX` decoded until nothing changes.
fn unescape_repeatedly(s: &[u8]) -> Vec<u8> {
    let mut cur = s.to_vec();
    loop {
        let next = unescape_once(&cur);
        if next == cur {
            return cur;
        }
        cur = next;
    }
}

fn unescape_once(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            if let (Some(a), Some(b)) = (
                s.get(i + 1).copied().and_then(hex),
                s.get(i + 2).copied().and_then(hex),
            ) {
                out.push(a * 16 + b);
                i += 3;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// Everything but printable ASCII, `#` and `%` escaped (Python's `quote` with the
/// canonicalizer's safe characters).
fn escape_once(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s {
        if b > 0x20 && b < 0x7f && b != b'#' && b != b'%' {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

/// `.` and `..` segments resolved, empty segments dropped but a last one (the path's
/// trailing `/`): Google's `normalizePath`.
fn normalize_path(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b"/".to_vec();
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    for p in path.split(|b| *b == b'/').skip(1) {
        match p {
            b"." => {}
            b".." => {
                if kept.pop().is_none() {
                    kept.push(p);
                }
            }
            _ => kept.push(p),
        }
    }
    let mut out = b"/".to_vec();
    if let Some((last, before)) = kept.split_last() {
        for p in before.iter().filter(|p| !p.is_empty()) {
            out.extend_from_slice(p);
            out.push(b'/');
        }
        out.extend_from_slice(last);
    }
    out
}

/// A numeric IPv4 host in the form `inet_aton` reads (one number, or dotted parts in
/// decimal, octal or hex), dotted: Google's `attemptIPFormats`.
fn ip_formats(host: &[u8]) -> Option<String> {
    if !host.is_empty() && host.iter().all(u8::is_ascii_digit) {
        let n: u128 = std::str::from_utf8(host).ok()?.parse().ok()?;
        let n = (n & 0xffff_ffff) as u32;
        return Some(std::net::Ipv4Addr::from(n).to_string());
    }
    static DECIMAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^([1-9][0-9]*)(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$").expect("a regex")
    });
    static OCTAL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(0[0-7]*)(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$").expect("a regex")
    });
    if !(DECIMAL.is_match(host) || OCTAL.is_match(host)) {
        return None;
    }
    inet_aton(std::str::from_utf8(host).ok()?).map(|a| a.to_string())
}

/// C's `inet_aton`: `a`, `a.b`, `a.b.c` or `a.b.c.d`, each part decimal, `0`-led octal
/// or `0x` hex, the last part filling the bytes left.
fn inet_aton(s: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<u64> = (s.split('.'))
        .map(|p| {
            if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                u64::from_str_radix(h, 16).ok()
            } else if p.len() > 1 && p.starts_with('0') {
                u64::from_str_radix(&p[1..], 8).ok()
            } else {
                p.parse().ok()
            }
        })
        .collect::<Option<_>>()?;
    let n = parts.len();
    if n == 0 || n > 4 {
        return None;
    }
    let (head, last) = parts.split_at(n - 1);
    if head.iter().any(|p| *p > 255) || last[0] >= 1u64 << (8 * (5 - n) as u32) {
        return None;
    }
    let mut v: u64 = 0;
    for (i, p) in head.iter().enumerate() {
        v |= p << (24 - 8 * i);
    }
    Some(std::net::Ipv4Addr::from((v | last[0]) as u32))
}

/// ASP.NET session ids in a path dropped (the IA canonicalizer's).
fn strip_path_session_id(path: &[u8]) -> Vec<u8> {
    static RES: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            Regex::new(r"(?i-u)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$"),
            Regex::new(r"(?i-u)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$"),
        ]
        .map(|r| r.expect("a regex"))
    });
    let mut p = path.to_vec();
    for re in RES.iter() {
        if let Some(c) = re.captures(&p) {
            let mut out = c[1].to_vec();
            out.extend_from_slice(&c[3]);
            p = out;
        }
    }
    p
}

/// Session ids in a query dropped (the IA canonicalizer's).
fn strip_query_session_id(query: &[u8]) -> Vec<u8> {
    static RES: LazyLock<[Regex; 5]> = LazyLock::new(|| {
        [
            r"(?i-u)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$",
            r"(?i-u)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$",
            r"(?i-u)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$",
            r"(?i-u)^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$",
            r"(?i-u)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$",
        ]
        .map(|r| Regex::new(r).expect("a regex"))
    });
    let mut q = query.to_vec();
    for re in RES.iter() {
        if let Some(c) = re.captures(&q) {
            let mut out = c[1].to_vec();
            if let Some(g) = c.get(2).filter(|g| !g.is_empty()) {
                out.extend_from_slice(g.as_bytes());
            }
            q = out;
        }
    }
    q
}

/// The query's `&`-separated arguments sorted as (name, value) pairs, an argument
/// without `=` before one with the same name and a value.
fn alpha_reorder(q: &[u8]) -> Vec<u8> {
    if q.len() <= 1 {
        return q.to_vec();
    }
    let mut args: Vec<(&[u8], Option<&[u8]>)> = (q.split(|b| *b == b'&'))
        .map(|a| match a.iter().position(|b| *b == b'=') {
            Some(i) => (&a[..i], Some(&a[i + 1..])),
            None => (a, None),
        })
        .collect();
    args.sort();
    let parts: Vec<Vec<u8>> = (args.into_iter())
        .map(|(k, v)| match v {
            Some(v) => [k, b"=", v].concat(),
            None => k.to_vec(),
        })
        .collect();
    parts.join(&b'&')
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
    fn plain_urls_keyed_as_the_general_steps_key_them() {
        // URLs made of the pieces where plain and general keys could part: every one
        // the plain steps key must have the general steps' key.
        let schemes = [
            "http://",
            "https://",
            "HTTP://",
            "ftp://",
            "",
            "http://http://",
        ];
        let hosts = [
            "example.org",
            "WWW.Example.ORG",
            "www2.example.org",
            "www.com",
            "wwwx.org",
            "www2x.example.org",
            "192.168.1.1",
            "3232235777",
            "0300.0250.1.1",
            "1.2.3.a",
            "0x7f.0.0.1",
            "a..b",
            ".a.b",
            "a.b.",
            "a_b.org",
            "xn--bcher-kva.example",
            "b\u{fc}cher.de",
            "user@host.org",
            "host.org:80",
            "host.org:8080",
            "",
        ];
        let paths = [
            "",
            "/",
            "//",
            "/a",
            "/a/",
            "/A/B.html",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/.",
            "/..",
            "/a/.",
            "/~user/x-y_z.txt",
            "/a%2fb",
            "/a b",
            "/(S(abcdefghijklmnopqrstuvwx))/x.aspx",
            "/index.HTML",
            "/a/b/",
            "/a?b=1",
            "/a#f",
            "/x;y",
            "/a:b",
        ];
        let mut plain = 0;
        for sc in schemes {
            for h in hosts {
                for p in paths {
                    let u = format!("{sc}{h}{p}");
                    let general = Parsed::parse(u.as_bytes())
                        .map(|x| String::from_utf8_lossy(&x.canonical()).into_owned());
                    if let Some(k) = plain_surt(u.as_bytes()) {
                        plain += 1;
                        assert_eq!(Some(k), general, "{u}");
                    }
                }
            }
        }
        assert!(plain > 100, "{plain}");
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
        assert_eq!(surt("http://192.168.1.1/x"), "1,1,168,192)/x");
        assert_eq!(surt("http://3232235777/x"), "1,1,168,192)/x");
        assert_eq!(
            surt("http://example.com/po%69son/a b"),
            "com,example)/poison/a%20b"
        );
        assert_eq!(
            surt("http://example.com/a/./b/../c//d/"),
            "com,example)/a/c/d"
        );
        assert_eq!(surt("http://bücher.de/"), "de,xn--bcher-kva)/");
        assert_eq!(
            surt("chrome-extension://react-perf/page.bundle.js"),
            "react-perf)/page.bundle.js"
        );
        assert_eq!(surt("dns:www.archive.org"), "dns:www.archive.org");
        assert_eq!(surt("example.com/x?"), "com,example)/x");
        assert_eq!(surt("http://www.com/"), "com)/");
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
