//! A new doc: its id, facts, sketch and text; its candidates (the one search of
//! [`crate::index::candidates`]), estimates, edges and unions; its postings.

use super::{candidates, unionfind, Capture, Counters, DocSketch, Prepared, Result, Writer};
use crate::index::codec::{DocInfo, EdgeInfo};
use crate::index::columns::docs::Docs;
use crate::index::columns::edges::Edges;
use crate::index::columns::postings::MAX_DOCS;
use crate::index::columns::sketches::Sketches;
use crate::index::columns::texts::Texts;
use crate::index::columns::{Batch, Column};
use crate::index::IndexError;
use crate::sketch::{posting_key_tz, within_reach};

/// Standard deviations of the candidate prefilters ([`within_reach`]): on posting
/// counts before a sketch is read, and on the coarse part of the sketches before the
/// whole is compared. 2.5 lost 5% of the edges of the llvm-docs corpus; 3 loses none
/// measurable there or on the generated sweeps.
const PREFILTER_SIGMAS: f64 = 3.0;

impl Writer<'_> {
    /// A new doc: id, facts, sketch, candidates, edges, unions, postings.
    pub(super) fn new_doc(
        &mut self,
        batch: &mut Batch,
        sketch: DocSketch,
        cap: &Capture,
        ts: &str,
        prepared: Option<Prepared>,
    ) -> Result<u64> {
        use super::lap;
        let counters = self.index.counters();
        let d = counters.next_doc;
        if d >= MAX_DOCS {
            return Err(IndexError::Invalid(format!(
                "the index holds {MAX_DOCS} docs, the most its postings can name; ingest into a new --db"
            )));
        }
        self.index.set_counters(Counters {
            next_doc: d + 1,
            ..counters
        });
        self.index
            .meta()
            .put_counters(batch, &self.index.counters());
        let stored = sketch.stored(self.index.params().posting_target);
        let info = DocInfo {
            shingles: stored.shingles,
            tokens: cap.tokens,
            bytes: cap.payload_len,
            created: ts.to_string(),
            title: cap.title.clone(),
        };
        batch.put::<Docs>(self.index, &d, &info);
        let mut prepared = prepared;
        if let Some(text) = prepared.as_mut().and_then(|p| p.text.take()) {
            batch.put_raw::<Texts>(self.index, &Texts::key(&d), &text);
        }
        self.sweep.counts.new_docs += 1;
        if stored.low.is_empty() && stored.posting.is_empty() {
            batch.put::<Sketches>(self.index, &d, &stored);
            return Ok(d);
        }
        let posting = (stored.posting_level, stored.posting.clone());
        let p = self.index.params().clone();
        let threshold = self.index.counters().threshold;
        lap(&mut self.clock, &mut self.summary.writer.captures_s);
        // Candidates: docs sharing posting values, counted. The stored lists come from
        // the worker's lookup when it saw the current mark, else are read now; the fresh
        // entries complete them.
        let found = candidates::search(
            self.index,
            &self.fresh,
            self.over_cap,
            posting,
            prepared.and_then(|p| p.lookup),
        )?;
        let (plevel, pvals) = (found.level, &found.values);
        // My posting values at each coarser level.
        let mut at_level = [0u32; 65];
        for v in pvals {
            let tz = posting_key_tz(*v) as usize;
            for slot in at_level.iter_mut().take(tz + 1).skip(plevel as usize) {
                *slot += 1;
            }
        }
        let mut targets = Vec::new();
        // Posting values are a uniform sample of both sketches at the coarser posting
        // level, so the shared count already estimates resemblance and containments.
        // A candidate is read and compared only when one of those could still reach the
        // edge floor: within 3 standard deviations of it (a pair at the clustering
        // threshold is never dropped; only pairs far under the floor are). Measured on
        // 20k pages x 2 sweeps: the same edges and unions as 4 sigma, 45% fewer reads.
        let floor = p.edge_floor;
        let reachable = |est: f64, m: f64| within_reach(est, m, floor, PREFILTER_SIGMAS);
        // Mostly over-cap content: also the heads of those lists (see COMMON_HEAD).
        let passing = found.to_compare(|c| {
            let level = plevel.max(c.level).min(64);
            let mine = at_level[level as usize] as f64;
            let theirs = c.values as f64 / f64::powi(2.0, (level - c.level) as i32);
            let n = c.count as f64;
            let union = (mine + theirs - n).max(n);
            reachable(n / union, union)
                || reachable(n / theirs.max(n), theirs)
                || reachable(n / mine.max(n), mine)
        });
        let times = &mut self.summary.writer;
        times.candidates += (found.shared.len() + found.heads.len()) as u64;
        times.sketches_read += passing.len() as u64;
        lap(&mut self.clock, &mut times.candidates_s);
        let mut compact = stored.compact();
        let (estimates, base) = self.index.sketches().estimates_and_base(
            &passing,
            &compact,
            Some(&mut self.sketch_cache),
            Some((floor, PREFILTER_SIGMAS)),
        )?;
        // Stored against the older doc it shares most values with, if it shares enough.
        let against = base.and_then(|(b, read)| {
            let base = read.as_ref().or_else(|| self.sketch_cache.get(b))?;
            stored.against(&compact, (b, base))
        });
        match against {
            Some(against) => {
                batch.put::<Sketches>(self.index, &d, &against);
                compact.against = true;
            }
            None => batch.put::<Sketches>(self.index, &d, &stored),
        }
        // Later docs of its host are compared with it first.
        self.sketch_cache.insert(d, compact);
        self.summary.writer.settled_coarse += (passing.len() - estimates.len()) as u64;
        lap(&mut self.clock, &mut self.summary.writer.estimate_s);
        // The doc's edges to older docs, in doc order: one value.
        let mut edges = Vec::new();
        for (b, e) in estimates {
            let (r, c_b_in_d, c_d_in_b) =
                (e.resemblance, e.containment_a_in_b, e.containment_b_in_a);
            if r >= p.edge_floor || c_b_in_d >= p.edge_floor || c_d_in_b >= p.edge_floor {
                let edge = EdgeInfo {
                    resemblance: r as f32,
                    contain_lo_in_hi: c_b_in_d as f32,
                    contain_hi_in_lo: c_d_in_b as f32,
                };
                edges.push((b, edge));
                if r >= threshold {
                    targets.push(b);
                }
            }
        }
        self.sweep.counts.edges += edges.len() as u64;
        let kept = self.forest.keep(self.index, d, &edges, floor)?;
        if !kept.is_empty() {
            self.summary.writer.edges_stored += kept.len() as u64;
            batch.put::<Edges>(self.index, &d, &kept);
        }
        let unions = unionfind::join(self.index, batch, d, &targets)?;
        self.sweep.counts.unions += unions;
        // Values whose lists are over the cap take no more entries (the merge would drop
        // them anyway): same index, less to store.
        self.fresh.add(
            d,
            plevel,
            pvals.len(),
            pvals
                .iter()
                .zip(&found.over)
                .zip(&found.lookup.lists)
                .filter(|((_, o), _)| !**o)
                .map(|((v, _), st)| (*v, Some(st))),
        );
        lap(&mut self.clock, &mut self.summary.writer.edges_unions_s);
        Ok(d)
    }
}
