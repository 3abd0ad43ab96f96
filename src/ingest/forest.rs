//! Which of a new doc's edges the index stores: those a maximum spanning forest by
//! resemblance may need, not every pair of a template family.
//!
//! `recluster --threshold T` (T ≥ the edge floor) takes the connected components of the
//! edges of resemblance ≥ T. A maximum spanning forest of all pairs at the floor has
//! exactly those components at every such T, and so has any set of stored edges `S`
//! between the forest and all pairs. A new doc `d` keeps that true if it stores an edge
//! to `b` whenever `d` and `b` are not already joined through stored edges and `d`'s
//! other edges, each at least as heavy. The writer checks it on the small graph it
//! knows: `d`, its candidates at the floor, and the stored edges among those candidates,
//! by Kruskal's rule (heaviest first, stored before new on ties). An edge it drops
//! therefore has a path of stored edges at least as heavy between its ends, and every
//! threshold's components stay those of all pairs. Paths through other docs are not
//! looked for: `S` may keep more than the forest, never less.
//!
//! A template family of n near-identical pages made n²/2 stored edges (llvm-docs: 51
//! per doc, 809 bytes per doc of the index); a forest keeps about one per page and a
//! few more where weights cross.

use super::Result;
use crate::index::codec::EdgeInfo;
use crate::index::postings::U64Map;
use crate::index::Index;

/// Whether the edges of stored weight `w` are joined in the clusters at `threshold` for
/// certain: `w` is above it by more than an f32's rounding of the resemblance, so they
/// were joined however they were compared (as f64 when made, as the stored f32 by
/// `recluster`). An edge [`Forest::keep`] drops has a path of kept and stored edges
/// each at least as heavy between its ends: when its own weight passes this, so does
/// every edge of the path, and its older doc is already in the cluster of one of the
/// doc's kept edges. Near the threshold the union-find finds it as before.
pub fn joined_at(w: f32, threshold: f64) -> bool {
    // f32 rounds a resemblance in [0, 1] by at most 2⁻²⁵ (~3e-8).
    w as f64 > threshold + 1e-6
}

/// Docs whose stored neighbours the writer keeps before it starts over (about 60 bytes
/// each: 64 MB at most, and one batch's more).
const KEPT_DOCS: usize = 1 << 20;

/// The stored edges of docs the writer met lately: doc → (older doc, resemblance).
#[derive(Default)]
pub struct Forest {
    stored: U64Map<Vec<(u64, f32)>>,
    /// Edge lists read from RocksDB (docs of earlier runs, or forgotten).
    pub reads: u64,
}

impl Forest {
    /// Of `found` (the new doc `d`'s edges to older docs, ascending by doc), the ones to
    /// store: resemblance at the floor, needed by the forest rule (module docs).
    pub fn keep(
        &mut self,
        index: &Index,
        d: u64,
        found: &[(u64, EdgeInfo)],
        floor: f64,
    ) -> Result<Vec<(u64, EdgeInfo)>> {
        // As `recluster` compares them: the stored f32.
        // The oldest candidate's list is not read, and the union-find finds a new doc's
        // cluster through the kept edges looked up by doc: both need this order.
        if !found.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err(crate::index::IndexError::Invalid(format!(
                "the estimates of doc {d} are not in doc order"
            )));
        }
        let at_floor: Vec<(u64, EdgeInfo)> = found
            .iter()
            .filter(|(_, e)| e.resemblance as f64 >= floor)
            .copied()
            .collect();
        let kept = if at_floor.len() <= 1 {
            at_floor
        } else {
            self.kruskal(index, &at_floor)?
        };
        self.remember(d, kept.iter().map(|(b, e)| (*b, e.resemblance)).collect());
        Ok(kept)
    }

    /// Kruskal's rule on `d` (vertex 0), its candidates (vertex i + 1 for `cands[i]`)
    /// and the stored edges among the candidates.
    fn kruskal(
        &mut self,
        index: &Index,
        cands: &[(u64, EdgeInfo)],
    ) -> Result<Vec<(u64, EdgeInfo)>> {
        // (weight, stored?, vertex, vertex): new edges leave from vertex 0.
        let mut local: Vec<(f32, bool, u32, u32)> = Vec::with_capacity(2 * cands.len());
        for (i, (b, e)) in cands.iter().enumerate() {
            local.push((e.resemblance, false, 0, i as u32 + 1));
            // A stored list names older docs only: the oldest candidate's names none of
            // the others (a steady sweep's edited page has a few at-floor candidates,
            // its earlier versions: a third of the lists read were these).
            if i == 0 {
                continue;
            }
            for (x, w) in self.stored_of(index, *b)? {
                if let Ok(j) = cands.binary_search_by_key(x, |(c, _)| *c) {
                    local.push((*w, true, j as u32 + 1, i as u32 + 1));
                }
            }
        }
        // Heaviest first; on equal weights stored edges first (a new edge is kept only
        // when nothing as heavy joins its ends); then by vertices: one order for all runs.
        local.sort_unstable_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(b.1.cmp(&a.1))
                .then((a.2, a.3).cmp(&(b.2, b.3)))
        });
        let mut parent: Vec<u32> = (0..=cands.len() as u32).collect();
        fn root(parent: &mut [u32], mut x: u32) -> u32 {
            while parent[x as usize] != x {
                let up = parent[parent[x as usize] as usize];
                parent[x as usize] = up;
                x = up;
            }
            x
        }
        let mut keep = vec![false; cands.len()];
        for (_, stored, a, b) in local {
            let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb) as usize] = ra.min(rb);
                if !stored {
                    keep[b as usize - 1] = true;
                }
            }
        }
        Ok(cands
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(c, _)| *c)
            .collect())
    }

    /// The stored edges of `doc` to older docs (none: empty).
    fn stored_of(&mut self, index: &Index, doc: u64) -> Result<&[(u64, f32)]> {
        if !self.stored.contains_key(&doc) {
            self.reads += 1;
            let list = index
                .edges()
                .get(&doc)?
                .unwrap_or_default()
                .into_iter()
                .map(|(x, e)| (x, e.resemblance))
                .collect();
            self.remember(doc, list);
        }
        Ok(&self.stored[&doc])
    }

    /// Keeps `doc`'s stored edges (until [`Forest::trim`]).
    fn remember(&mut self, doc: u64, list: Vec<(u64, f32)>) {
        self.stored.insert(doc, list);
    }

    /// Whether it should start over ([`Forest::trim`]).
    pub fn full(&self) -> bool {
        self.stored.len() >= KEPT_DOCS
    }

    /// Starts over (a read again gives the same list: only the speed depends on it).
    /// Only when every list it keeps is written: the lists of docs of a batch not
    /// written yet are read from here.
    pub fn trim(&mut self) {
        self.stored.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_is_joined_for_certain_only_above_the_threshold_by_more_than_rounding() {
        // 0.7 is not an f32: its f32 is below the f64 threshold, and a resemblance of
        // exactly 7/10 may have been joined (as f64 at ingest) or not (as f32 by
        // `recluster`): the union-find must find it.
        assert!(!joined_at(0.7f64 as f32, 0.7));
        assert!(!joined_at(0.5, 0.5));
        assert!(!joined_at((0.5 + 5e-7) as f32, 0.5));
        assert!(joined_at((0.5 + 2e-6) as f32, 0.5));
        assert!(joined_at(1.0, 0.9));
        assert!(!joined_at(0.4, 0.5));
    }
}
