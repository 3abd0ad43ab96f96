//! `sweeps`: sweep id (u32 BE, from 1 in order of first ingest) → [`SweepInfo`] (label,
//! date, counts; bincode). A value of constant size: the files of a sweep are in
//! `files` (each with its number), not listed here, so rewriting it with every record
//! costs the same whatever the number of files.
//!
//! Written by ingest (created before any capture points at it; its counts with every
//! record's batch). Read by `sweeps`, `stats`, the report, the service and ingest (a
//! sweep is resumed by label). A reader under access rules is told of the sweeps it may
//! see a capture of, each dated by the first of those ([`shown`]).

use super::host_sweeps::{First, Firsts};
use super::{Col, Column};
use crate::access::Reader;
use crate::index::codec::{decode, encode, SweepInfo};
use crate::index::{Index, Result};

/// Marker of the `sweeps` column family.
pub struct Sweeps;

impl Column for Sweeps {
    const NAME: &'static str = "sweeps";
    type Key = u32;
    type Value = SweepInfo;

    fn key(k: &u32) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u32, String> {
        super::be_u32(b)
    }

    fn value(v: &SweepInfo) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<SweepInfo, String> {
        decode(b)
    }
}

impl Col<'_, Sweeps> {
    /// Every sweep, by id, that reader `r` may be told of, dated as `r` would see it
    /// ([`shown`]; the hosts' first captures read from `host_sweeps`).
    pub fn all(&self, r: &Reader) -> Result<Vec<(u32, SweepInfo)>> {
        let mut every = Vec::new();
        self.for_each(|id, s| {
            every.push((id, s));
            Ok(true)
        })?;
        if !r.filtered() {
            return Ok(every);
        }
        shown(self.index, &every, r, &self.index.host_sweeps().firsts()?)
    }
}

/// Of `every` sweep, those reader `r` may be told of, each dated by the first capture
/// `r` may see in it (`firsts`: the hosts' first captures, from `host_sweeps`).
///
/// A sweep is dated by its first capture in input order (unless `--date` gave it one).
/// A reader under rules is told of the sweeps it may see a capture of, each dated by the
/// first of those, as an index without the hidden captures would date it: a host's
/// first capture stands for its captures of the sweep when it is visible; a host the
/// rules hide whole is passed over; only a host partly hidden is read (its capture keys)
/// for its first visible capture. A sweep whose date the embargo hides is not told of
/// (its first capture's date stands for it, unless a rule hides that capture). In an
/// index written before the hosts' first captures were kept, the sweep's own date
/// stands.
pub fn shown(
    index: &Index,
    every: &[(u32, SweepInfo)],
    r: &Reader,
    firsts: &Firsts,
) -> Result<Vec<(u32, SweepInfo)>> {
    let mut out = Vec::new();
    for (id, s) in every {
        let hosts = match firsts.get(id) {
            Some(Some(h)) if r.filtered() && !h.is_empty() => h,
            _ => {
                if r.time_shown(&s.date) {
                    out.push((*id, s.clone()));
                }
                continue;
            }
        };
        // The embargo judges the sweep by its date, unless that is the date of a
        // capture a rule hides: then by the first capture the reader may see.
        let first = &hosts[0].1;
        let own = s.date != first.timestamp || !r.rule_hides(&first.surt);
        if own && !r.time_shown(&s.date) {
            continue;
        }
        let Some(seen) = first_seen(index, r, *id, hosts)? else {
            continue;
        };
        let mut s = s.clone();
        // Dated by its first capture (not by `--date`): by the first one seen.
        if s.date == hosts[0].1.timestamp {
            s.date = seen;
        }
        out.push((*id, s));
    }
    Ok(out)
}

/// The date of the first capture of sweep `id` that `r` may see (none: it sees none),
/// from its hosts' first captures in input order.
fn first_seen(
    index: &Index,
    r: &Reader,
    id: u32,
    hosts: &[(String, First)],
) -> Result<Option<String>> {
    let mut best: Option<(u32, u32, String)> = None;
    let earlier = |best: &Option<(u32, u32, String)>, at: (u32, u32)| {
        best.as_ref().is_none_or(|b| at < (b.0, b.1))
    };
    for (host, f) in hosts {
        // Every capture of this host and of those after it comes later.
        if !earlier(&best, f.place()) {
            break;
        }
        if r.visible(&f.surt, &f.timestamp) {
            best = Some((f.file, f.record, f.timestamp.clone()));
            break;
        }
        // A host's capture keys all go on with `/` after its `)` (pywb's SURTs), so a
        // rule on `host)/` hides the whole host too.
        if r.hides_all_under(host) || r.hides_all_under(&format!("{host}/")) {
            continue;
        }
        if let Some(q) = index.captures().first_seen_in_sweep(r, host, id)? {
            if earlier(&best, (q.0, q.1)) {
                best = Some(q);
            }
        }
    }
    Ok(best.map(|b| b.2))
}
