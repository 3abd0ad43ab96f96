//! `meta`: the index's own facts under fixed names — schema version, the parameters it
//! was built with, the counters (next doc id, threshold in force) and the zstd
//! dictionary of stored texts.
//!
//! Written by [`Index::open`] (a new index), by ingest (the counters, with each new doc,
//! in the record's batch), `recluster` (the threshold) and the texts' dictionary
//! training. Read at open (version, parameters, counters) and by the texts' codec.

use super::{Batch, Col, Column};
use crate::index::codec::{decode, encode};
use crate::index::{Counters, Index, IndexParams, Result};

/// Marker of the `meta` column family.
pub struct Meta;

/// The names kept in `meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaKey {
    /// u32 BE.
    SchemaVersion,
    /// [`IndexParams`], bincode.
    Params,
    /// [`Counters`], bincode.
    Counters,
    /// The texts' zstd dictionary, raw.
    TextDict,
    /// The threshold of a `recluster` under way (f64, bincode): present from before the
    /// union-find is cleared until the rebuilt one and the threshold are written.
    Recluster,
    /// [`LinkParams`], bincode.
    Links,
}

/// How the index keeps links: part of its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkParams {
    /// Tokens either side of an anchor (`links.window`).
    pub window: u32,
    /// Links from a page's own host count in its anchor bag (`links.own_host`).
    pub own_host: bool,
    /// T of an anchor bag's sample (`links.bag_sample`).
    pub bag_sample: u32,
    /// The first sweep whose links were read: sweeps before it were ingested by a
    /// release that kept none (an index upgraded from one).
    pub from_sweep: u32,
}

impl MetaKey {
    fn name(self) -> &'static [u8] {
        match self {
            MetaKey::SchemaVersion => b"schema_version",
            MetaKey::Params => b"params",
            MetaKey::Counters => b"counters",
            MetaKey::TextDict => b"text_dict",
            MetaKey::Recluster => b"recluster",
            MetaKey::Links => b"links",
        }
    }
}

impl Column for Meta {
    const NAME: &'static str = "meta";
    type Key = MetaKey;
    /// Raw: each name has its own codec (the typed accessors below).
    type Value = Vec<u8>;

    fn key(k: &MetaKey) -> Vec<u8> {
        k.name().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<MetaKey, String> {
        [
            MetaKey::SchemaVersion,
            MetaKey::Params,
            MetaKey::Counters,
            MetaKey::TextDict,
            MetaKey::Recluster,
            MetaKey::Links,
        ]
        .into_iter()
        .find(|k| k.name() == b)
        .ok_or_else(|| "not a meta name of this build".into())
    }

    fn value(v: &Vec<u8>) -> Vec<u8> {
        v.clone()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<u8>, String> {
        Ok(b.to_vec())
    }
}

impl Col<'_, Meta> {
    /// The schema version, if the index has one (4 bytes BE).
    pub fn schema_version(&self) -> Result<Option<std::result::Result<u32, Vec<u8>>>> {
        Ok(self
            .get(&MetaKey::SchemaVersion)?
            .map(|v| super::be_u32(&v).map_err(|_| v)))
    }

    /// The parameters the index was built with.
    pub fn params(&self) -> Result<Option<IndexParams>> {
        self.decoded(MetaKey::Params)
    }

    /// How the index keeps links (none: an index of an earlier schema).
    pub fn link_params(&self) -> Result<Option<LinkParams>> {
        self.decoded(MetaKey::Links)
    }

    /// Writes how the index keeps links into `batch`.
    pub fn put_link_params(&self, batch: &mut Batch, p: &LinkParams) {
        batch.put::<Meta>(self.index, &MetaKey::Links, &encode(p));
    }

    /// The stored counters.
    pub fn counters(&self) -> Result<Option<Counters>> {
        self.decoded(MetaKey::Counters)
    }

    /// The texts' dictionary.
    pub fn text_dict(&self) -> Result<Option<Vec<u8>>> {
        self.get(&MetaKey::TextDict)
    }

    fn decoded<T: serde::de::DeserializeOwned>(&self, k: MetaKey) -> Result<Option<T>> {
        match self.get(&k)? {
            None => Ok(None),
            Some(v) => decode(&v)
                .map(Some)
                .map_err(|e| super::corrupt::<Meta>(k.name(), e)),
        }
    }

    /// Writes the counters into `batch`.
    pub fn put_counters(&self, batch: &mut Batch, c: &Counters) {
        batch.put::<Meta>(self.index, &MetaKey::Counters, &encode(c));
    }

    /// The threshold of a `recluster` that did not finish, if one did not.
    pub fn recluster_pending(&self) -> Result<Option<f64>> {
        self.decoded(MetaKey::Recluster)
    }

    /// Records a `recluster` at `threshold` as under way, or (`None`) as done.
    pub fn put_recluster(&self, batch: &mut Batch, threshold: Option<f64>) {
        match threshold {
            Some(t) => batch.put::<Meta>(self.index, &MetaKey::Recluster, &encode(&t)),
            None => batch.delete::<Meta>(self.index, &MetaKey::Recluster),
        }
    }
}

/// What a new index starts with.
pub(crate) fn initial(
    index: &Index,
    version: u32,
    params: &IndexParams,
    links: &LinkParams,
    c: &Counters,
) -> Batch {
    let mut b = Batch::default();
    b.put::<Meta>(
        index,
        &MetaKey::SchemaVersion,
        &version.to_be_bytes().to_vec(),
    );
    b.put::<Meta>(index, &MetaKey::Params, &encode(params));
    b.put::<Meta>(index, &MetaKey::Counters, &encode(c));
    b.put::<Meta>(index, &MetaKey::Links, &encode(links));
    b
}
