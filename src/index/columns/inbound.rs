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

/// Longest linking page's SURT a value may hold (bytes).
pub const MAX_SURT: usize = 64 << 10;
/// Decoded bytes a value's byte may stand for at most, beyond a first MiB (the pages
/// linking a menu target share their site's prefix: ten to twenty bytes each).
const MAX_DECODED_PER_BYTE: usize = 64;

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
    // Front coding lets a few bytes stand for a long SURT: a damaged or crafted value's
    // pages sharing ever longer prefixes would decode to gigabytes without these caps.
    let mut decoded = 0usize;
    let most = MAX_DECODED_PER_BYTE * b.len() + (1 << 20);
    for _ in 0..n {
        let shared = read_leb128(&mut rest)? as usize;
        let len = read_leb128(&mut rest)? as usize;
        if shared > prev.len() || len > rest.len() {
            return Err("a linking page past the value's end".into());
        }
        decoded += shared + len;
        if shared + len > MAX_SURT || decoded > most {
            return Err(format!(
                "linking pages longer than {} bytes of value may hold",
                b.len()
            ));
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
        if !self.of_sweep_built(sweep)? {
            return Ok(None);
        }
        self.of_built(sweep, target)
    }

    /// [`Self::of`] in a sweep whose entries are built.
    pub fn of_built(&self, sweep: u32, target: &str) -> Result<Option<Vec<String>>> {
        if let Some(v) = self.get(&InboundKey {
            sweep,
            target: target.to_string(),
        })? {
            return Ok(Some(v));
        }
        let is_page = self
            .index
            .db()
            .get_pinned_cf(
                self.index.links().handle(),
                super::links::key_of(sweep, target),
            )?
            .is_some();
        Ok(is_page.then(Vec::new))
    }

    /// Whether sweep `sweep`'s entries are written (it has one at least).
    pub fn of_sweep_built(&self, sweep: u32) -> Result<bool> {
        self.any_in(&sweep.to_be_bytes())
    }
}

/// Removes sweep `sweep`'s entries of `inbound` (first: they mark the sweep built) and
/// of `anchor_targets`.
pub(crate) fn clear_sweep(index: &crate::index::Index, sweep: u32) -> Result<()> {
    let (from, to) = sweep_range(sweep);
    index.replace_sorted(InboundLinks::NAME, (&from, &to), |_| Ok(()))?;
    index.replace_sorted(
        super::anchor_targets::AnchorTargets::NAME,
        (&from, &to),
        |_| Ok(()),
    )
}

/// Writes sweep `sweep`'s entries of `anchor_targets`, then of `inbound` (last: they mark
/// the sweep built), from `linked`, each family's as one sorted file
/// ([`crate::index::Index::replace_sorted`]). Called with the sweep's entries cleared
/// ([`clear_sweep`]): a write killed half-way leaves the sweep without `inbound` entries,
/// read by scans until an ingest builds them.
pub(crate) fn write_sweep(
    index: &crate::index::Index,
    sweep: u32,
    linked: &crate::links::inbound::LinkedBy,
) -> Result<()> {
    let (from, to) = sweep_range(sweep);
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
    )?;
    index.replace_sorted(InboundLinks::NAME, (&from, &to), |put| {
        let mut failed = Ok(());
        linked.each_target(|target, sources| {
            if failed.is_ok() {
                failed = put(&super::sweep_surt_key(sweep, target), &encode(sources));
            }
        });
        failed
    })
}

/// The keys of sweep `sweep`: from its id, up to its id and byte 0xff (no SURT or
/// anchor text holds it: UTF-8 never does).
fn sweep_range(sweep: u32) -> ([u8; 4], Vec<u8>) {
    let from = sweep.to_be_bytes();
    let mut to = from.to_vec();
    to.push(0xff);
    (from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value reads as the pages it was made of; a damaged or crafted one is an error
    /// (never a panic, nor gigabytes of SURTs from a few bytes).
    #[test]
    fn a_value_reads_back_and_a_damaged_one_is_refused() {
        let pages = [
            "com,example)/",
            "com,example)/a",
            "com,example)/a/b",
            "org,other)/x",
        ];
        let v = encode(&pages);
        assert_eq!(decode(&v).unwrap(), pages);
        assert_eq!(decode(&encode(&[])).unwrap(), Vec::<String>::new());
        for cut in 0..v.len() {
            assert!(decode(&v[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = v.clone();
        extra.push(0);
        assert!(decode(&extra).is_err());
        // Not ascending: the same page twice.
        assert!(decode(&encode(&["com,a)/", "com,a)/"])).is_err());
        // A shared prefix longer than the page before.
        assert!(decode(&[FORMAT, 2, 0, 1, b'a', 5, 1, b'b']).is_err());
        // Each page one byte longer than the one before, sharing all of it: a million
        // bytes would decode to half a terabyte.
        let mut crafted = vec![FORMAT];
        leb128(&mut crafted, 300_000);
        let mut prev = 0u64;
        for _ in 0..300_000u64 {
            leb128(&mut crafted, prev);
            leb128(&mut crafted, 1);
            crafted.push(b'a');
            prev += 1;
        }
        let e = decode(&crafted).unwrap_err();
        assert!(e.contains("longer than"), "{e}");
    }
}
