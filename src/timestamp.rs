//! The 14-digit UTC timestamp (`YYYYMMDDhhmmss`) of CDX lines, capture keys and Wayback
//! URLs, and every conversion tidemark makes of one: from a WARC or ARC date, from a
//! prefix padded down or up (a CDX `from`/`to`, an embargo's date), to ISO 8601 and to
//! an HTTP date. One type, so the formats cannot drift apart.

use std::fmt;

/// A valid 14-digit timestamp.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp14([u8; 14]);

/// What a prefix is padded with, down (the earliest moment it names) and up (the last).
const LOWEST: &[u8; 14] = b"00000101000000";
const HIGHEST: &[u8; 14] = b"99991231235959";

impl Timestamp14 {
    /// Exactly 14 ASCII digits.
    pub fn new(ts: &str) -> Option<Self> {
        let b: [u8; 14] = ts.as_bytes().try_into().ok()?;
        b.iter().all(u8::is_ascii_digit).then_some(Timestamp14(b))
    }

    /// A prefix of 1 to 14 digits padded to the earliest (`upper` false) or the last
    /// (`upper` true) moment it names, as pywb and the Wayback CDX API read `from` and
    /// `to`: `2014` → `20140101000000` or `20141231235959`.
    pub fn from_prefix(prefix: &str, upper: bool) -> Option<Self> {
        if prefix.is_empty() || prefix.len() > 14 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut b = *if upper { HIGHEST } else { LOWEST };
        b[..prefix.len()].copy_from_slice(prefix.as_bytes());
        Some(Timestamp14(b))
    }

    /// Any WARC/ARC date (`2026-11-01T12:00:00Z`, with fractions, with `+00:00` or
    /// `-0700`, cut to the month or minute, or ARC's `20261101120000`). Missing parts
    /// are filled with their lowest value; offsets other than UTC are applied. A date
    /// that names no moment (ClueWeb's `2008-10-294T05:21:46-0700`, month 13, hour 40)
    /// is `None`, never digits that only look like one.
    pub fn from_warc_date(date: &str) -> Option<Self> {
        let d = date.trim();
        let utc = |t: chrono::DateTime<chrono::FixedOffset>| {
            Self::new(&t.to_utc().format("%Y%m%d%H%M%S").to_string()).map(Self::without_leap_second)
        };
        if let Ok(t) = chrono::DateTime::parse_from_rfc3339(d) {
            return utc(t);
        }
        // An offset without its colon (`-0700`), with or without fractions.
        if let Ok(t) = chrono::DateTime::parse_from_str(d, "%Y-%m-%dT%H:%M:%S%.f%z") {
            return utc(t);
        }
        // Digits of the date and time, up to the fraction or zone.
        let mut digits = String::with_capacity(14);
        for (i, c) in d.char_indices() {
            if c.is_ascii_digit() {
                digits.push(c);
                if digits.len() == 14 {
                    break;
                }
            } else if c == '.' || c == 'Z' || ((c == '+' || c == '-') && d[..i].contains('T')) {
                break;
            }
        }
        if digits.len() < 4 {
            return None;
        }
        let mut t = Self::from_prefix(&digits, false)?;
        // Month and day of 00 (cut dates) become 01.
        for at in [4, 6] {
            if &t.0[at..at + 2] == b"00" {
                t.0[at + 1] = b'1';
            }
        }
        t.is_moment().then(|| t.without_leap_second())
    }

    /// Second 60 (a leap second) as 59, as warcio and pywb write it: every other
    /// conversion (HTTP dates, distances) then holds.
    fn without_leap_second(mut self) -> Self {
        if &self.0[12..14] == b"60" {
            self.0[12..14].copy_from_slice(b"59");
        }
        self
    }

    /// An HTTP `Date` (RFC 1123, as `Sun, 06 Nov 1994 08:49:37 GMT`; RFC 850's
    /// `Sunday, 06-Nov-94 08:49:37 GMT`; C's `asctime`).
    pub fn from_http_date(date: &str) -> Option<Self> {
        let d = date.trim();
        let t = chrono::DateTime::parse_from_rfc2822(d)
            .map(|t| t.naive_utc())
            .or_else(|_| chrono::NaiveDateTime::parse_from_str(d, "%A, %d-%b-%y %H:%M:%S GMT"))
            .or_else(|_| chrono::NaiveDateTime::parse_from_str(d, "%a %b %e %H:%M:%S %Y"))
            .ok()?;
        Self::new(&t.format("%Y%m%d%H%M%S").to_string())
    }

    /// The digits name a moment of the calendar (a leap second is one).
    fn is_moment(&self) -> bool {
        let s = self.as_str();
        let (date, time) = s.split_at(8);
        let leap = time.ends_with("60");
        let time = if leap {
            format!("{}59", &time[..4])
        } else {
            time.to_string()
        };
        chrono::NaiveDateTime::parse_from_str(&format!("{date}{time}"), "%Y%m%d%H%M%S").is_ok()
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII digits")
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub fn iso(&self) -> String {
        let s = self.as_str();
        format!(
            "{}-{}-{}T{}:{}:{}Z",
            &s[..4],
            &s[4..6],
            &s[6..8],
            &s[8..10],
            &s[10..12],
            &s[12..14]
        )
    }

    /// RFC 1123, as HTTP's `Memento-Datetime` and `Last-Modified` want it:
    /// `Sun, 01 Nov 2026 12:00:00 GMT`; `None` for digits that are no date (month 13).
    pub fn http_date(&self) -> Option<String> {
        chrono::NaiveDateTime::parse_from_str(self.as_str(), "%Y%m%d%H%M%S")
            .ok()
            .map(|t| t.and_utc().format("%a, %d %b %Y %H:%M:%S GMT").to_string())
    }

    /// [`Timestamp14::iso`] of a timestamp read back from the index, or the text as given
    /// when it is not one (an index never holds such, but output never fails on it).
    pub fn iso_of(ts: &str) -> String {
        Self::new(ts).map_or_else(|| ts.to_string(), |t| t.iso())
    }

    /// [`Timestamp14::http_date`] of a timestamp read back from the index; empty when it
    /// is not one.
    pub fn http_date_of(ts: &str) -> String {
        Self::new(ts)
            .and_then(|t| t.http_date())
            .unwrap_or_default()
    }
}

impl fmt::Display for Timestamp14 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Timestamp14 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp14({})", self.as_str())
    }
}

impl From<Timestamp14> for String {
    fn from(t: Timestamp14) -> String {
        t.as_str().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::Timestamp14 as T;

    #[test]
    fn warc_and_arc_dates_become_14_digits() {
        let t = |d: &str| T::from_warc_date(d).map(String::from);
        assert_eq!(t("2026-11-01T12:00:00Z").unwrap(), "20261101120000");
        assert_eq!(t("2011-09-22T13:12:13.123456Z").unwrap(), "20110922131213");
        assert_eq!(t("2020-01-01T01:00:00+01:00").unwrap(), "20200101000000");
        assert_eq!(t("2014-03").unwrap(), "20140301000000");
        assert_eq!(t("2014").unwrap(), "20140101000000");
        assert_eq!(t("2014-03-25T12:12Z").unwrap(), "20140325121200");
        assert_eq!(t("19961104142103").unwrap(), "19961104142103");
        assert!(t("blue monday").is_none());
        // An offset without its colon is applied; a date that names no moment is none.
        assert_eq!(t("2008-10-29T05:21:46-0700").unwrap(), "20081029122146");
        for bad in ["2008-10-294T05:21:46-0700", "2014-13-01", "20140230120000"] {
            assert!(t(bad).is_none(), "{bad}");
        }
        assert_eq!(t("2016-12-31T23:59:60Z").unwrap(), "20161231235959");
    }

    #[test]
    fn http_dates_in_their_three_forms() {
        let h = |d: &str| T::from_http_date(d).map(String::from);
        assert_eq!(
            h("Sun, 06 Nov 1994 08:49:37 GMT").unwrap(),
            "19941106084937"
        );
        assert_eq!(
            h("Sunday, 06-Nov-94 08:49:37 GMT").unwrap(),
            "19941106084937"
        );
        assert_eq!(h("Sun Nov  6 08:49:37 1994").unwrap(), "19941106084937");
        assert!(h("yesterday").is_none());
    }

    #[test]
    fn prefixes_pad_down_and_up_and_refuse_what_is_not_one_to_14_digits() {
        let p = |s: &str, up: bool| T::from_prefix(s, up).map(String::from);
        assert_eq!(p("2014", false).unwrap(), "20140101000000");
        assert_eq!(p("2014", true).unwrap(), "20141231235959");
        assert_eq!(p("20140315", true).unwrap(), "20140315235959");
        assert_eq!(p("20140315101112", false).unwrap(), "20140315101112");
        for bad in ["", "2014-03", "201403151011121", "2014x"] {
            assert!(p(bad, false).is_none(), "{bad}");
        }
    }

    #[test]
    fn iso_and_http_dates() {
        let t = T::new("20261101120000").unwrap();
        assert_eq!(t.iso(), "2026-11-01T12:00:00Z");
        assert_eq!(t.http_date().unwrap(), "Sun, 01 Nov 2026 12:00:00 GMT");
        assert!(T::new("2026110112000").is_none());
        assert!(T::new("20261301120000").unwrap().http_date().is_none());
        assert_eq!(T::iso_of("not one"), "not one");
        assert_eq!(T::http_date_of("not one"), "");
    }
}
