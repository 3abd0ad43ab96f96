//! `sketches`: doc id (u64 BE) → the doc's sketch, packed:
//! `[format 1][level u8][shingles u32 BE][values u64 BE…]` (values ascending). Never
//! through a serializer: every candidate check reads one, and compares it packed
//! ([`Col::estimates`]).
//!
//! Written by ingest (a new doc). Read by ingest's candidate checks and its rebuild of
//! the fresh postings after a kill, `similar`, the report's move matching and the
//! service. Sketch values are uniform hashes: RocksDB's zstd saved nothing here and cost
//! a recompression at each compaction.

use rocksdb::{BlockBasedOptions, DBCompressionType, Options};

use super::{corrupt, Col, Column, Tuning};
use crate::index::Result;
use crate::sketch::{estimate_sorted, Estimate, Sketch};

/// Marker of the `sketches` column family.
pub struct Sketches;

impl Column for Sketches {
    const NAME: &'static str = "sketches";
    type Key = u64;
    type Value = Sketch;

    fn key(k: &u64) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(s: &Sketch) -> Vec<u8> {
        pack(s)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Sketch, String> {
        let (level, shingles) = header(b)?;
        Ok(Sketch {
            shingles,
            level,
            values: values(b).collect(),
        })
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
        o.set_bottommost_compression_type(DBCompressionType::None);
    }
}

/// The packed form of a sketch.
pub fn pack(s: &Sketch) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + 8 * s.values.len());
    out.push(1);
    out.push(s.level);
    out.extend_from_slice(&s.shingles.to_be_bytes());
    for v in &s.values {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

/// Level and shingle count of a packed sketch, after checking its shape.
fn header(b: &[u8]) -> std::result::Result<(u8, u32), String> {
    if b.len() < 6 || b[0] != 1 || !(b.len() - 6).is_multiple_of(8) {
        return Err(format!("not a packed sketch ({} bytes)", b.len()));
    }
    Ok((b[1], u32::from_be_bytes([b[2], b[3], b[4], b[5]])))
}

fn values(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b[6..]
        .chunks_exact(8)
        .map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes")))
}

impl Col<'_, Sketches> {
    /// Estimates of `sketch` against the stored sketch of each of `docs` (ascending),
    /// read in one batch and compared without unpacking: `(doc, estimate)` with the doc
    /// as `a` (so `containment_a_in_b` is the doc's containment in `sketch`). Docs
    /// without a stored sketch are left out.
    pub fn estimates(&self, docs: &[u64], sketch: &Sketch) -> Result<Vec<(u64, Estimate)>> {
        let keys: Vec<[u8; 8]> = docs.iter().map(|d| d.to_be_bytes()).collect();
        let db = self.index.db();
        let mut out = Vec::with_capacity(docs.len());
        for ((d, k), res) in
            docs.iter()
                .zip(&keys)
                .zip(db.batched_multi_get_cf(self.handle(), keys.iter(), true))
        {
            let Some(packed) = res? else { continue };
            let (level, _) = header(&packed).map_err(|e| corrupt::<Sketches>(k, e))?;
            let level = level.max(sketch.level);
            let mask = if level >= 64 {
                u64::MAX
            } else {
                (1u64 << level) - 1
            };
            out.push((
                *d,
                estimate_sorted(
                    values(&packed).filter(move |v| v & mask == 0),
                    sketch.at_level(level),
                ),
            ));
        }
        Ok(out)
    }

    /// Every sketch from doc `first` on, in doc order.
    pub fn from_doc(
        &self,
        first: u64,
        mut each: impl FnMut(u64, Sketch) -> Result<()>,
    ) -> Result<()> {
        self.scan_raw(&first.to_be_bytes(), None, false, |k, v| {
            let doc = Sketches::decode_key(k).map_err(|e| corrupt::<Sketches>(k, e))?;
            let s = Sketches::decode_value(v).map_err(|e| corrupt::<Sketches>(k, e))?;
            each(doc, s)?;
            Ok(true)
        })
    }
}
