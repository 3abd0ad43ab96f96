//! `host_sweeps`: host SURT (through its `)`) ‖ 0x00 ‖ sweep id u32 BE → nothing. Which
//! sweeps captured any URL of a host: a URL missing from a sweep that still captured its
//! host has vanished, not merely gone uncrawled.
//!
//! Written by ingest (once per host and sweep). Read by `whereis` and `history`.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `host_sweeps` column family.
pub struct HostSweeps;

impl Column for HostSweeps {
    const NAME: &'static str = "host_sweeps";
    /// Host SURT, sweep id.
    type Key = (String, u32);
    type Value = ();

    fn key((host, sweep): &(String, u32)) -> Vec<u8> {
        super::host_sweep_key(host, *sweep)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<(String, u32), String> {
        super::decode_host_sweep_key(b)
    }

    fn value(_: &()) -> Vec<u8> {
        Vec::new()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<(), String> {
        super::empty_value(b)
    }
}

impl Col<'_, HostSweeps> {
    /// Sweep ids in which any URL of `host` (a host SURT) was captured, ascending.
    pub fn of_host(&self, host: &str) -> Result<Vec<u32>> {
        let mut prefix = host.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        self.scan_prefix(&prefix, |(h, sweep), ()| {
            // A longer host sharing the prefix cannot: hosts end in `)`, before the 0.
            if h == host {
                out.push(sweep);
            }
            Ok(true)
        })?;
        Ok(out)
    }
}
