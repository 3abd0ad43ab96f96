//! One run of postings: a file of ⟨posting key, entry⟩ records sorted by key, then doc,
//! for the docs of one id range `[first, end)`, read in place (memory-mapped).
//!
//! Why not RocksDB: posting keys are random 48-bit values looked up by the hundred
//! thousand per batch, lists are only ever appended to, and most hold one 7-byte entry.
//! In RocksDB each lookup was a bloom probe, an index-block search and a 16 KiB zstd
//! block (~2.1 µs per asked value on the rd100k redesign sweep: 16 of its 81 CPU-s), and
//! size-tiered compactions rewrote whole lists (another 7 CPU-s). Here a lookup reads one
//! slot of a direct-address table (the key's top bits) and scans ~16 fixed-width records;
//! runs are merged by a sequential pass with no decompression.
//!
//! Layout (integers little-endian unless said):
//! - `TMPOST02` (or `TMPOST01`, below);
//! - `n` records, ascending by key then doc, each of the same width ([`Widths`]): the
//!   key's low `48 − bits` bits (its top `bits` bits are its bucket's number), the doc
//!   minus the run's first doc, both BE in as few whole bytes as they need. 7 bytes a
//!   record where key and entry take 13 (rd100k: a run of 7 M records, 18 table bits,
//!   docs under 2²⁴);
//! - the table by doc: for each doc of `[first, end)`, its posting level and posting
//!   count (a u8 each; 0 and 0 for a doc without records). A doc's ~70 records all
//!   carried the same two bytes: the table took the postings of rd100k from 178.6 to
//!   138.8 MB (2026-11-29). Kept when the range spans at most 2²⁸ docs and no more
//!   docs than the records the writer expects (a spill's and a merge's ranges are
//!   consecutive new docs); otherwise the run is a `TMPOST01` one, whose records end
//!   with the doc's level and count and which has no table by doc (runs written before
//!   are read as they are);
//! - the bucket table: `2^bits + 1` u64, the first record whose key's top `bits` bits
//!   are at least the slot's number (so bucket `b` is records `table[b]..table[b + 1]`);
//! - a footer of [`FOOTER`] bytes: n u64, bits u32, CRC-32 of the records (and the
//!   table by doc) u32, first
//!   u64, end u64, CRC-32 of the table u32, CRC-32 of the footer's first 36 bytes u32,
//!   `TMPOSTZZ`.
//!
//! A run holds at most cap + 1 entries per key (a longer list is boilerplate: only its
//! head is used); a key's list is the concatenation of its entries in the runs, oldest
//! run first, whose doc ranges follow each other.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::index::{IndexError, Result};
use crate::sketch::POSTING_KEY_BYTES;

/// Bytes of one posting entry.
pub const ENTRY: usize = 7;

/// Bits of a posting key.
const KEY_BITS: u32 = 8 * POSTING_KEY_BYTES as u32;

/// Doc ids postings can name: 2⁴⁰ (a trillion).
pub const MAX_DOCS: u64 = 1 << 40;

/// A run whose records carry their doc's posting level and count.
const MAGIC_V1: &[u8; 8] = b"TMPOST01";
/// A run whose docs' posting levels and counts are in a table by doc, once a doc.
const MAGIC: &[u8; 8] = b"TMPOST02";
/// Docs a run's table by doc may span (2 bytes each, held by its writer): a run over a
/// wider or sparser range keeps each record's level and count (`TMPOST01`).
const MAX_TABLE_DOCS: u64 = 1 << 28;
const END_MAGIC: &[u8; 8] = b"TMPOSTZZ";
const FOOTER: usize = 48;
/// Bytes of records a writer gathers before it checksums and writes them.
const BUF: usize = 1 << 20;
/// Records per bucket of the table, on average: a lookup scans about this many.
const PER_BUCKET: usize = 16;

/// One posting entry: doc (under [`MAX_DOCS`]), its posting level, its number of
/// posting values (kept up to 255). The prefilter reads a larger count as 255: it then
/// takes the doc's sample for smaller than it is, which only lets more candidates through.
pub fn entry(doc: u64, level: u8, count: u16) -> [u8; ENTRY] {
    debug_assert!(doc < MAX_DOCS);
    let mut e = [0u8; ENTRY];
    e[..5].copy_from_slice(&doc.to_be_bytes()[3..]);
    e[5] = level;
    e[6] = count.min(255) as u8;
    e
}

/// The fields of one entry (exactly [`ENTRY`] bytes).
pub fn entry_fields(e: &[u8]) -> (u64, u8, u16) {
    let mut doc = [0u8; 8];
    doc[3..].copy_from_slice(&e[..5]);
    (u64::from_be_bytes(doc), e[5], e[6] as u16)
}

/// The doc of one entry.
pub fn entry_doc(e: &[u8]) -> u64 {
    entry_fields(e).0
}

/// Bytes a list keeps at most: cap + 1 entries.
pub fn list_limit(cap: usize) -> usize {
    (cap + 1) * ENTRY
}

/// The widths of a run's records, from its table bits and doc range.
#[derive(Debug, Clone, Copy)]
struct Widths {
    /// Bytes of a key's low bits.
    key: usize,
    /// Bytes of a doc's offset from the run's first doc.
    doc: usize,
    /// Whether the docs' levels and counts are in a table by doc (`TMPOST02`), not in
    /// each record.
    by_doc: bool,
}

impl Widths {
    fn of(bits: u32, docs: &std::ops::Range<u64>, by_doc: bool) -> Widths {
        let span = docs.end.saturating_sub(docs.start).saturating_sub(1);
        Widths {
            key: (KEY_BITS - bits).div_ceil(8) as usize,
            doc: ((64 - span.leading_zeros()).div_ceil(8) as usize).max(1),
            by_doc,
        }
    }

    fn record(&self) -> usize {
        self.key + self.doc + if self.by_doc { 0 } else { 2 }
    }
}

/// Bytes of the table by doc of a run over `docs` (none in a `TMPOST01` run).
fn doc_table_len(by_doc: bool, docs: &std::ops::Range<u64>) -> usize {
    if by_doc {
        2 * docs.end.saturating_sub(docs.start) as usize
    } else {
        0
    }
}

/// Whether a run over `docs` of about `records` records keeps a table by doc: when
/// its range holds no more docs than records (a table entry costs what it saves in one
/// record; a spill's and a merge's ranges are consecutive new docs, ~70 records each).
fn by_doc_for(records: usize, docs: &std::ops::Range<u64>) -> bool {
    let span = docs.end.saturating_sub(docs.start);
    docs.end > docs.start && span <= MAX_TABLE_DOCS && span <= records as u64
}

/// The big-endian number in `b` (at most 8 bytes).
#[inline]
fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |n, x| (n << 8) | *x as u64)
}

/// [`be`] of `bytes[at..at + width]` (at most 8 bytes), as one 8-byte load and a shift
/// where 8 bytes are there to load (a record's fields are followed by the rest of the
/// file): the byte-at-a-time loop was most of a lookup's scan of its bucket.
#[inline]
fn be_at(bytes: &[u8], at: usize, width: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(b) if width > 0 => {
            let v = u64::from_be_bytes(b.try_into().expect("8 bytes"));
            v >> (64 - 8 * width as u32)
        }
        _ => be(&bytes[at..at + width]),
    }
}

#[inline]
fn bucket_of(key: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (key >> (KEY_BITS - bits)) as usize
    }
}

/// A key's bits below its bucket's.
#[inline]
fn low_bits(key: u64, bits: u32) -> u64 {
    key & ((1u64 << (KEY_BITS - bits)) - 1)
}

fn table_bits(n: usize) -> u32 {
    (n / PER_BUCKET).max(1).ilog2().min(KEY_BITS)
}

fn damaged(path: &Path, what: impl std::fmt::Display) -> IndexError {
    IndexError::Corruption {
        cf: super::DIR,
        comment: format!(
            "run {} is damaged: {what}; rebuild the index (ingest its sweeps into a new --db)",
            path.display()
        ),
    }
}

/// An I/O error on a postings file, named (a full disk as [`IndexError::NoSpace`]).
pub(super) fn io(path: &Path, e: std::io::Error) -> IndexError {
    if e.raw_os_error() == Some(28) {
        return IndexError::NoSpace(format!("writing {}", path.display()));
    }
    IndexError::Invalid(format!("postings file {}: {e}", path.display()))
}

/// An open run.
pub struct Run {
    path: PathBuf,
    map: Mmap,
    n: usize,
    bits: u32,
    first: u64,
    end: u64,
    widths: Widths,
    /// Where the table by doc and the bucket table begin in the map (known at open: a
    /// lookup reads the bucket table, each entry the table by doc).
    doc_table_at: usize,
    table_at: usize,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Run({}, docs {}..{}, {} records)",
            self.path.display(),
            self.first,
            self.end,
            self.n
        )
    }
}

impl Run {
    /// Opens the run at `path`, checking its shape and checksums (a damaged file is an
    /// error naming it, never a wrong answer or a panic later).
    pub fn open(path: &Path) -> Result<Run> {
        let file = File::open(path).map_err(|e| io(path, e))?;
        // SAFETY: runs are written once, renamed into place and never modified; a
        // merged-away run is unlinked, which leaves an existing mapping intact.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| io(path, e))?;
        let len = map.len();
        let magic = map.get(..8);
        if len < MAGIC.len() + FOOTER
            || (magic != Some(MAGIC) && magic != Some(MAGIC_V1))
            || &map[len - 8..] != END_MAGIC
        {
            return Err(damaged(path, format!("not a postings run ({len} bytes)")));
        }
        let by_doc = magic == Some(MAGIC);
        let f = &map[len - FOOTER..];
        let u64_at = |o: usize| u64::from_le_bytes(f[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(f[o..o + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&f[..36]) != u32_at(36) {
            return Err(damaged(path, "footer checksum mismatch"));
        }
        let (n, bits, records_crc, first, end, table_crc) = (
            u64_at(0),
            u32_at(8),
            u32_at(12),
            u64_at(16),
            u64_at(24),
            u32_at(32),
        );
        if bits > KEY_BITS || first > end || (by_doc && end - first > MAX_TABLE_DOCS) {
            return Err(damaged(
                path,
                format!("footer says {bits} table bits, docs {first}..{end}"),
            ));
        }
        let slots = (1usize << bits) + 1;
        let widths = Widths::of(bits, &(first..end), by_doc);
        let want = (n as u128) * widths.record() as u128
            + doc_table_len(by_doc, &(first..end)) as u128
            + slots as u128 * 8
            + (8 + FOOTER) as u128;
        if want != len as u128 {
            return Err(damaged(
                path,
                format!("{len} bytes where its footer implies {want}"),
            ));
        }
        let n = n as usize;
        let doc_table_at = 8 + n * widths.record();
        let table_at = doc_table_at + doc_table_len(by_doc, &(first..end));
        let run = Run {
            path: path.to_path_buf(),
            map,
            n,
            bits,
            first,
            end,
            widths,
            doc_table_at,
            table_at,
        };
        // The records and the table by doc after them.
        if crc32fast::hash(&run.map[8..table_at]) != records_crc {
            return Err(damaged(path, "records checksum mismatch"));
        }
        let table = run.table_bytes();
        if crc32fast::hash(table) != table_crc {
            return Err(damaged(path, "table checksum mismatch"));
        }
        let mut last = 0u64;
        for (i, s) in table.chunks_exact(8).enumerate() {
            let at = u64::from_le_bytes(s.try_into().expect("8 bytes"));
            if at < last || at > n as u64 || (i == 0 && at != 0) {
                return Err(damaged(
                    path,
                    format!("table slot {i} points at record {at}"),
                ));
            }
            last = at;
        }
        if last != n as u64 {
            return Err(damaged(path, "table does not end at the last record"));
        }
        Ok(run)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Docs it covers: `first..end`.
    pub fn docs(&self) -> std::ops::Range<u64> {
        self.first..self.end
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bytes of the file.
    pub fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    fn records(&self) -> &[u8] {
        &self.map[8..8 + self.n * self.widths.record()]
    }

    /// Level and count of each doc of the range, in doc order (`TMPOST02`).
    fn doc_table(&self) -> &[u8] {
        &self.map[self.doc_table_at..self.table_at]
    }

    fn table_bytes(&self) -> &[u8] {
        &self.map[self.table_at..self.table_at + ((1usize << self.bits) + 1) * 8]
    }

    #[inline]
    fn slot(&self, b: usize) -> usize {
        let t = self.table_bytes();
        u64::from_le_bytes(t[b * 8..b * 8 + 8].try_into().expect("8 bytes")) as usize
    }

    /// Asks the CPU to load the table slot of `key` (a hint for a lookup a few keys on).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        let t = self.table_bytes();
        super::prefetch(t[bucket_of(key, self.bits) * 8..].as_ptr());
    }

    /// Asks the CPU to load the first records of `key`'s bucket: the second miss of a
    /// lookup, once its table slot is in the cache ([`Run::prefetch`] a few keys
    /// earlier).
    #[inline]
    pub fn prefetch_records(&self, key: u64) {
        let at = self.slot(bucket_of(key, self.bits)).min(self.n) * self.widths.record();
        super::prefetch(self.records()[at..].as_ptr());
    }

    /// Appends the entries of `key` to `out`, at most `max` of them; returns how many.
    pub fn entries_of(&self, key: u64, out: &mut Vec<u8>, max: usize) -> usize {
        let b = bucket_of(key, self.bits);
        let (mut i, end) = (self.slot(b), self.slot(b + 1));
        let (w, size) = (self.widths, self.widths.record());
        let want = low_bits(key, self.bits);
        // The records and what follows them (8-byte loads near the end stay inside).
        let bytes = &self.map[8..];
        let low = |i: usize| be_at(bytes, i * size, w.key);
        while i < end && low(i) < want {
            i += 1;
        }
        let mut n = 0;
        while i < end && n < max && low(i) == want {
            out.extend_from_slice(&self.entry_at(i));
            i += 1;
            n += 1;
        }
        n
    }

    /// The entry of record `i`.
    #[inline]
    fn entry_at(&self, i: usize) -> [u8; ENTRY] {
        let (w, size) = (self.widths, self.widths.record());
        let bytes = &self.map[8..];
        let offset = be_at(bytes, i * size + w.key, w.doc);
        let doc = self.first + offset;
        if w.by_doc {
            // A doc outside the range (a damaged run that passed its checksums) reads as
            // the widest count: more candidates, never a panic.
            let at = 2 * offset as usize;
            return match self.doc_table().get(at..at + 2) {
                Some(t) => entry(doc, t[0], t[1] as u16),
                None => entry(doc, 0, 255),
            };
        }
        let r = &bytes[i * size..(i + 1) * size];
        entry(doc, r[size - 2], r[size - 1] as u16)
    }

    /// Every record, in order: (key, entry).
    pub fn iter(&self) -> impl Iterator<Item = (u64, [u8; ENTRY])> + '_ {
        self.iter_keys(0..1 << KEY_BITS)
    }

    /// The records whose keys are in `keys`, in order.
    pub fn iter_keys(
        &self,
        keys: std::ops::Range<u64>,
    ) -> impl Iterator<Item = (u64, [u8; ENTRY])> + '_ {
        let (w, size, shift) = (self.widths, self.widths.record(), KEY_BITS - self.bits);
        let records = self.records();
        let buckets = if keys.is_empty() {
            0..0
        } else {
            bucket_of(keys.start, self.bits)..bucket_of(keys.end - 1, self.bits) + 1
        };
        buckets
            .flat_map(move |b| {
                (self.slot(b)..self.slot(b + 1)).map(move |i| {
                    let low = be(&records[i * size..i * size + w.key]);
                    let high = if self.bits == 0 {
                        0
                    } else {
                        (b as u64) << shift
                    };
                    (high | low, self.entry_at(i))
                })
            })
            .skip_while(move |r| r.0 < keys.start)
            .take_while(move |r| r.0 < keys.end)
    }
}

/// Appends the record of `key` and entry (doc, level, count) to `buf`, in a run's
/// shape (widths, table bits, first doc): the key's bits below its bucket's, the doc's
/// offset from the first doc, level, count.
#[inline]
fn encode(
    buf: &mut Vec<u8>,
    (w, bits, first): (Widths, u32, u64),
    key: u64,
    (doc, level, count): (u64, u8, u16),
) {
    let low = low_bits(key, bits).to_be_bytes();
    buf.extend_from_slice(&low[8 - w.key..]);
    let offset = (doc - first).to_be_bytes();
    buf.extend_from_slice(&offset[8 - w.doc..]);
    if !w.by_doc {
        buf.extend_from_slice(&[level, count as u8]);
    }
}

/// Records of one key range of a run, encoded apart from its writer: a spill's key
/// ranges and a merge's are encoded on every core, and the writer only copies them in
/// order ([`RunWriter::append`]). Encoding was most of a spill (rd100k first sweep:
/// ~0.75 s on the postings thread).
pub struct RunPart {
    bits: u32,
    widths: Widths,
    docs: std::ops::Range<u64>,
    buf: Vec<u8>,
    n: u64,
    /// Each bucket whose records begin here, and its first record (counted in the part).
    begins: Vec<(usize, u64)>,
    /// Its first and last keys.
    keys: Option<(u64, u64)>,
    /// With a table by doc: each record's doc offset, level and count, for the writer's
    /// table.
    levels: Vec<(u32, u8, u8)>,
}

impl RunPart {
    fn new(bits: u32, widths: Widths, docs: std::ops::Range<u64>) -> RunPart {
        RunPart {
            bits,
            widths,
            docs,
            buf: Vec::new(),
            n: 0,
            begins: Vec::new(),
            keys: None,
            levels: Vec::new(),
        }
    }

    /// Its docs' levels and counts sorted by doc, each once (on the part's own thread:
    /// the writer then fills its table in doc order, a doc once, not a record at a time).
    fn settle_levels(&mut self) {
        self.levels.sort_unstable();
        self.levels.dedup();
    }

    /// Appends one record; keys must not decrease, the doc must be in the run's range.
    pub fn push(&mut self, key: u64, e: &[u8]) -> Result<()> {
        let (doc, level, count) = entry_fields(e);
        let last = self.keys.map(|k| k.1);
        if last.is_some_and(|l| l > key) || !self.docs.contains(&doc) || key >> KEY_BITS != 0 {
            return Err(IndexError::Invalid(
                "a postings run's part: a record out of order or range (a bug)".into(),
            ));
        }
        let b = bucket_of(key, self.bits);
        if self.begins.last().is_none_or(|(at, _)| *at != b) {
            self.begins.push((b, self.n));
        }
        self.keys = Some((self.keys.map_or(key, |k| k.0), key));
        let shape = (self.widths, self.bits, self.docs.start);
        encode(&mut self.buf, shape, key, (doc, level, count));
        if self.widths.by_doc {
            // The offset is under `MAX_TABLE_DOCS`: a u32. Repeats are dropped when the
            // part is settled ([`RunPart::settle_levels`]); here only the next one's.
            let this = ((doc - self.docs.start) as u32, level, count as u8);
            if self.levels.last() != Some(&this) {
                self.levels.push(this);
            }
        }
        self.n += 1;
        Ok(())
    }
}

/// Fills `w` with `parts` parts in order, part `i` made by `make(i, part)` on one of
/// `threads` threads; `threads` parts are held at a time (a part is a key range: at
/// most a few percent of the run).
pub fn write_parts(
    w: &mut RunWriter,
    parts: usize,
    threads: usize,
    make: impl Fn(usize, &mut RunPart) -> Result<()> + Sync,
) -> Result<()> {
    let threads = threads.max(1);
    let mut from = 0;
    while from < parts {
        let to = parts.min(from + threads);
        let blank: Vec<RunPart> = (from..to).map(|_| w.part()).collect();
        let made: Vec<Result<RunPart>> = std::thread::scope(|s| {
            let make = &make;
            let job = |i: usize, mut p: RunPart| {
                move || {
                    make(i, &mut p)?;
                    p.settle_levels();
                    Ok(p)
                }
            };
            let mut jobs = (from..to).zip(blank).map(|(i, p)| job(i, p));
            // The first of the wave on this thread, the others beside it.
            let here = jobs.next();
            let spawned: Vec<_> = jobs.map(|j| s.spawn(j)).collect();
            let mut out: Vec<Result<RunPart>> = here.into_iter().map(|j| j()).collect();
            for h in spawned {
                out.push(h.join().unwrap_or_else(|_| {
                    Err(IndexError::Invalid("a postings run's part panicked".into()))
                }));
            }
            out
        });
        for part in made {
            w.append(part?)?;
        }
        from = to;
    }
    Ok(())
}

/// Writes a run: records pushed in key order (a key's entries in doc order), then
/// [`RunWriter::finish`]. The file takes its name only when complete and synced.
pub struct RunWriter {
    out: BufWriter<File>,
    /// Records pushed and not yet checksummed and written (the checksum runs over large
    /// slices): a part like any other, appended when it holds [`BUF`] bytes.
    pushed: RunPart,
    tmp: PathBuf,
    path: PathBuf,
    n: u64,
    bits: u32,
    table: Vec<u64>,
    last: Option<u64>,
    crc: crc32fast::Hasher,
    docs: std::ops::Range<u64>,
    widths: Widths,
    /// With a table by doc: each doc's level and count, and which are set.
    doc_table: Vec<u8>,
    doc_set: Vec<u64>,
}

impl RunWriter {
    /// A writer of the run at `path` for docs `docs`, of about `expect` records (sizes
    /// the table; any number may come).
    pub fn create(path: &Path, expect: usize, docs: std::ops::Range<u64>) -> Result<RunWriter> {
        let tmp = path.with_extension("tmp");
        let file = File::create(&tmp).map_err(|e| io(&tmp, e))?;
        let mut out = BufWriter::with_capacity(64 << 10, file);
        let by_doc = by_doc_for(expect, &docs);
        let magic = if by_doc { MAGIC } else { MAGIC_V1 };
        out.write_all(magic).map_err(|e| io(&tmp, e))?;
        let bits = table_bits(expect);
        let widths = Widths::of(bits, &docs, by_doc);
        let span = doc_table_len(by_doc, &docs) / 2;
        Ok(RunWriter {
            out,
            pushed: RunPart::new(bits, widths, docs.clone()),
            tmp,
            path: path.to_path_buf(),
            n: 0,
            bits,
            table: Vec::with_capacity((1usize << bits) + 1),
            last: None,
            crc: crc32fast::Hasher::new(),
            widths,
            docs,
            doc_table: vec![0; 2 * span],
            doc_set: vec![0; span.div_ceil(64)],
        })
    }

    /// Appends one record; keys must not decrease.
    pub fn push(&mut self, key: u64, e: &[u8]) -> Result<()> {
        self.pushed.push(key, e)?;
        if self.pushed.buf.len() >= BUF {
            let part = self.take_pushed();
            self.append(part)?;
        }
        Ok(())
    }

    /// The records pushed and not yet appended (an empty part left in their place).
    fn take_pushed(&mut self) -> RunPart {
        let blank = self.part();
        std::mem::replace(&mut self.pushed, blank)
    }

    /// An empty part of this run, to be filled on any thread and appended in key order
    /// ([`RunWriter::append`]).
    pub fn part(&self) -> RunPart {
        RunPart::new(self.bits, self.widths, self.docs.clone())
    }

    /// Appends the records of `part` (made by [`RunWriter::part`]), whose keys come
    /// after every record's so far.
    pub fn append(&mut self, part: RunPart) -> Result<()> {
        if self.pushed.keys.is_some() {
            let pushed = self.take_pushed();
            self.append(pushed)?;
        }
        let Some((first, last)) = part.keys else {
            return Ok(());
        };
        if self.last.is_some_and(|l| l > first)
            || part.bits != self.bits
            || part.docs != self.docs
            || part.widths.by_doc != self.widths.by_doc
        {
            return Err(IndexError::Invalid(format!(
                "postings run {}: a part out of order or of another run (a bug)",
                self.path.display()
            )));
        }
        for (b, i) in part.begins {
            while self.table.len() <= b {
                self.table.push(self.n + i);
            }
        }
        for (d, level, count) in part.levels {
            let (d, bit) = (d as usize, 1u64 << (d % 64));
            let at = &mut self.doc_table[2 * d..2 * d + 2];
            if self.doc_set[d / 64] & bit != 0 && at != [level, count] {
                return Err(IndexError::Invalid(format!(
                    "postings run {}: doc {} with two levels or counts (a bug)",
                    self.path.display(),
                    self.docs.start + d as u64
                )));
            }
            self.doc_set[d / 64] |= bit;
            at.copy_from_slice(&[level, count]);
        }
        self.crc.update(&part.buf);
        self.out
            .write_all(&part.buf)
            .map_err(|err| io(&self.tmp, err))?;
        self.n += part.n;
        self.last = Some(last);
        Ok(())
    }

    /// Records pushed or appended so far.
    pub fn len(&self) -> u64 {
        self.n + self.pushed.n
    }

    /// Whether no record was pushed or appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops what was written.
    pub fn abandon(self) {
        let tmp = self.tmp.clone();
        drop(self);
        let _ = std::fs::remove_file(tmp);
    }

    /// Writes the table and footer, syncs, and gives the file its name; returns the run.
    pub fn finish(mut self) -> Result<Run> {
        let pushed = self.take_pushed();
        self.append(pushed)?;
        // The table by doc follows the records, under their checksum.
        let doc_table = std::mem::take(&mut self.doc_table);
        self.crc.update(&doc_table);
        let tmp = self.tmp.clone();
        self.out.write_all(&doc_table).map_err(|e| io(&tmp, e))?;
        let slots = (1usize << self.bits) + 1;
        while self.table.len() < slots {
            self.table.push(self.n);
        }
        let mut table = Vec::with_capacity(slots * 8);
        for t in &self.table {
            table.extend_from_slice(&t.to_le_bytes());
        }
        let mut f = Vec::with_capacity(FOOTER);
        f.extend_from_slice(&self.n.to_le_bytes());
        f.extend_from_slice(&self.bits.to_le_bytes());
        f.extend_from_slice(&self.crc.clone().finalize().to_le_bytes());
        f.extend_from_slice(&self.docs.start.to_le_bytes());
        f.extend_from_slice(&self.docs.end.to_le_bytes());
        f.extend_from_slice(&crc32fast::hash(&table).to_le_bytes());
        f.extend_from_slice(&crc32fast::hash(&f).to_le_bytes());
        f.extend_from_slice(END_MAGIC);
        let tmp = self.tmp.clone();
        self.out.write_all(&table).map_err(|e| io(&tmp, e))?;
        self.out.write_all(&f).map_err(|e| io(&tmp, e))?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| io(&tmp, e.into_error()))?;
        file.sync_all().map_err(|e| io(&tmp, e))?;
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(|e| io(&self.path, e))?;
        Run::open(&self.path)
    }
}

/// Bytes of records a merge's part holds at most, about: the merged run is written in
/// key ranges of about this size, `threads` of them at once ([`write_parts`]).
const PART_BYTES: u64 = 32 << 20;

/// Merges runs of consecutive doc ranges (oldest first) into one at `path`: each key's
/// entries in run order, at most `limit` bytes of them ([`list_limit`]). Key ranges
/// of the output are merged on `threads` threads (the same file for any number).
pub fn merge(runs: &[&Run], path: &Path, limit: usize, threads: usize) -> Result<Run> {
    let (Some(a), Some(z)) = (runs.first(), runs.last()) else {
        return Err(IndexError::Invalid(
            "a merge of no postings runs (a bug)".into(),
        ));
    };
    for w in runs.windows(2) {
        if w[0].end > w[1].first {
            return Err(IndexError::Invalid(format!(
                "postings runs {} and {} overlap",
                w[0].path.display(),
                w[1].path.display()
            )));
        }
    }
    let total = runs.iter().map(|r| r.len()).sum();
    let mut out = RunWriter::create(path, total, a.first..z.end)?;
    // Small merges in one part; larger ones in at least 16 (balanced over the threads).
    let bytes: u64 = runs.iter().map(|r| r.records().len() as u64).sum();
    let part_bits = match bytes.div_ceil(PART_BYTES) {
        0 | 1 if bytes < PART_BYTES / 8 => 0,
        n => n.next_power_of_two().ilog2().clamp(4, 20),
    };
    let max_entries = limit / ENTRY;
    write_parts(&mut out, 1 << part_bits, threads, |i, part| {
        let span = 1u64 << (KEY_BITS - part_bits);
        let keys = i as u64 * span..(i as u64 + 1) * span;
        let mut its: Vec<_> = runs
            .iter()
            .map(|r| r.iter_keys(keys.clone()).peekable())
            .collect();
        loop {
            // The smallest key among the runs' next records; its entries run by run
            // (the older run's docs first).
            let Some(key) = its.iter_mut().filter_map(|i| i.peek().map(|r| r.0)).min() else {
                return Ok(());
            };
            let mut kept = 0;
            for it in its.iter_mut() {
                while let Some((_, e)) = it.next_if(|r| r.0 == key) {
                    if kept < max_entries {
                        part.push(key, &e)?;
                        kept += 1;
                    }
                }
            }
        }
    })?;
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, docs: std::ops::Range<u64>, recs: &[(u64, u64)]) -> Run {
        let mut w = RunWriter::create(&dir.join(name), recs.len(), docs).unwrap();
        for (k, d) in recs {
            w.push(*k, &entry(*d, 0, 3)).unwrap();
        }
        w.finish().unwrap()
    }

    fn docs_of(run: &Run, key: u64) -> Vec<u64> {
        let mut out = Vec::new();
        run.entries_of(key, &mut out, usize::MAX);
        out.chunks_exact(ENTRY).map(entry_doc).collect()
    }

    #[test]
    fn lookups_find_every_key_and_only_it() {
        let d = tempfile::tempdir().unwrap();
        let mut recs: Vec<(u64, u64)> = (0..5000u64)
            .map(|i| {
                (
                    (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16) & ((1 << 48) - 1),
                    i % 7 + 1,
                )
            })
            .collect();
        recs.push((recs[10].0, 9));
        recs.sort_unstable();
        let run = write(d.path(), "a.run", 1..10, &recs);
        assert_eq!(run.len(), recs.len());
        for (k, _) in &recs {
            let want: Vec<u64> = recs.iter().filter(|r| r.0 == *k).map(|r| r.1).collect();
            assert_eq!(docs_of(&run, *k), want);
        }
        assert!(docs_of(&run, recs[0].0 + 1).is_empty() || recs[1].0 == recs[0].0 + 1);
        assert!(docs_of(&run, (1 << 48) - 1).is_empty());
        let all: Vec<(u64, u64)> = run.iter().map(|(k, e)| (k, entry_doc(&e))).collect();
        assert_eq!(all, recs);
        let mut two = Vec::new();
        assert_eq!(run.entries_of(recs[10].0, &mut two, 1), 1);
    }

    #[test]
    fn records_keep_keys_docs_levels_and_counts_at_every_width() {
        let d = tempfile::tempdir().unwrap();
        // Doc ranges of 1, 2^8 + 1, 2^24 and 2^39 ids; 1 to 100,000 records.
        for (k, (first, span, n)) in [
            (5u64, 1u64, 1usize),
            (7, 257, 40),
            (1 << 30, 1 << 24, 100_000),
            (1, 1 << 39, 3000),
        ]
        .into_iter()
        .enumerate()
        {
            let mut recs: Vec<(u64, u64, u8)> = (0..n as u64)
                .map(|i| {
                    let key = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16) & ((1 << 48) - 1);
                    (key, first + i.wrapping_mul(7919) % span, (i % 5) as u8)
                })
                .collect();
            recs.sort_unstable();
            let path = d.path().join(format!("{k}.run"));
            let mut w = RunWriter::create(&path, n, first..first + span).unwrap();
            for (key, doc, level) in &recs {
                w.push(*key, &entry(*doc, *level, 200)).unwrap();
            }
            let run = w.finish().unwrap();
            let got: Vec<(u64, u64, u8)> = run
                .iter()
                .map(|(key, e)| {
                    let (doc, level, count) = entry_fields(&e);
                    assert_eq!(count, 200);
                    (key, doc, level)
                })
                .collect();
            assert_eq!(got, recs, "run {k}");
            // A doc outside the run's range is refused, not stored wrong.
            let mut w = RunWriter::create(&d.path().join("x.run"), 1, first..first + span).unwrap();
            assert!(w.push(1, &entry(first + span, 0, 1)).is_err());
        }
    }

    #[test]
    fn a_table_by_doc_and_levels_in_each_record_read_alike() {
        let d = tempfile::tempdir().unwrap();
        let recs: Vec<(u64, u64, u8, u16)> = {
            let mut r: Vec<_> = (0..3000u64)
                .map(|i| {
                    let key = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16) & ((1 << 48) - 1);
                    let doc = 100 + i % 700;
                    // A doc's level and count are the doc's, in every record.
                    (key, doc, (doc % 4) as u8, (doc % 300) as u16)
                })
                .collect();
            r.sort_unstable();
            r
        };
        // About as many records as docs: a table by doc; told of one record, the range
        // is too wide for it: levels in each record.
        let run_of = |name: &str, expect: usize| {
            let mut w = RunWriter::create(&d.path().join(name), expect, 100..800).unwrap();
            for (key, doc, level, count) in &recs {
                w.push(*key, &entry(*doc, *level, *count)).unwrap();
            }
            w.finish().unwrap()
        };
        let (by_doc, each) = (run_of("t.run", recs.len()), run_of("e.run", 1));
        assert!(by_doc.widths.by_doc && !each.widths.by_doc);
        assert!(by_doc.bytes() < each.bytes());
        let all = |r: &Run| r.iter().collect::<Vec<_>>();
        assert_eq!(all(&by_doc), all(&each));
        let want: Vec<(u64, [u8; ENTRY])> = recs
            .iter()
            .map(|(k, d, l, c)| (*k, entry(*d, *l, *c)))
            .collect();
        assert_eq!(all(&by_doc), want);
        let reopened = Run::open(by_doc.path()).unwrap();
        assert_eq!(all(&reopened), want);
        // Two counts for one doc are a writer's bug, refused.
        let mut w = RunWriter::create(&d.path().join("x.run"), 2, 1..3).unwrap();
        w.push(1, &entry(1, 0, 5)).unwrap();
        w.push(2, &entry(1, 0, 6)).unwrap();
        assert!(w.finish().is_err());
    }

    #[test]
    fn merges_keep_run_order_and_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let a = write(d.path(), "a.run", 1..3, &[(5, 1), (5, 2), (7, 1)]);
        let b = write(d.path(), "b.run", 3..5, &[(1, 4), (5, 3), (5, 4)]);
        let m = merge(&[&a, &b], &d.path().join("m.run"), 3 * ENTRY, 2).unwrap();
        assert_eq!(m.docs(), 1..5);
        assert_eq!(docs_of(&m, 5), vec![1, 2, 3]);
        assert_eq!(docs_of(&m, 1), vec![4]);
        assert_eq!(docs_of(&m, 7), vec![1]);
        let c = write(d.path(), "c.run", 4..7, &[(1, 6)]);
        assert!(merge(&[&b, &c], &d.path().join("x.run"), 99, 1).is_err());
    }

    #[test]
    fn merges_in_key_ranges_write_the_same_file_on_any_number_of_threads() {
        let d = tempfile::tempdir().unwrap();
        // Over PART_BYTES / 8 of records: merged in 16 parts.
        let recs = |n: u64, seed: u64, docs: std::ops::Range<u64>| {
            let mut r: Vec<(u64, u64)> = (0..n)
                .map(|i| {
                    // 200,000 keys in both runs: lists of a few entries, over both.
                    let x = (i % 200_000).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let doc = docs.start + (i ^ seed) % (docs.end - docs.start);
                    ((x >> 16) & ((1 << 48) - 1), doc)
                })
                .collect();
            r.sort_unstable();
            r
        };
        let (ra, rb) = (recs(400_000, 1, 1..5000), recs(300_000, 2, 5000..9000));
        let a = write(d.path(), "a.run", 1..5000, &ra);
        let b = write(d.path(), "b.run", 5000..9000, &rb);
        assert!(a.records().len() + b.records().len() > PART_BYTES as usize / 8);
        let limit = 3 * ENTRY;
        let one = merge(&[&a, &b], &d.path().join("1.run"), limit, 1).unwrap();
        let three = merge(&[&a, &b], &d.path().join("3.run"), limit, 3).unwrap();
        let bytes = |r: &Run| std::fs::read(r.path()).unwrap();
        assert_eq!(bytes(&one), bytes(&three));
        // What a merge means: each key's entries, older run first, at most three.
        let mut want: Vec<(u64, u64)> = Vec::new();
        let mut all: Vec<(u64, usize, u64)> = ra.iter().map(|r| (r.0, 0, r.1)).collect();
        all.extend(rb.iter().map(|r| (r.0, 1, r.1)));
        all.sort_by_key(|r| (r.0, r.1));
        for (i, r) in all.iter().enumerate() {
            let before = all[..i].iter().rev().take_while(|o| o.0 == r.0).count();
            if before < 3 {
                want.push((r.0, r.2));
            }
        }
        let got: Vec<(u64, u64)> = one.iter().map(|(k, e)| (k, entry_doc(&e))).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_damaged_run_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let run = write(d.path(), "a.run", 1..3, &[(5, 1), (6, 2)]);
        let path = run.path().to_path_buf();
        drop(run);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[10] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = Run::open(&path).unwrap_err().to_string();
        assert!(e.contains("a.run") && e.contains("checksum"), "{e}");
        std::fs::write(&path, &bytes[..30]).unwrap();
        assert!(Run::open(&path)
            .unwrap_err()
            .to_string()
            .contains("not a postings run"));
    }

    #[test]
    fn entries_keep_doc_level_and_count() {
        for (doc, level, count) in [(0, 0, 0), (1, 3, 127), (MAX_DOCS - 1, 31, 255)] {
            assert_eq!(entry_fields(&entry(doc, level, count)), (doc, level, count));
        }
        // A count past 255 is read as 255 (the prefilter then lets more through).
        assert_eq!(entry_fields(&entry(9, 2, 4000)), (9, 2, 255));
    }
}
