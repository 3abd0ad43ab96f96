//! `host_sweeps`: host SURT (through its `)`) ‖ 0x00 ‖ sweep id u32 BE → the host's first
//! capture in that sweep ([`First`]: file number u32 BE ‖ record number u32 BE ‖
//! timestamp, 14 ASCII digits ‖ its SURT's length u32 BE ‖ its SURT), or nothing in an index written before the
//! value was kept. Which sweeps captured any URL of a host: a URL missing from a sweep
//! that still captured its host has vanished, not merely gone uncrawled. And where each
//! host's captures of a sweep begin: a sweep is dated by its first capture, and for a
//! reader under access rules by the first one it may see
//! ([`super::sweeps`]), found from the hosts' first captures without reading the
//! sweep's.
//!
//! Written by ingest (once per host and sweep: a resumed run keeps the value an earlier
//! run wrote). Read by `whereis`, `history` and the sweeps a reader is told of.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `host_sweeps` column family.
pub struct HostSweeps;

/// Bytes of a value before its SURT: file, record, timestamp, SURT length.
const HEAD: usize = 4 + 4 + 14 + 4;

/// A host's first capture in a sweep: where it is in the sweep's input (file and
/// record numbers, as in its `captures` key), its date and its SURT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct First {
    /// The file's number in the sweep.
    pub file: u32,
    /// The record's number in the file.
    pub record: u32,
    /// 14-digit timestamp.
    pub timestamp: String,
    /// SURT of its URL.
    pub surt: String,
}

impl First {
    /// Its place in the sweep's input.
    pub fn place(&self) -> (u32, u32) {
        (self.file, self.record)
    }
}

/// The hosts' first captures of each sweep, by sweep, each sweep's in input order (host
/// SURT, first capture); `None` for a sweep one of whose hosts has no first capture kept
/// (an index written before they were).
pub type Firsts = std::collections::HashMap<u32, Option<Vec<(String, First)>>>;

impl Column for HostSweeps {
    const NAME: &'static str = "host_sweeps";
    /// Host SURT, sweep id.
    type Key = (String, u32);
    type Value = Option<First>;

    fn key((host, sweep): &(String, u32)) -> Vec<u8> {
        super::host_sweep_key(host, *sweep)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<(String, u32), String> {
        super::decode_host_sweep_key(b)
    }

    fn value(v: &Option<First>) -> Vec<u8> {
        let Some(f) = v else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(HEAD + f.surt.len());
        out.extend_from_slice(&f.file.to_be_bytes());
        out.extend_from_slice(&f.record.to_be_bytes());
        out.extend_from_slice(f.timestamp.as_bytes());
        out.extend_from_slice(&(f.surt.len() as u32).to_be_bytes());
        out.extend_from_slice(f.surt.as_bytes());
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Option<First>, String> {
        if b.is_empty() {
            return Ok(None);
        }
        let len = b.get(22..HEAD).map(super::be_u32).transpose()?;
        if len.is_none_or(|n| b.len() != HEAD + n as usize) {
            return Err(format!(
                "{} bytes: not file ‖ record ‖ timestamp ‖ SURT length ‖ SURT",
                b.len()
            ));
        }
        let ts = std::str::from_utf8(&b[8..22])
            .ok()
            .filter(|t| t.bytes().all(|c| c.is_ascii_digit()))
            .ok_or("a timestamp that is not 14 digits")?;
        Ok(Some(First {
            file: super::be_u32(&b[..4])?,
            record: super::be_u32(&b[4..8])?,
            timestamp: ts.to_string(),
            surt: String::from_utf8(b[HEAD..].to_vec()).map_err(|_| "a SURT that is not UTF-8")?,
        }))
    }
}

impl Col<'_, HostSweeps> {
    /// Sweep ids in which any URL of `host` (a host SURT) was captured, ascending.
    pub fn of_host(&self, host: &str) -> Result<Vec<u32>> {
        let mut prefix = host.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        self.scan_prefix(&prefix, |(h, sweep), _| {
            // A longer host sharing the prefix cannot: hosts end in `)`, before the 0.
            if h == host {
                out.push(sweep);
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// The hosts' first captures of every sweep (one pass over the family: a row per
    /// host and sweep).
    pub fn firsts(&self) -> Result<Firsts> {
        let mut out: Firsts = Default::default();
        self.for_each(|(host, sweep), first| {
            let e = out.entry(sweep).or_insert_with(|| Some(Vec::new()));
            match (e.as_mut(), first) {
                (Some(v), Some(f)) => v.push((host, f)),
                _ => *e = None,
            }
            Ok(true)
        })?;
        for v in out.values_mut().flatten() {
            v.sort_by(|a, b| a.1.place().cmp(&b.1.place()));
        }
        Ok(out)
    }
}
