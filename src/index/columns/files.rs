//! `files`: file identity (16 bytes: xxh3-128 of its length, first and last MiB) →
//! [`FileState`] (its sweep, its number in the sweep, its name, the records committed,
//! whether it is complete, its damage; bincode).
//!
//! The file's number is given once, when the file is first seen (the sweep's count of
//! files so far), and kept here: finding a file's number is one lookup, whatever the
//! number of files. The number is part of `captures` and `doc_captures` keys (u32: a
//! sweep may have up to 4 billion files).
//!
//! Written by ingest (with every record: the resume point). Read by ingest (skip what is
//! complete, resume what is not) and `sweeps` (the files of a sweep).

use std::collections::{BTreeMap, HashMap};

use super::{Col, Column};
use crate::index::codec::{decode, encode, FileState};
use crate::index::Result;

/// Marker of the `files` column family.
pub struct Files;

impl Column for Files {
    const NAME: &'static str = "files";
    type Key = [u8; 16];
    type Value = FileState;

    fn key(k: &[u8; 16]) -> Vec<u8> {
        k.to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<[u8; 16], String> {
        <[u8; 16]>::try_from(b).map_err(|_| format!("{} bytes where 16 were expected", b.len()))
    }

    fn value(v: &FileState) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<FileState, String> {
        decode(b)
    }
}

impl Col<'_, Files> {
    /// Every file's name as given to its ingest, by (sweep id, its number in the sweep):
    /// what a capture key names ([`super::captures::file_of_key`]).
    pub fn names_by_number(&self) -> Result<HashMap<(u32, u32), String>> {
        let mut out = HashMap::new();
        self.for_each(|_, f| {
            out.insert((f.sweep, f.file_no), f.name);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The file names of every sweep, each sweep's in the order of their numbers (one
    /// scan of every file: for listings, not for ingest).
    pub fn names_by_sweep(&self) -> Result<BTreeMap<u32, Vec<String>>> {
        let mut all: Vec<FileState> = Vec::new();
        self.for_each(|_, f| {
            all.push(f);
            Ok(true)
        })?;
        all.sort_by_key(|f| (f.sweep, f.file_no));
        let mut out: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for f in all {
            out.entry(f.sweep).or_default().push(f.name);
        }
        Ok(out)
    }
}
