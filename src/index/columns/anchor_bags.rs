//! `anchor_bags`: sweep id u32 BE ‖ target SURT → the sample of the bag of words in the
//! anchor windows that point to the target from the sweep's pages ([`AnchorBag`]):
//! `1` (format), elements u32 LE, linking pages u32 LE, level u8, then the sample's
//! [`crate::sketch::compact`] values as u32 BE, ascending.
//!
//! A target needs no capture of its own: a URL the crawl never fetched has a bag when
//! pages link it. Written by ingest once a sweep's pages are all in (the whole sweep's
//! bags again when an ingest adds files to it), from `links`; read by `related`.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `anchor_bags` column family.
pub struct AnchorBags;

/// A key of `anchor_bags`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BagKey {
    /// Sweep id.
    pub sweep: u32,
    /// SURT of the page linked.
    pub target: String,
}

/// The sample of one target's bag of inbound anchor-window words.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AnchorBag {
    /// Elements of the bag: the words of its windows, each occurrence counted.
    pub elements: u32,
    /// Pages whose links gave them.
    pub sources: u32,
    /// The sample keeps the elements whose value is ≡ 0 mod 2^level.
    pub level: u8,
    /// The sample, compact values ascending.
    pub values: Vec<u32>,
}

const FORMAT: u8 = 1;
const HEAD: usize = 1 + 4 + 4 + 1;

/// The key bytes of (sweep, target).
pub fn key_of(sweep: u32, target: &str) -> Vec<u8> {
    super::sweep_surt_key(sweep, target)
}

impl Column for AnchorBags {
    const NAME: &'static str = "anchor_bags";
    type Key = BagKey;
    type Value = AnchorBag;

    fn key(k: &BagKey) -> Vec<u8> {
        key_of(k.sweep, &k.target)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<BagKey, String> {
        let (sweep, target) = super::decode_sweep_surt_key(b)?;
        Ok(BagKey { sweep, target })
    }

    fn value(v: &AnchorBag) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEAD + 4 * v.values.len());
        out.push(FORMAT);
        out.extend_from_slice(&v.elements.to_le_bytes());
        out.extend_from_slice(&v.sources.to_le_bytes());
        out.push(v.level);
        for c in &v.values {
            out.extend_from_slice(&c.to_be_bytes());
        }
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<AnchorBag, String> {
        if b.len() < HEAD || (b.len() - HEAD) % 4 != 0 || b[0] != FORMAT {
            return Err(format!(
                "{} bytes: not an anchor bag of format {FORMAT}",
                b.len()
            ));
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let values: Vec<u32> = b[HEAD..]
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if !values.is_sorted_by(|a, b| a < b) {
            return Err("an anchor bag whose values are not ascending".into());
        }
        Ok(AnchorBag {
            elements: u32_at(1),
            sources: u32_at(5),
            level: b[9],
            values,
        })
    }
}

impl Col<'_, AnchorBags> {
    /// The bag of `target` in sweep `sweep`.
    pub fn of(&self, sweep: u32, target: &str) -> Result<Option<AnchorBag>> {
        self.get(&BagKey {
            sweep,
            target: target.to_string(),
        })
    }

    /// Every bag of sweep `sweep`, by target, until `each` returns `Ok(false)`.
    pub fn of_sweep(
        &self,
        sweep: u32,
        each: impl FnMut(BagKey, AnchorBag) -> Result<bool>,
    ) -> Result<()> {
        self.scan_prefix(&sweep.to_be_bytes(), each)
    }

    /// Replaces the bags of sweep `sweep` by `bags` (sorted by target or not) in one
    /// atomic write, and its `inbound` and `anchor_targets` entries by `linked`'s
    /// (cleared first, written last: a build killed half-way leaves the sweep without
    /// `inbound` entries, which the next ingest builds; readers scan meanwhile).
    pub fn replace_sweep(
        &self,
        sweep: u32,
        bags: &[(String, AnchorBag)],
        linked: Option<&crate::links::inbound::LinkedBy>,
    ) -> Result<()> {
        super::inbound::clear_sweep(self.index, sweep)?;
        let mut b = rocksdb::WriteBatch::default();
        // No SURT holds byte 0xff (UTF-8 never does): the end of the sweep's keys.
        let mut end = sweep.to_be_bytes().to_vec();
        end.push(0xff);
        b.delete_range_cf(self.handle(), sweep.to_be_bytes().to_vec(), end);
        for (target, bag) in bags {
            b.put_cf(
                self.handle(),
                key_of(sweep, target),
                <AnchorBags as Column>::value(bag),
            );
        }
        self.index.db().write(b)?;
        match linked {
            Some(linked) => super::inbound::write_sweep(self.index, sweep, linked),
            None => Ok(()),
        }
    }
}
