//! `anchor_targets`: sweep id u32 BE ‖ anchor text → how many URLs the sweep's links
//! with that anchor text name: one byte, [`MIN_TARGETS`] to [`MAX_TARGETS`] (the
//! latter: that many or more). Only anchor texts naming at least [`MIN_TARGETS`] are
//! kept: "next", "index", a site's menu entries, a sequence's numbers — words that place
//! a link, not name its target; `whereis` leaves their links out of its links step.
//!
//! Written by ingest with the sweep's `inbound` entries, from the same pages
//! ([`crate::links::inbound::LinkedBy`]); a sweep without `inbound` entries is read by a
//! scan of `links`.

pub use crate::links::inbound::{MAX_TARGETS, MIN_TARGETS};

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `anchor_targets` column family.
pub struct AnchorTargets;

/// A key of `anchor_targets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorKey {
    /// Sweep id.
    pub sweep: u32,
    /// The anchor text (its tokens, one space between).
    pub anchor: String,
}

impl Column for AnchorTargets {
    const NAME: &'static str = "anchor_targets";
    type Key = AnchorKey;
    type Value = u8;

    fn key(k: &AnchorKey) -> Vec<u8> {
        super::sweep_surt_key(k.sweep, &k.anchor)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<AnchorKey, String> {
        let (sweep, anchor) = super::decode_sweep_surt_key(b)?;
        Ok(AnchorKey { sweep, anchor })
    }

    fn value(v: &u8) -> Vec<u8> {
        vec![*v]
    }

    fn decode_value(b: &[u8]) -> std::result::Result<u8, String> {
        match b {
            [n] if (MIN_TARGETS..=MAX_TARGETS).contains(&(*n as usize)) => Ok(*n),
            _ => Err(format!(
                "{} bytes: not a count of {MIN_TARGETS} to {MAX_TARGETS} targets",
                b.len()
            )),
        }
    }

    fn tune(o: &mut rocksdb::Options, t: &mut rocksdb::BlockBasedOptions, _cx: &super::Tuning) {
        super::point_lookups(o, t);
    }
}

impl Col<'_, AnchorTargets> {
    /// How many URLs `anchor` names in sweep `sweep`: None for fewer than
    /// [`MIN_TARGETS`].
    pub fn of(&self, sweep: u32, anchor: &str) -> Result<Option<u8>> {
        self.get(&AnchorKey {
            sweep,
            anchor: anchor.to_string(),
        })
    }
}
