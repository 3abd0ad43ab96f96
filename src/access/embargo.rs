//! Embargoes as pywb configures them (`embargo:` of a collection): captures dated
//! `before` or `after` a date, or `newer` or `older` than a span back from now, get the
//! embargo's access (`exclude` unless it says `block`). pywb 2.9.1 applies only the
//! first of the four that is set; tidemark applies every one that is set (a capture is
//! under embargo when any says so), which is the same for the one-bound configurations
//! pywb can express.

use chrono::{DateTime, Months, Timelike, Utc};

use super::Access;
use crate::timestamp::Timestamp14;

/// A span back from now: years, months, weeks and days.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    months: u32,
    days: u32,
}

impl Span {
    /// `1 year`, `6 months`, `2 weeks`, `30 days`, or several (`1 year 6 months`).
    pub fn parse(s: &str) -> Result<Span, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        if words.is_empty() || !words.len().is_multiple_of(2) {
            return Err(format!(
                "{s:?}: expected a span like \"1 year\", \"6 months\", \"2 weeks\" or \"30 days\""
            ));
        }
        let mut span = Span::default();
        for pair in words.chunks(2) {
            let n: u32 = pair[0]
                .parse()
                .map_err(|_| format!("{s:?}: {:?} is not a number", pair[0]))?;
            match pair[1].trim_end_matches('s') {
                "year" => span.months += 12 * n,
                "month" => span.months += n,
                "week" => span.days += 7 * n,
                "day" => span.days += n,
                u => return Err(format!("{s:?}: {u:?} is not years, months, weeks or days")),
            }
        }
        Ok(span)
    }

    /// 14 digits: `now` less this span.
    fn back_from(self, now: DateTime<Utc>) -> String {
        let t = now
            .checked_sub_months(Months::new(self.months))
            .and_then(|t| t.checked_sub_signed(chrono::Duration::days(self.days as i64)))
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        t.format("%Y%m%d%H%M%S").to_string()
    }
}

/// `[serve.embargo]`, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Embargo {
    access: Option<Access>,
    before: Option<String>,
    after: Option<String>,
    newer: Option<Span>,
    older: Option<Span>,
}

impl Embargo {
    /// From the settings (empty: unset). Dates are 4 to 14 digits, padded as pywb pads
    /// them (`2020` is `20200101000000`).
    pub fn parse(
        access: &str,
        before: &str,
        after: &str,
        newer: &str,
        older: &str,
    ) -> Result<Embargo, String> {
        let date = |name: &str, v: &str| -> Result<Option<String>, String> {
            if v.is_empty() {
                return Ok(None);
            }
            match Timestamp14::from_prefix(v, false) {
                Some(t) if v.len() >= 4 => Ok(Some(t.into())),
                _ => Err(format!(
                    "serve.embargo.{name}: {v:?} is not a date: expected 4 to 14 digits (YYYY[MM[DD[hh[mm[ss]]]]])"
                )),
            }
        };
        let span = |name: &str, v: &str| -> Result<Option<Span>, String> {
            if v.is_empty() {
                return Ok(None);
            }
            Span::parse(v)
                .map(Some)
                .map_err(|e| format!("serve.embargo.{name}: {e}"))
        };
        let e = Embargo {
            access: None,
            before: date("before", before)?,
            after: date("after", after)?,
            newer: span("newer", newer)?,
            older: span("older", older)?,
        };
        let access = match access {
            "exclude" | "" => Access::Exclude,
            "block" => Access::Block,
            "allow" => Access::Allow,
            o => {
                return Err(format!(
                    "serve.embargo.access: {o:?}: expected exclude, block or allow"
                ))
            }
        };
        Ok(Embargo {
            access: Some(access),
            ..e
        })
    }

    /// No bound set.
    pub fn is_empty(&self) -> bool {
        self.before.is_none()
            && self.after.is_none()
            && self.newer.is_none()
            && self.older.is_none()
    }

    /// The dates it hides, as of `now`.
    pub fn bounds(&self, now: DateTime<Utc>) -> Bounds {
        // Spans back from now move with the hour, each toward hiding more: what was
        // built under one hour's bounds (a cached report) never shows what the next
        // hour hides. `older` hides before now − span: from the next whole hour;
        // `newer` hides after now − span: from the last whole hour.
        let floor = now
            .with_minute(0)
            .and_then(|t| t.with_second(0))
            .and_then(|t| t.with_nanosecond(0))
            .unwrap_or(now);
        let ceil = if floor == now {
            now
        } else {
            floor + chrono::Duration::hours(1)
        };
        let lo = [self.before.clone(), self.older.map(|s| s.back_from(ceil))]
            .into_iter()
            .flatten()
            .max();
        let hi = [self.after.clone(), self.newer.map(|s| s.back_from(floor))]
            .into_iter()
            .flatten()
            .min();
        Bounds {
            access: self.access.unwrap_or(Access::Exclude),
            lo,
            hi,
        }
    }
}

/// An embargo at one moment: captures dated before `lo` or after `hi` are under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounds {
    access: Access,
    lo: Option<String>,
    hi: Option<String>,
}

impl Bounds {
    /// The embargo's access to a capture dated `ts` (14 digits), when it is under it.
    pub fn access_of(&self, ts: &str) -> Option<Access> {
        let under = self.lo.as_deref().is_some_and(|lo| ts < lo)
            || self.hi.as_deref().is_some_and(|hi| ts > hi);
        under.then_some(self.access)
    }

    /// Whether it hides captures of some date (an embargo that blocks lists them).
    pub fn hides_some(&self) -> bool {
        self.access == Access::Exclude && (self.lo.is_some() || self.hi.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_dates_parse_and_pad_as_pywb_does() {
        assert_eq!(Span::parse("1 year 6 months").unwrap().months, 18);
        assert_eq!(Span::parse("2 weeks 1 day").unwrap().days, 15);
        assert!(Span::parse("1 fortnight")
            .unwrap_err()
            .contains("fortnight"));
        assert!(Span::parse("year").is_err());
        let e = Embargo::parse("", "2010", "", "", "").unwrap();
        assert_eq!(e.before.as_deref(), Some("20100101000000"));
        assert!(Embargo::parse("", "20x0", "", "", "")
            .unwrap_err()
            .contains("serve.embargo.before"));
        assert!(Embargo::parse("hide", "", "", "", "")
            .unwrap_err()
            .contains("serve.embargo.access"));
    }

    #[test]
    fn newer_and_older_count_back_from_now() {
        let now = DateTime::parse_from_rfc3339("2026-03-31T12:00:00Z")
            .unwrap()
            .to_utc();
        let e = Embargo::parse("block", "", "", "1 month", "10 years").unwrap();
        let b = e.bounds(now);
        // A month back from March 31st is the last day of February.
        assert_eq!(b.hi.as_deref(), Some("20260228120000"));
        assert_eq!(b.lo.as_deref(), Some("20160331120000"));
        assert_eq!(b.access_of("20260301000000"), Some(Access::Block));
        assert_eq!(b.access_of("20260228120000"), None);
        assert_eq!(b.access_of("20160331115959"), Some(Access::Block));
        assert_eq!(b.access_of("20200101000000"), None);
        // Within the hour, each bound moves toward hiding more (a cached answer built
        // at 12:00 shows nothing hidden at 12:30).
        let half = now + chrono::Duration::minutes(30);
        let b = e.bounds(half);
        assert_eq!(b.hi.as_deref(), Some("20260228120000"));
        assert_eq!(b.lo.as_deref(), Some("20160331130000"));
        assert!(Embargo::default().is_empty());
        assert_eq!(
            Embargo::default().bounds(now).access_of("20200101000000"),
            None
        );
    }
}
