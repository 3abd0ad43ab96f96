//! Capture ranges, as the CDX servers archivists run (pywb, OutbackCDX, the Wayback
//! Machine's) select them: one URL, a path prefix, a host or a domain with its
//! subdomains; within a time range; in key order, reversed, or — for one URL — closest
//! to a date first. The HTTP service streams these; nothing here knows about HTTP.

use crate::access::Reader;
use crate::index::{Index, Result};
use crate::read::RecordKind;
use crate::url::surt;

use super::CaptureRow;

/// Which captures a URL selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchType {
    /// The URL itself (its SURT key).
    Exact,
    /// Every URL whose SURT key starts with the URL's.
    Prefix,
    /// Every URL of the URL's host.
    Host,
    /// Every URL of the host and of its subdomains.
    Domain,
}

impl MatchType {
    /// From the `matchType` parameter.
    pub fn parse(s: &str) -> Option<MatchType> {
        Some(match s {
            "exact" => MatchType::Exact,
            "prefix" => MatchType::Prefix,
            "host" => MatchType::Host,
            "domain" => MatchType::Domain,
            _ => return None,
        })
    }

    /// How the CDX servers read a URL: a trailing `*` asks for a prefix, a leading `*.`
    /// for a domain (unless `matchType` says otherwise). Returns the URL without them.
    pub fn from_wildcards(url: &str, given: Option<MatchType>) -> (String, MatchType) {
        if let Some(rest) = url.strip_prefix("*.") {
            return (rest.to_string(), given.unwrap_or(MatchType::Domain));
        }
        if let Some(rest) = url.strip_suffix('*') {
            return (rest.to_string(), given.unwrap_or(MatchType::Prefix));
        }
        (url.to_string(), given.unwrap_or(MatchType::Exact))
    }
}

/// A set of captures: a key range and a time range.
#[derive(Debug, Clone)]
pub struct CaptureRange {
    /// Every key of the range starts with this.
    prefix: Vec<u8>,
    /// Where a forward scan starts (the prefix, or for one URL its first timestamp).
    start: Vec<u8>,
    /// Domain matching: the byte after the host's labels must be `)`, `,` or `:`.
    domain: bool,
    /// First and last timestamp, 14 digits, inclusive.
    from: String,
    to: String,
}

impl CaptureRange {
    /// The captures `url` selects under `match_type`, between `from` and `to` (14 digits,
    /// inclusive; see [`crate::timestamp::Timestamp14::from_prefix`]).
    pub fn new(url: &str, match_type: MatchType, from: Option<String>, to: Option<String>) -> Self {
        let mut key = surt(url);
        // SURT drops a trailing slash; a prefix query that gave one means it.
        if match_type == MatchType::Prefix && url.trim_end().ends_with('/') && !key.ends_with('/') {
            key.push('/');
        }
        CaptureRange::of_key(&key, match_type, from, to)
    }

    /// The same for a SURT key given as it is (the `urlkey` parameter).
    pub fn of_key(
        key: &str,
        match_type: MatchType,
        from: Option<String>,
        to: Option<String>,
    ) -> Self {
        let host_end = key.find(')').map(|i| i + 1).unwrap_or(key.len());
        let (prefix, domain) = match match_type {
            MatchType::Exact => {
                let mut p = key.as_bytes().to_vec();
                p.push(0);
                (p, false)
            }
            MatchType::Prefix => (key.as_bytes().to_vec(), false),
            MatchType::Host => (key[..host_end].as_bytes().to_vec(), false),
            MatchType::Domain => {
                let host = key[..host_end].trim_end_matches(')');
                let host = host.split(':').next().unwrap_or(host);
                (host.as_bytes().to_vec(), true)
            }
        };
        let from = from.unwrap_or_else(|| "00000101000000".into());
        let to = to.unwrap_or_else(|| "99991231235959".into());
        let mut start = prefix.clone();
        if match_type == MatchType::Exact {
            start.extend_from_slice(from.as_bytes());
        }
        CaptureRange {
            prefix,
            start,
            domain,
            from,
            to,
        }
    }

    /// Continues a scan after `key` (a capture key returned before): the resumption
    /// key of the Wayback Machine's API.
    pub fn after(mut self, key: &[u8]) -> Self {
        if key.starts_with(&self.prefix) && key > self.start.as_slice() {
            let mut k = key.to_vec();
            k.push(0);
            self.start = k;
        }
        self
    }

    /// Starts the scan at `key` (a capture key of this range, included): where a page
    /// of the Wayback API known from an earlier request begins.
    pub fn from_key(mut self, key: &[u8]) -> Self {
        if key.starts_with(&self.prefix) && key > self.start.as_slice() {
            self.start = key.to_vec();
        }
        self
    }

    fn holds(&self, key: &[u8], ts: &str) -> bool {
        if self.domain && !matches!(key.get(self.prefix.len()), Some(b')' | b',' | b':')) {
            return false;
        }
        ts >= self.from.as_str() && ts <= self.to.as_str()
    }

    /// Calls `each` with the key and the capture of every capture of the range, in key
    /// order (SURT, then timestamp) or reversed, until it returns `Ok(false)`.
    pub fn scan(
        &self,
        index: &Index,
        r: &Reader,
        reverse: bool,
        mut each: impl FnMut(&[u8], CaptureRow) -> Result<bool>,
    ) -> Result<()> {
        // Keys are UTF-8 text and 0x00 separators: 0xff sorts after the whole range.
        let mut past = self.prefix.clone();
        past.push(0xff);
        let (start, end) = if reverse {
            (past, self.prefix.clone())
        } else {
            (self.start.clone(), past)
        };
        index
            .captures()
            .scan_range(r, &start, &end, reverse, |key, (surt, ts, info)| {
                if !key.starts_with(&self.prefix) {
                    return Ok(false);
                }
                if !self.holds(key, ts) {
                    return Ok(true);
                }
                each(
                    key,
                    CaptureRow {
                        surt: surt.to_string(),
                        timestamp: ts.to_string(),
                        info,
                        file: crate::index::columns::captures::file_of_key(key),
                    },
                )
            })
    }
}

/// Captures of one URL ordered by distance from `closest` (14 digits), nearest first,
/// the earlier of two at the same distance first; at most `limit`.
pub fn closest(
    index: &Index,
    reader: &Reader,
    url: &str,
    closest: &str,
    limit: usize,
) -> Result<Vec<CaptureRow>> {
    let mut rows = Vec::new();
    if limit > 0 {
        closest_each(index, reader, url, closest, |r| {
            rows.push(r);
            Ok(rows.len() < limit)
        })?;
    }
    Ok(rows)
}

/// Calls `each` with the captures of one URL in the order of [`closest`] until it
/// returns false, reading only as far as it goes: two walks from the date's key, one
/// forward and one backward, merged by distance (the TimeGate reads two captures, not
/// the URL's whole history).
pub fn closest_each(
    index: &Index,
    reader: &Reader,
    url: &str,
    closest: &str,
    mut each: impl FnMut(CaptureRow) -> Result<bool>,
) -> Result<()> {
    let prefix = crate::index::columns::captures::url_prefix(&surt(url));
    let mut target = prefix.clone();
    target.extend_from_slice(closest.as_bytes());
    let mut past = prefix.clone();
    past.push(0xff);
    let captures = index.captures();
    // Only the captures the reader may see (`seen`: none for a hidden one).
    let row = |item: Result<crate::index::columns::RawEntry>| -> Option<Result<CaptureRow>> {
        let (k, v) = match item {
            Ok(kv) => kv,
            Err(e) => return Some(Err(e)),
        };
        match crate::index::columns::captures::seen(&captures, reader, &k, &v) {
            Err(e) => Some(Err(e)),
            Ok(None) => None,
            Ok(Some((surt, ts, info))) => Some(Ok(CaptureRow {
                surt: surt.to_string(),
                timestamp: ts.to_string(),
                info,
                file: crate::index::columns::captures::file_of_key(&k),
            })),
        }
    };
    // At or after the date, in key order; before it, backwards.
    let mut later = captures
        .iter_raw(&target, Some(&past), false)
        .filter_map(row)
        .peekable();
    let mut earlier = captures
        .iter_raw(&target, Some(&prefix), true)
        .filter_map(row)
        .peekable();
    // Captures of one second before the date, in key order (as the later ones come).
    let mut group: std::collections::VecDeque<CaptureRow> = Default::default();
    let target_s = seconds(closest);
    loop {
        if group.is_empty() {
            if let Some(first) = earlier.next().transpose()? {
                let mut g = vec![first];
                while matches!(earlier.peek(), Some(Ok(r)) if r.timestamp == g[0].timestamp) {
                    g.push(earlier.next().transpose()?.expect("peeked"));
                }
                g.reverse();
                group = g.into();
            }
        }
        let after = match later.peek() {
            Some(Ok(r)) => Some((seconds(&r.timestamp) - target_s).abs()),
            Some(Err(_)) => return later.next().expect("peeked").map(|_| ()),
            None => None,
        };
        let before = group
            .front()
            .map(|r| (target_s - seconds(&r.timestamp)).abs());
        // At the same distance the earlier capture first: the one before the date.
        let take_before = match (before, after) {
            (Some(b), Some(a)) => b <= a,
            (b, _) => b.is_some(),
        };
        let next = if take_before {
            group.pop_front()
        } else {
            later.next().transpose()?
        };
        match next {
            Some(r) => {
                if !each(r)? {
                    return Ok(());
                }
            }
            None => return Ok(()),
        }
    }
}

/// The capture a revisit record stands for: of the same URL, with the same payload
/// digest, not itself a revisit — the latest up to the revisit, else the first after it.
pub fn revisited(
    index: &Index,
    reader: &Reader,
    revisit: &CaptureRow,
) -> Result<Option<CaptureRow>> {
    let mut originals: Vec<CaptureRow> = Vec::new();
    CaptureRange::new(&revisit.info.url, MatchType::Exact, None, None).scan(
        index,
        reader,
        false,
        |_, r| {
            if r.info.kind != RecordKind::Revisit
                && r.info.digest.is_some()
                && r.info.digest == revisit.info.digest
            {
                originals.push(r);
            }
            Ok(true)
        },
    )?;
    let before = originals
        .iter()
        .rposition(|r| r.timestamp <= revisit.timestamp)
        .unwrap_or(0);
    Ok((!originals.is_empty()).then(|| originals.swap_remove(before)))
}

/// Seconds since 1970 of a 14-digit timestamp, for distances: each part clamped into
/// its range as warcio's `timestamp_to_sec` does (`20140231235959`, February padded up
/// to day 31, is the end of February; second 60 is 59).
pub(crate) fn seconds(ts: &str) -> i64 {
    let n = |a: usize, b: usize, lo: u32, hi: u32| {
        let v = ts
            .get(a..b)
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(lo);
        v.clamp(lo, hi)
    };
    let (y, m) = (n(0, 4, 1, 9999) as i32, n(4, 6, 1, 12));
    let last_day = (28..=31)
        .rev()
        .find(|d| chrono::NaiveDate::from_ymd_opt(y, m, *d).is_some())
        .unwrap_or(28);
    chrono::NaiveDate::from_ymd_opt(y, m, n(6, 8, 1, last_day))
        .and_then(|d| d.and_hms_opt(n(8, 10, 0, 23), n(10, 12, 0, 59), n(12, 14, 0, 59)))
        .map_or(0, |t| t.and_utc().timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_clamp_each_part_as_warcio_does() {
        assert_eq!(seconds("20140231235959"), seconds("20140228235959"));
        assert_eq!(seconds("20161231235960"), seconds("20161231235959"));
        assert_eq!(seconds("19700101000000"), 0);
        assert!(seconds("20140301000000") - seconds("20140228235959") == 1);
    }

    #[test]
    fn wildcards_say_the_match_type_unless_it_is_given() {
        use MatchType::*;
        assert_eq!(
            MatchType::from_wildcards("a.org/x*", None),
            ("a.org/x".into(), Prefix)
        );
        assert_eq!(
            MatchType::from_wildcards("*.a.org", None),
            ("a.org".into(), Domain)
        );
        assert_eq!(
            MatchType::from_wildcards("a.org/", None),
            ("a.org/".into(), Exact)
        );
        assert_eq!(
            MatchType::from_wildcards("a.org/x*", Some(Host)),
            ("a.org/x".into(), Host)
        );
        assert_eq!(MatchType::parse("domain"), Some(Domain));
        assert_eq!(MatchType::parse("regex"), None);
    }

    #[test]
    fn ranges_hold_their_keys_and_times() {
        let key = |surt: &str, ts: &str| {
            let mut k = crate::index::columns::captures::url_prefix(surt);
            k.extend_from_slice(ts.as_bytes());
            k
        };
        let exact = CaptureRange::of_key("org,a)/x", MatchType::Exact, Some("2014".into()), None);
        assert_eq!(exact.start, key("org,a)/x", "2014"));
        assert!(exact.holds(&key("org,a)/x", "20150101000000"), "20150101000000"));
        assert!(!exact.holds(&key("org,a)/x", "20130101000000"), "20130101000000"));
        // A domain: the host and its subdomains, not another host sharing the prefix.
        let domain = CaptureRange::of_key("org,a)/x", MatchType::Domain, None, None);
        assert_eq!(domain.prefix, b"org,a");
        assert!(domain.holds(b"org,a)/y\x0020140101000000", "20140101000000"));
        assert!(domain.holds(b"org,a,www)/\x0020140101000000", "20140101000000"));
        assert!(!domain.holds(b"org,ab)/\x0020140101000000", "20140101000000"));
        let host = CaptureRange::of_key("org,a:8080)/x", MatchType::Host, None, None);
        assert_eq!(host.prefix, b"org,a:8080)");
        // Resuming after a key starts past it; a key outside the range changes nothing.
        let after = exact.clone().after(&key("org,a)/x", "20150101000000"));
        assert!(after.start > key("org,a)/x", "20150101000000"));
        let same = exact.clone().after(b"org,b)/\x00");
        assert_eq!(same.start, exact.start);
        assert_eq!(
            exact.clone().from_key(&key("org,a)/x", "2016")).start,
            key("org,a)/x", "2016")
        );
    }
}
