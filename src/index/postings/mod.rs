//! Posting lists: a sampled sketch value → the docs whose posting sample holds it.
//!
//! Lists live in two places. Docs below the *mark* are in the stored runs ([`store`]:
//! files of sorted ⟨key, entry⟩ records, [`run`]); docs from the mark on (added since the
//! last spill) are in memory, in [`Fresh`]. A spill writes the fresh lists as one more
//! run, with the new mark, at the end of every ingest and whenever the buffer reaches its
//! budget; the ingest then merges the newest runs size-tiered.
//!
//! A lookup ([`lookup`]) reads the stored lists and the mark from one [`store::Store`]
//! (which never changes: a spill makes a new one); the fresh entries ([`Fresh::entries`])
//! complete them. Ingest's pair step looks up a batch's values by key range while no
//! spill can happen (spills fall between batches), and checks the mark it read against
//! the buffer's.
//!
//! After a killed ingest the fresh lists are gone, but they are a pure function of the
//! sketches of docs from the mark on: [`Fresh::load`] rebuilds them.

mod fresh;
mod log;
pub mod run;
pub mod store;

pub use fresh::{settle, Fresh};
pub use log::AddLog;
pub use run::{entry, entry_doc, entry_fields, list_limit, ENTRY, MAX_DOCS};

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::RwLock;

use super::{Index, Result};
use crate::sketch::{Sketch, MAX_TZ};

/// The folder of the runs, inside the index (and inside each snapshot).
pub const DIR: &str = "postings";

/// Docs remembered from the head of each over-cap list: a doc made mostly of over-cap
/// values (a member of a family larger than the cap) is compared with these, so such
/// families keep growing as one cluster.
pub const COMMON_HEAD: usize = 8;

/// Over-cap values remembered (with their heads).
const OVER_CAP_LIMIT: usize = 1 << 18;

/// Hasher for keys that are already well-mixed 64-bit values (sketch values) or small
/// integers (doc ids): one multiply instead of SipHash, which the writer felt.
#[derive(Default)]
pub struct U64Hasher(u64);

impl Hasher for U64Hasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = hash_u64(v);
    }
}

/// [`U64Hasher`]'s hash of a u64 key (where its slot in a [`U64Map`] is).
#[inline]
pub(crate) fn hash_u64(v: u64) -> u64 {
    (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A map keyed by u64 with [`U64Hasher`].
pub type U64Map<V> = HashMap<u64, V, BuildHasherDefault<U64Hasher>>;

/// The values of a sketch that go into postings: those ≡ 0 mod 2^ℓ for the smallest
/// ℓ ≥ the sketch's level that leaves fewer than 2P of them, as their posting keys
/// ([`posting_key`]), ascending and distinct.
pub fn posting_values(s: &Sketch, posting_target: u32) -> (u8, Vec<u64>) {
    let level = posting_level(s, posting_target);
    (level, crate::sketch::posting_keys(s.at_level(level)))
}

/// The level of [`posting_values`] alone (what [`StoredSketch::new`] needs).
///
/// [`StoredSketch::new`]: crate::index::columns::sketches::StoredSketch::new
pub fn posting_level(s: &Sketch, posting_target: u32) -> u8 {
    let mut level = s.level;
    loop {
        let n = s.at_level(level).count();
        // Reduced values tell trailing zeros apart up to MAX_TZ: no level beyond.
        if (n as u64) < 2 * posting_target as u64 || level as u32 >= MAX_TZ {
            return level;
        }
        level += 1;
    }
}

/// A stored list as a lookup saw it.
#[derive(Debug, Clone, Copy)]
pub enum Stored<'a> {
    /// No stored entries.
    Absent,
    /// The entries (at most the cap).
    List(&'a [u8]),
    /// Over the cap: only the first docs.
    Over(&'a [u64]),
}

/// Where a value's list is in a [`Lookup`]'s buffers.
#[derive(Debug, Clone, Copy)]
enum Found {
    Absent,
    List(usize, usize),
    Over(usize, usize),
}

/// Stored lists of some values, and the mark they were read under.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// First doc id not in the stored lists.
    pub mark: u64,
    /// One per value, in the order asked.
    found: Vec<Found>,
    /// The lists' entries, one after another.
    entries: Vec<u8>,
    /// The over-cap lists' heads, one after another.
    heads: Vec<u64>,
}

impl Lookup {
    /// The lists, one per value, in the order asked.
    pub fn lists(&self) -> impl Iterator<Item = Stored<'_>> + '_ {
        self.found.iter().map(|f| match *f {
            Found::Absent => Stored::Absent,
            Found::List(a, b) => Stored::List(&self.entries[a..b]),
            Found::Over(a, b) => Stored::Over(&self.heads[a..b]),
        })
    }
}

/// Values whose stored lists are over the cap, with their heads. Lists only grow and
/// keep their first entries, so what is over the cap once stays so, with the same head:
/// shared by all threads without changing any answer.
#[derive(Default)]
pub struct OverCap(RwLock<U64Map<Vec<u64>>>);

impl OverCap {
    fn insert(&self, v: u64, head: Vec<u64>) {
        if let Ok(mut m) = self.0.write() {
            if m.len() < OVER_CAP_LIMIT {
                m.insert(v, head);
            }
        }
    }
}

/// Reads the stored lists of `values` (sorted ascending) and the mark, from one state
/// of the stored runs.
pub fn lookup(index: &Index, values: &[u64], over: &OverCap) -> Result<Lookup> {
    let store = index.postings_store()?;
    let cap = index.params().common_shingle_cap as usize;
    let runs = store.runs();
    // A lookup misses the cache twice in each run, at its table slot and at its records:
    // the slots are asked for 16 values ahead, the records (found through the slot,
    // loaded by then) 8 ahead.
    const AHEAD: usize = 8;
    // All lists in one buffer, all heads in another (not a vector for each value
    // found). The over-cap values known are read under one lock for the whole call (a
    // lock a value had the two cores pass its cache line to and fro); those found now
    // are shared when it ends.
    let mut out = Lookup {
        mark: store.mark(),
        found: Vec::with_capacity(values.len()),
        entries: Vec::new(),
        heads: Vec::new(),
    };
    let mut found_over: Vec<(u64, Vec<u64>)> = Vec::new();
    {
        let known = over.0.read().ok();
        for (i, v) in values.iter().enumerate() {
            if let Some(next) = values.get(i + 2 * AHEAD) {
                for r in runs {
                    r.prefetch(*next);
                }
            }
            if let Some(next) = values.get(i + AHEAD) {
                for r in runs {
                    r.prefetch_records(*next);
                }
            }
            if let Some(head) = known.as_ref().and_then(|m| m.get(v)) {
                let at = out.heads.len();
                out.heads.extend_from_slice(head);
                out.found.push(Found::Over(at, out.heads.len()));
                continue;
            }
            // Up to cap + 1 entries: enough to know the list is over the cap.
            let at = out.entries.len();
            let mut n = 0;
            for r in runs {
                if n > cap {
                    break;
                }
                n += r.entries_of(*v, &mut out.entries, cap + 1 - n);
            }
            out.found.push(if n > cap {
                let head = heads_of(&out.entries[at..]);
                out.entries.truncate(at);
                let h = out.heads.len();
                out.heads.extend_from_slice(&head);
                found_over.push((*v, head));
                Found::Over(h, out.heads.len())
            } else if n == 0 {
                Found::Absent
            } else {
                Found::List(at, out.entries.len())
            });
        }
    }
    for (v, head) in found_over {
        over.insert(v, head);
    }
    Ok(out)
}

/// The stored list of `value` as far as it is kept (its first cap + 1 entries, by doc),
/// appended to `out`; whether more may have been dropped (it holds cap + 1).
pub fn kept_list(index: &Index, value: u64, out: &mut Vec<u8>) -> Result<bool> {
    let store = index.postings_store()?;
    let cap = index.params().common_shingle_cap as usize;
    let mut n = 0;
    for r in store.runs() {
        if n > cap {
            break;
        }
        n += r.entries_of(value, out, cap + 1 - n);
    }
    Ok(n > cap)
}

fn heads_of(list: &[u8]) -> Vec<u64> {
    list.chunks_exact(ENTRY)
        .take(COMMON_HEAD)
        .map(entry_doc)
        .collect()
}

/// Asks the CPU to start loading the cache line at `p` (a hint; nothing elsewhere).
#[inline]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
