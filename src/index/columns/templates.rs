//! `templates`: host SURT (through its `)`) ‖ 0x00 ‖ sweep id u32 BE → [`Template`]
//! (pages sampled, the template's sample values; bincode). A host's template in one
//! sweep: the sample values in at least `template.share` of its sampled pages
//! ([`crate::template`]). Hosts with fewer than `template.min_pages` sampled pages have
//! none.
//!
//! Written at the end of every ingest into a sweep (learned again from the sweep's
//! sample, `sweep_pages`). Read by ingest (content resemblance to the previous
//! capture), `similar`, `whereis` and the report (template changes).

use super::{Col, Column};
use crate::index::codec::{decode, encode};
use crate::index::Result;
use crate::template::Template;

/// Marker of the `templates` column family.
pub struct Templates;

impl Column for Templates {
    const NAME: &'static str = "templates";
    /// Host SURT, sweep id.
    type Key = (String, u32);
    type Value = Template;

    fn key((host, sweep): &(String, u32)) -> Vec<u8> {
        super::host_sweep_key(host, *sweep)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<(String, u32), String> {
        super::decode_host_sweep_key(b)
    }

    fn value(v: &Template) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Template, String> {
        let t: Template = decode(b)?;
        if !t.values.is_sorted_by(|a, b| a < b) {
            return Err("template values out of order".into());
        }
        Ok(t)
    }
}

impl Col<'_, Templates> {
    /// Every template of `host` (a host SURT): (sweep id, template), by sweep id.
    pub fn of_host(&self, host: &str) -> Result<Vec<(u32, Template)>> {
        let mut prefix = host.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        self.scan_prefix(&prefix, |(h, sweep), t| {
            if h == host {
                out.push((sweep, t));
            }
            Ok(true)
        })?;
        Ok(out)
    }
}
