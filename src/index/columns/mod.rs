//! The column families of the index, one file each, in the order of `schema/README.md`.
//!
//! Each file has a marker type implementing [`Column`] (in the manner of Agave's
//! blockstore `column.rs`): the family's name, its key and value types, how both are
//! encoded and decoded, its RocksDB options, and a doc comment saying who writes it and
//! who reads it. Everything outside `src/index/` reads and writes through the typed
//! handles of [`Index`] (`index.captures().scan_url(surt, …)`); RocksDB is named only
//! inside `src/index/`.
//!
//! Decoding never panics: a key or value of the wrong shape is
//! [`IndexError::Corruption`] naming the column family and the key.

pub mod anchor_bags;
pub mod anchor_targets;
pub mod captures;
pub mod doc_captures;
pub mod docs;
pub mod edges;
pub mod files;
pub mod fingerprints;
pub mod host_sweeps;
pub mod inbound;
pub mod links;
pub mod members;
pub mod meta;
pub mod parents;
pub mod payloads;
pub mod sketches;
pub mod sweep_pages;
pub mod sweeps;
pub mod template_values;
pub mod templates;
pub mod texts;
pub mod unpaired;
pub mod url_last;

use std::marker::PhantomData;

use rocksdb::{BlockBasedOptions, Cache, ColumnFamily, DBCompressionType, Options};

use super::{Index, IndexError, Result};

/// One column family: its name, key and value types and their byte forms.
pub trait Column {
    /// The column family's name in RocksDB.
    const NAME: &'static str;
    /// What a key holds.
    type Key;
    /// What a value holds.
    type Value;
    /// The key's bytes.
    fn key(k: &Self::Key) -> Vec<u8>;
    /// A key from its bytes (an error message when they are not one).
    fn decode_key(b: &[u8]) -> std::result::Result<Self::Key, String>;
    /// The value's bytes.
    fn value(v: &Self::Value) -> Vec<u8>;
    /// A value from its bytes (an error message when they are not one).
    fn decode_value(b: &[u8]) -> std::result::Result<Self::Value, String>;
    /// Options beyond the defaults of every family ([`base_options`]).
    fn tune(_o: &mut Options, _t: &mut BlockBasedOptions, _cx: &Tuning) {}
}

/// What a family's options may depend on.
pub struct Tuning {
    /// The block cache shared by all families.
    pub cache: Cache,
}

/// Calls the macro `$m` with the marker type of every column family, in order.
macro_rules! with_columns {
    ($m:ident) => {
        $m!(
            meta::Meta,
            sweeps::Sweeps,
            files::Files,
            fingerprints::Fingerprints,
            payloads::Payloads,
            docs::Docs,
            sketches::Sketches,
            captures::Captures,
            doc_captures::DocCaptures,
            url_last::UrlLast,
            edges::Edges,
            parents::Parents,
            members::Members,
            host_sweeps::HostSweeps,
            templates::Templates,
            template_values::TemplateValues,
            sweep_pages::SweepPages,
            texts::Texts,
            unpaired::Unpaired,
            links::Links,
            anchor_bags::AnchorBags,
            inbound::InboundLinks,
            anchor_targets::AnchorTargets
        )
    };
}

/// Every column family name, in creation order (the order of the files here and of the
/// sections of `schema/README.md`).
pub const ALL: &[&str] = {
    macro_rules! names {
        ($($c:ty),*) => {
            &[$(<$c>::NAME),*]
        };
    }
    with_columns!(names)
};

/// The options of the family `name`.
pub(crate) fn options(name: &str, cx: &Tuning) -> Options {
    let (mut o, mut t) = base_options(cx);
    macro_rules! tune {
        ($($c:ty),*) => {
            $(if name == <$c>::NAME { <$c>::tune(&mut o, &mut t, cx); })*
        };
    }
    with_columns!(tune);
    o.set_block_based_table_factory(&t);
    o
}

/// Decodes one entry of the family `name` with its codecs: the message of the first
/// part that is not what the family holds. For checks and for fuzzing the decoders.
pub fn check_entry(name: &str, key: &[u8], value: &[u8]) -> std::result::Result<(), String> {
    macro_rules! check {
        ($($c:ty),*) => {
            $(if name == <$c>::NAME {
                <$c>::decode_key(key)?;
                <$c>::decode_value(value)?;
                return Ok(());
            })*
        };
    }
    with_columns!(check);
    Err(format!("no column family {name:?}"))
}

/// What every family gets: the shared block cache with index and filter blocks in it,
/// zstd at every level in blocks of [`BLOCK_SIZE`].
///
/// Upper levels were uncompressed (small and hot, it was thought), but an ingest leaves
/// most of a sweep's entries in level 0 until enough flushes gather: the rd100k index
/// (four sweeps) took 685 MB, of which 200 MB outside sketches and postings; zstd at
/// every level took it to 596 MB and 16 KiB blocks to 583 MB (`captures` 130 → 75 bytes
/// a capture) in the same ingest time. A trained zstd dictionary saved nothing more and
/// cost 10% of the time (2026-11-28; `docs/history/ingest-tuning.md`).
fn base_options(cx: &Tuning) -> (Options, BlockBasedOptions) {
    let mut o = Options::default();
    let mut t = BlockBasedOptions::default();
    t.set_block_cache(&cx.cache);
    t.set_cache_index_and_filter_blocks(true);
    // Charged to the cache but held by the table readers: a lookup does not go through
    // the cache for them (measured: a tenth less CPU in a later 100k-page sweep, where
    // every new doc looks up ~75 posting values in every sorted run).
    t.set_pin_l0_filter_and_index_blocks_in_cache(true);
    t.set_pin_top_level_index_and_filter(true);
    t.set_block_size(BLOCK_SIZE);
    o.set_compression_type(DBCompressionType::Zstd);
    o.set_bottommost_compression_type(DBCompressionType::Zstd);
    o.set_level_compaction_dynamic_level_bytes(true);
    o.set_level_zero_file_num_compaction_trigger(L0_COMPACTION_TRIGGER as i32);
    (o, t)
}

/// Bytes of a data block before compression (RocksDB's default is 4 KiB): zstd finds
/// more of a block's repeats (a URL's captures share URL, file names, MIME) in a larger one.
const BLOCK_SIZE: usize = 16 << 10;

/// Level-0 files that start a compaction of a family (RocksDB's default; the end of an
/// ingest counts against it, `Index::pause_compactions`).
pub(crate) const L0_COMPACTION_TRIGGER: u64 = 4;

/// For families read by point lookups, most of them misses for new content: full-key
/// bloom filters, in the SST files and in the memtable (a miss then costs no skip-list
/// search), and a hash table in each data block, so a lookup finds its key without a
/// binary search over the block's restart points (sweep 5 of the steady 100k corpus,
/// three alternating pairs: 2.7 s less wall time at the median). A partitioned index
/// for postings and sketches was tried and cost 5 s more: each probe then went through
/// the block cache for its partition.
pub(crate) fn point_lookups(o: &mut Options, t: &mut BlockBasedOptions) {
    t.set_bloom_filter(10.0, false);
    o.set_memtable_whole_key_filtering(true);
    o.set_memtable_prefix_bloom_ratio(0.1);
    t.set_data_block_index_type(rocksdb::DataBlockIndexType::BinaryAndHash);
    t.set_data_block_hash_ratio(0.75);
}

/// A key for messages: as text when it is printable, else in hexadecimal.
pub fn show_key(k: &[u8]) -> String {
    if !k.is_empty() && k.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("{:?}", String::from_utf8_lossy(k))
    } else {
        k.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Corruption of family `C` at key `k`.
pub fn corrupt<C: Column>(k: &[u8], what: impl std::fmt::Display) -> IndexError {
    IndexError::Corruption {
        cf: C::NAME,
        comment: format!("key {}: {what}", show_key(k)),
    }
}

/// A big-endian u64 of exactly 8 bytes.
pub(crate) fn be_u64(b: &[u8]) -> std::result::Result<u64, String> {
    <[u8; 8]>::try_from(b)
        .map(u64::from_be_bytes)
        .map_err(|_| format!("{} bytes where 8 were expected", b.len()))
}

/// A key of host SURT ‖ 0x00 ‖ sweep id u32 BE (`host_sweeps`, `templates`).
pub(crate) fn host_sweep_key(host: &str, sweep: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(host.len() + 5);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k.extend_from_slice(&sweep.to_be_bytes());
    k
}

/// The host and sweep of a [`host_sweep_key`].
pub(crate) fn decode_host_sweep_key(b: &[u8]) -> std::result::Result<(String, u32), String> {
    let n = b.len();
    if n < 5 || b[n - 5] != 0 {
        return Err(format!("not host ‖ 0 ‖ sweep ({n} bytes)"));
    }
    let host = String::from_utf8(b[..n - 5].to_vec()).map_err(|_| "a host that is not UTF-8")?;
    Ok((host, be_u32(&b[n - 4..])?))
}

/// A big-endian u32 of exactly 4 bytes.
/// Sweep id u32 BE ‖ SURT: the keys of `links` and `anchor_bags`.
pub(crate) fn sweep_surt_key(sweep: u32, surt: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + surt.len());
    k.extend_from_slice(&sweep.to_be_bytes());
    k.extend_from_slice(surt.as_bytes());
    k
}

/// [`sweep_surt_key`] undone.
pub(crate) fn decode_sweep_surt_key(b: &[u8]) -> std::result::Result<(u32, String), String> {
    if b.len() < 4 {
        return Err(format!("{} bytes: not a sweep id and a SURT", b.len()));
    }
    let surt = String::from_utf8(b[4..].to_vec()).map_err(|_| "a SURT that is not UTF-8")?;
    Ok((be_u32(&b[..4])?, surt))
}

pub(crate) fn be_u32(b: &[u8]) -> std::result::Result<u32, String> {
    <[u8; 4]>::try_from(b)
        .map(u32::from_be_bytes)
        .map_err(|_| format!("{} bytes where 4 were expected", b.len()))
}

/// An empty value (families whose keys say everything).
pub(crate) fn empty_value(b: &[u8]) -> std::result::Result<(), String> {
    if b.is_empty() {
        Ok(())
    } else {
        Err(format!("{} bytes where none were expected", b.len()))
    }
}

/// Writes to several families applied at once ([`Index::write`]).
///
/// The operations are kept and handed to RocksDB sorted by family and key (equal keys
/// in the order they were made, so the last put or delete of a key wins as before).
/// RocksDB's memtable is a skip list that starts each insert from where the previous one
/// ended: keys in order cost a step or two each instead of a search from the top, which
/// halved the memtable inserts of a batch of captures, whose keys (URLs) come in
/// crawl order.
#[derive(Default)]
pub struct Batch {
    /// Keys and values, one after another.
    bytes: Vec<u8>,
    /// The operations, in the order they were made.
    ops: Vec<Op>,
    /// Puts at new keys ([`Batch::put_new_raw`]), in the order they were made.
    new_ops: Vec<Op>,
}

/// One put or delete: its family and where its key and value lie in `Batch::bytes`.
struct Op {
    family: &'static str,
    key: (u32, u32),
    /// `None`: a delete.
    value: Option<(u32, u32)>,
}

impl Batch {
    /// Empty, with room for `like`'s bytes and operations (batches of one ingest are
    /// alike: growing each from empty copied it over and over on the committing thread).
    pub fn sized_like(like: &Batch) -> Batch {
        // A quarter more: a batch a little larger than the last was copied whole when
        // it outgrew it (a redesign sweep's pages, with more links: 0.5 CPU-s).
        let room = |n: usize| n + n / 4;
        Batch {
            bytes: Vec::with_capacity(room(like.bytes.len())),
            ops: Vec::with_capacity(room(like.ops.len())),
            new_ops: Vec::with_capacity(room(like.new_ops.len())),
        }
    }

    /// Puts `value` at a key of family `C` above every key the family holds and every
    /// key of the batches before (a new doc's): such puts are written as one sorted
    /// file per family, which RocksDB takes in whole ([`Index::write`]), not through
    /// its log and memtable.
    pub(crate) fn put_new_raw<C: Column>(&mut self, _index: &Index, key: &[u8], value: &[u8]) {
        let op = self.put_op(C::NAME, key, value);
        self.new_ops.push(op);
    }

    fn put_op(&mut self, family: &'static str, key: &[u8], value: &[u8]) -> Op {
        let key = self.keep(key);
        let value = Some(self.keep(value));
        Op { family, key, value }
    }

    /// The puts at new keys, by family in the order their first put was made: each
    /// family's keys and values in the order made, and whether they ascend.
    pub(crate) fn new_puts(&self) -> Vec<(&'static str, Vec<(&[u8], &[u8])>, bool)> {
        let mut out: Vec<(&'static str, Vec<(&[u8], &[u8])>, bool)> = Vec::new();
        for op in &self.new_ops {
            let Some(v) = op.value else { continue };
            let (k, v) = (self.slice(op.key), self.slice(v));
            match out.iter_mut().find(|(f, _, _)| *f == op.family) {
                Some((_, puts, ascending)) => {
                    *ascending &= puts.last().is_none_or(|(last, _)| *last < k);
                    puts.push((k, v));
                }
                None => out.push((op.family, vec![(k, v)], true)),
            }
        }
        out
    }

    /// Puts `value` at `key` in family `C`.
    pub fn put<C: Column>(&mut self, index: &Index, key: &C::Key, value: &C::Value) {
        self.put_raw::<C>(index, &C::key(key), &C::value(value));
    }

    /// Puts bytes already encoded (hot paths that build keys in place). The index is
    /// only needed when the batch is written ([`Batch::sorted`]).
    pub(crate) fn put_raw<C: Column>(&mut self, _index: &Index, key: &[u8], value: &[u8]) {
        let op = self.put_op(C::NAME, key, value);
        self.ops.push(op);
    }

    /// Deletes `key` from family `C`.
    pub fn delete<C: Column>(&mut self, _index: &Index, key: &C::Key) {
        let key = self.keep(&C::key(key));
        self.ops.push(Op {
            family: C::NAME,
            key,
            value: None,
        });
    }

    fn keep(&mut self, b: &[u8]) -> (u32, u32) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(b);
        (start, b.len() as u32)
    }

    fn slice(&self, (start, len): (u32, u32)) -> &[u8] {
        &self.bytes[start as usize..(start + len) as usize]
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.ops.len() + self.new_ops.len()
    }

    /// Whether the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.new_ops.is_empty()
    }

    /// The batch for RocksDB, sorted by family and key (stable: see [`Batch`]); the
    /// puts at new keys not in it (see [`Batch::new_puts`]).
    pub(crate) fn sorted(&self, index: &Index) -> rocksdb::WriteBatch {
        let mut order: Vec<u32> = (0..self.ops.len() as u32).collect();
        order.sort_by(|a, b| {
            let (a, b) = (&self.ops[*a as usize], &self.ops[*b as usize]);
            (a.family, self.slice(a.key)).cmp(&(b.family, self.slice(b.key)))
        });
        let mut wb = rocksdb::WriteBatch::default();
        for k in order {
            let op = &self.ops[k as usize];
            let cf = index.cf(op.family);
            match op.value {
                Some(v) => wb.put_cf(cf, self.slice(op.key), self.slice(v)),
                None => wb.delete_cf(cf, self.slice(op.key)),
            }
        }
        wb
    }
}

/// A raw entry of a family: key and value bytes.
pub type RawEntry = (Box<[u8]>, Box<[u8]>);

/// A typed handle on one column family of an open index.
pub struct Col<'a, C> {
    pub(crate) index: &'a Index,
    _c: PhantomData<C>,
}

impl<C> Clone for Col<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Col<'_, C> {}

impl<'a, C: Column> Col<'a, C> {
    pub(crate) fn new(index: &'a Index) -> Self {
        Col {
            index,
            _c: PhantomData,
        }
    }

    pub(crate) fn handle(&self) -> &'a ColumnFamily {
        self.index.cf(C::NAME)
    }

    /// The value at `key`.
    pub fn get(&self, key: &C::Key) -> Result<Option<C::Value>> {
        let k = C::key(key);
        self.get_raw(&k)
    }

    pub(crate) fn get_raw(&self, k: &[u8]) -> Result<Option<C::Value>> {
        match self.index.db().get_pinned_cf(self.handle(), k)? {
            None => Ok(None),
            Some(v) => C::decode_value(&v)
                .map(Some)
                .map_err(|e| corrupt::<C>(k, e)),
        }
    }

    /// The values of `keys`, which must be sorted: one batched lookup.
    pub(crate) fn get_sorted_raw<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
    ) -> Result<Vec<Option<C::Value>>> {
        let got = (self.index.db()).batched_multi_get_cf(self.handle(), keys.iter(), true);
        got.into_iter()
            .zip(keys)
            .map(|(v, k)| match v? {
                None => Ok(None),
                Some(v) => C::decode_value(&v)
                    .map(Some)
                    .map_err(|e| corrupt::<C>(k.as_ref(), e)),
            })
            .collect()
    }

    /// Whether `key` is present (its value is not decoded).
    pub fn contains(&self, key: &C::Key) -> Result<bool> {
        self.contains_raw(&C::key(key))
    }

    pub(crate) fn contains_raw(&self, k: &[u8]) -> Result<bool> {
        Ok(self.index.db().get_pinned_cf(self.handle(), k)?.is_some())
    }

    /// Writes `value` at `key` now, alone.
    pub fn put_now(&self, key: &C::Key, value: &C::Value) -> Result<()> {
        self.index
            .db()
            .put_cf(self.handle(), C::key(key), C::value(value))?;
        Ok(())
    }

    /// Calls `each` with every entry whose key bytes start with `prefix`, in key order,
    /// until it returns `Ok(false)`.
    pub fn scan_prefix(
        &self,
        prefix: &[u8],
        mut each: impl FnMut(C::Key, C::Value) -> Result<bool>,
    ) -> Result<()> {
        self.scan_raw(prefix, None, false, |k, v| {
            if !k.starts_with(prefix) {
                return Ok(false);
            }
            let key = C::decode_key(k).map_err(|e| corrupt::<C>(k, e))?;
            let value = C::decode_value(v).map_err(|e| corrupt::<C>(k, e))?;
            each(key, value)
        })
    }

    /// Every entry in key order.
    pub fn for_each(&self, each: impl FnMut(C::Key, C::Value) -> Result<bool>) -> Result<()> {
        self.scan_prefix(&[], each)
    }

    /// Whether any key starts with `prefix` (a sweep's entries: its id's bytes).
    pub fn any_in(&self, prefix: &[u8]) -> Result<bool> {
        let mut any = false;
        self.scan_raw(prefix, None, false, |k, _| {
            any = k.starts_with(prefix);
            Ok(false)
        })?;
        Ok(any)
    }

    /// Raw entries from `start` (forward, below `end`), or with `reverse` from the last
    /// key before `start` backwards (down to `end`), until `each` returns `Ok(false)`.
    /// The bound lets RocksDB stop at the range's end instead of positioning every
    /// sorted run past it.
    pub(crate) fn scan_raw(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        for item in self.iter_raw(start, end, reverse) {
            let (k, v) = item?;
            if !each(&k, &v)? {
                break;
            }
        }
        Ok(())
    }

    /// The raw entries [`scan_raw`](Self::scan_raw) calls back with, as an iterator
    /// (two walks at once: the nearest captures of a date, both ways). Each entry is
    /// counted against the thread's read budget ([`crate::index::budget`]).
    pub(crate) fn iter_raw(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
    ) -> impl Iterator<Item = Result<RawEntry>> + '_ {
        self.iter_raw_with(rocksdb::ReadOptions::default(), start, end, reverse)
    }

    /// [`scan_raw`](Self::scan_raw) forward over a range read once (a whole sweep): its
    /// blocks are not kept in the block cache, where they would push out what point
    /// lookups need.
    pub(crate) fn scan_raw_once(
        &self,
        start: &[u8],
        end: &[u8],
        mut each: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let mut ro = rocksdb::ReadOptions::default();
        ro.fill_cache(false);
        for item in self.iter_raw_with(ro, start, Some(end), false) {
            let (k, v) = item?;
            if !each(&k, &v)? {
                break;
            }
        }
        Ok(())
    }

    fn iter_raw_with(
        &self,
        mut ro: rocksdb::ReadOptions,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
    ) -> impl Iterator<Item = Result<RawEntry>> + '_ {
        let dir = if reverse {
            if let Some(e) = end {
                ro.set_iterate_lower_bound(e.to_vec());
            }
            rocksdb::Direction::Reverse
        } else {
            if let Some(e) = end {
                ro.set_iterate_upper_bound(e.to_vec());
            }
            rocksdb::Direction::Forward
        };
        let mode = if start.is_empty() && !reverse {
            rocksdb::IteratorMode::Start
        } else {
            rocksdb::IteratorMode::From(start, dir)
        };
        (self.index.db().iterator_cf_opt(self.handle(), ro, mode)).map(|item| {
            crate::index::budget::spend()?;
            Ok(item?)
        })
    }

    /// Whether the family holds no entry.
    pub fn is_empty(&self) -> bool {
        let mut ro = rocksdb::ReadOptions::default();
        ro.set_total_order_seek(true);
        self.index
            .db()
            .iterator_cf_opt(self.handle(), ro, rocksdb::IteratorMode::Start)
            .next()
            .is_none()
    }

    /// Bytes of its SST files.
    pub fn size(&self) -> u64 {
        self.index.cf_size(C::NAME)
    }
}

/// Whether `r` may see a capture of `doc` dated at or before `ts` that is not a revisit:
/// what a revisit of that content repeats (`captures::seen`, `doc_captures`).
pub(crate) fn original_seen(
    index: &crate::index::Index,
    r: &crate::access::Reader,
    doc: u64,
    ts: &str,
) -> Result<bool> {
    let col = Col::<captures::Captures>::new(index);
    let prefix = doc.to_be_bytes();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut found = false;
    // Oldest first, a few at a time as they are met: the first is most often the original.
    let check = |keys: &mut Vec<Vec<u8>>| -> Result<bool> {
        let any = (col.get_many(keys)?.into_iter().flatten())
            .any(|info| info.kind != crate::read::RecordKind::Revisit);
        keys.clear();
        Ok(any)
    };
    Col::<doc_captures::DocCaptures>::new(index).scan_raw(&prefix, None, false, |k, v| {
        if !k.starts_with(&prefix) {
            return Ok(false);
        }
        let (_, c) = <doc_captures::DocCaptures as Column>::decode_key(k)
            .map_err(|e| corrupt::<doc_captures::DocCaptures>(k, e))?;
        let surt = String::from_utf8_lossy(v).to_string();
        if c.timestamp.as_str() <= ts && r.visible(&surt, &c.timestamp) {
            let mut ck = surt.into_bytes();
            ck.push(0);
            ck.extend_from_slice(&k[8..]);
            keys.push(ck);
            if keys.len() >= 8 {
                found = check(&mut keys)?;
            }
        }
        Ok(!found)
    })?;
    Ok(found || (!keys.is_empty() && check(&mut keys)?))
}
