//! `template_values`: template id u32 BE → the template's sample values (level-major
//! compact, ascending; bincode). Written once per id, never changed nor deleted: a doc
//! compared by content (`cluster.resemblance = "content"`) names the template it was
//! compared without in its sketch, and every later comparison with it leaves the same
//! values out. `templates` says which id is a host's in a sweep.
//!
//! Written at the end of an ingest ([`crate::ingest`]'s templates step); read by ingest
//! (the pair step) when it starts.

use super::{Col, Column};
use crate::index::codec::{decode, encode};
use crate::index::Result;

/// Marker of the `template_values` column family.
pub struct TemplateValues;

impl Column for TemplateValues {
    const NAME: &'static str = "template_values";
    type Key = u32;
    type Value = Vec<u32>;

    fn key(id: &u32) -> Vec<u8> {
        id.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u32, String> {
        let b: [u8; 4] = b
            .try_into()
            .map_err(|_| "a template id of another length")?;
        Ok(u32::from_be_bytes(b))
    }

    fn value(v: &Vec<u32>) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<u32>, String> {
        let v: Vec<u32> = decode(b)?;
        if !v.is_sorted_by(|a, b| a < b) {
            return Err("template values out of order".into());
        }
        Ok(v)
    }
}

impl Col<'_, TemplateValues> {
    /// Every template, by id.
    pub fn all(&self) -> Result<crate::template::TemplateSet> {
        let mut out = crate::template::TemplateSet::default();
        self.scan_prefix(&[], |id, values| {
            out.insert(id, values);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The next id to give: one past the highest (ids start at 1).
    pub fn next_id(&self) -> Result<u32> {
        let mut last = 0;
        self.scan_prefix(&[], |id, _| {
            last = id;
            Ok(true)
        })?;
        Ok(last + 1)
    }
}
