//! `inbound`: sweep id u32 BE ‖ target SURT → the pages of that sweep that link the
//! target: `1` (format), their number (LEB128), then each page's SURT, ascending, as the
//! bytes it shares with the one before (LEB128), the length of the rest (LEB128) and the
//! rest. Kept for a URL two pages of the sweep link or more (fetched or not), or one
//! page when the URL is a page of the sweep with links of its own
//! ([`crate::links::inbound::LinkedBy::keeps`]); for any other URL the sweep's links are
//! scanned.
//!
//! `links` turned around ([`crate::links::inbound::LinkedBy`]): what the pages of a
//! sweep say about a URL is read from the pages this names, not by a scan of all the
//! sweep's links. Written by ingest once a sweep's pages are all in, with its anchor
//! bags, in one write (the whole sweep's entries again when an ingest adds files to it);
//! a sweep without entries here (one whose pages link nothing, or an ingest not yet
//! done) is read by a scan ([`Col::of_sweep_built`]). Read by `inlinks`, `related` and
//! `whereis`.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `inbound` column family.
pub struct InboundLinks;

/// A key of `inbound`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundKey {
    /// Sweep id.
    pub sweep: u32,
    /// SURT of the page linked.
    pub target: String,
}

const FORMAT: u8 = 1;

/// The value of pages `sources` (SURTs ascending, distinct).
pub fn encode(sources: &[&str]) -> Vec<u8> {
    let mut out = vec![FORMAT];
    leb128(&mut out, sources.len() as u64);
    let mut prev: &[u8] = &[];
    for s in sources {
        let s = s.as_bytes();
        let shared = prev.iter().zip(s).take_while(|(a, b)| a == b).count();
        leb128(&mut out, shared as u64);
        leb128(&mut out, (s.len() - shared) as u64);
        out.extend_from_slice(&s[shared..]);
        prev = s;
    }
    out
}

/// [`encode`] undone; a value whose SURTs are not ascending, not UTF-8 or not all
/// there is refused.
pub fn decode(b: &[u8]) -> std::result::Result<Vec<String>, String> {
    if b.first() != Some(&FORMAT) {
        return Err(format!(
            "{} bytes: not inbound links of format {FORMAT}",
            b.len()
        ));
    }
    let mut rest = &b[1..];
    let n = read_leb128(&mut rest)?;
    // Each page takes at least two bytes: a damaged count allocates nothing.
    if n > (rest.len() / 2) as u64 {
        return Err(format!("{n} linking pages in {} bytes", b.len()));
    }
    let mut out: Vec<String> = Vec::with_capacity(n as usize);
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..n {
        let shared = read_leb128(&mut rest)? as usize;
        let len = read_leb128(&mut rest)? as usize;
        if shared > prev.len() || len > rest.len() {
            return Err("a linking page past the value's end".into());
        }
        let mut s = prev[..shared].to_vec();
        s.extend_from_slice(&rest[..len]);
        rest = &rest[len..];
        if !out.is_empty() && s.as_slice() <= prev.as_slice() {
            return Err("linking pages not ascending".into());
        }
        let text = String::from_utf8(s.clone()).map_err(|_| "a SURT that is not UTF-8")?;
        out.push(text);
        prev = s;
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the linking pages", rest.len()));
    }
    Ok(out)
}

fn leb128(out: &mut Vec<u8>, v: u64) {
    leb128::write::unsigned(out, v).expect("writing to a Vec");
}

fn read_leb128(rest: &mut &[u8]) -> std::result::Result<u64, String> {
    leb128::read::unsigned(rest).map_err(|_| "a count that does not end".to_string())
}

impl Column for InboundLinks {
    const NAME: &'static str = "inbound";
    type Key = InboundKey;
    type Value = Vec<String>;

    fn key(k: &InboundKey) -> Vec<u8> {
        super::sweep_surt_key(k.sweep, &k.target)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<InboundKey, String> {
        let (sweep, target) = super::decode_sweep_surt_key(b)?;
        Ok(InboundKey { sweep, target })
    }

    fn value(v: &Vec<String>) -> Vec<u8> {
        encode(&v.iter().map(|s| s.as_str()).collect::<Vec<_>>())
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<String>, String> {
        decode(b)
    }

    fn tune(o: &mut rocksdb::Options, t: &mut rocksdb::BlockBasedOptions, _cx: &super::Tuning) {
        // Read by point lookups, some of them for URLs no page links.
        super::point_lookups(o, t);
        t.set_block_size(256 << 10);
    }
}

impl Col<'_, InboundLinks> {
    /// The pages of sweep `sweep` that link `target` (SURTs ascending), or None when only
    /// a scan of `links` knows: the sweep's entries are not built
    /// ([`Self::of_sweep_built`]), or the target has none and is not a page of the sweep
    /// with links (then a page may link it once: [`LinkedBy::keeps`]).
    ///
    /// [`LinkedBy::keeps`]: crate::links::inbound::LinkedBy::keeps
    pub fn of(&self, sweep: u32, target: &str) -> Result<Option<Vec<String>>> {
        if let Some(v) = self.get(&InboundKey {
            sweep,
            target: target.to_string(),
        })? {
            return Ok(Some(v));
        }
        let is_page = || -> Result<bool> {
            Ok(self
                .index
                .db()
                .get_pinned_cf(
                    self.index.links().handle(),
                    super::links::key_of(sweep, target),
                )?
                .is_some())
        };
        Ok((self.of_sweep_built(sweep)? && is_page()?).then(Vec::new))
    }

    /// Whether sweep `sweep`'s entries are written (it has one at least).
    pub fn of_sweep_built(&self, sweep: u32) -> Result<bool> {
        self.any_in(&sweep.to_be_bytes())
    }
}

/// Replaces sweep `sweep`'s entries of `inbound` and `anchor_targets` by `linked`'s, each
/// family's as one sorted file ([`crate::index::Index::replace_sorted`]).
pub(crate) fn replace_sweep(
    index: &crate::index::Index,
    sweep: u32,
    linked: &crate::links::inbound::LinkedBy,
) -> Result<()> {
    // No SURT or anchor text holds byte 0xff (UTF-8 never does): the end of the sweep's keys.
    let from = sweep.to_be_bytes();
    let mut to = from.to_vec();
    to.push(0xff);
    index.replace_sorted(InboundLinks::NAME, (&from, &to), |put| {
        let mut failed = Ok(());
        linked.each_target(|target, sources| {
            if failed.is_ok() {
                failed = put(&super::sweep_surt_key(sweep, target), &encode(sources));
            }
        });
        failed
    })?;
    index.replace_sorted(
        super::anchor_targets::AnchorTargets::NAME,
        (&from, &to),
        |put| {
            let mut failed = Ok(());
            linked.each_anchor(|anchor, n| {
                if failed.is_ok() {
                    failed = put(&super::sweep_surt_key(sweep, anchor), &[n]);
                }
            });
            failed
        },
    )
}
