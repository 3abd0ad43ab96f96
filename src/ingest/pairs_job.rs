//! The pair step of a sweep on a cluster (`tools/spark/pairs_job.py`), in three kinds of
//! task the shipped binary runs, and the check `ingest --pairs` makes of their files.
//!
//! 1. `pairs prepare` (the driver, once): a RocksDB checkpoint of the index (hard links
//!    to its immutable files) in `OUT/index`, the sweep's first stage committed into it
//!    (its records, its new docs waiting for their pairs: [`super::PairsFrom::Later`]),
//!    and `OUT/plan.json`: what the pairs depend on (the parameters, the sweeps before,
//!    the waiting docs and a digest of their sketches), the key ranges and doc ranges.
//! 2. `pairs keys` (one task per doc range): its waiting docs' posting keys, one file
//!    per key range (`OUT/keys/`): the shuffle by key, so that no task reads every doc.
//! 3. `pairs join` (one task per key range): the join of the waiting docs' posting keys
//!    in its range with the stored lists ([`super::pairs::join_range`]), its shares
//!    written per range of docs (`OUT/shares/`).
//! 4. `pairs estimate` (one task per doc range): its docs' shares from every key range,
//!    the counts, candidates and estimates ([`super::pairs::estimate`]), written as
//!    `OUT/pairs/`.
//!
//! Then `ingest --pairs OUT` commits the sweep as a local ingest would, taking each
//! batch's pairs from the files instead of finding them: the same index, since the
//! pair step is a pure function of the index as of the sweep's start and the sweep's
//! new docs, and its result depends on no partitioning. A plan for another index state
//! (other parameters, other sweeps before, other inputs, other waiting docs) is refused
//! before its pairs are used.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::pair_files::{self, DocKeys, Shares, Stamp};
use super::pairs::{self, Joined, NewDoc, Unsettled, View};
use super::{IngestOptions, PairsFrom, Progress, RecordSource, Shards};
use crate::compact::CompactSketch;
use crate::config::{Config, Resemblance};
use crate::index::columns::sketches::StoredSketch;
use crate::index::postings::{Fresh, OverCap};
use crate::index::sketch_cache::SketchCache;
use crate::index::{Index, IndexError, IndexParams, Result};
use crate::template::TemplateSet;

/// The layout of `plan.json`.
pub const PLAN_FORMAT: u32 = 1;

/// What a pairs job computes the pairs of, and what they depend on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_FORMAT`].
    pub format: u32,
    /// A digest of everything below: each file of the job names it.
    pub id: String,
    /// The index's parameters.
    pub params: IndexParams,
    /// The sweeps before this one (id, label).
    pub sweeps_before: Vec<(u32, String)>,
    /// The sweep's id and the label the job committed its first stage under.
    pub sweep_id: u32,
    /// See `sweep_id`.
    pub sweep: String,
    /// The waiting docs: [first, end).
    pub first: u64,
    /// See `first`.
    pub end: u64,
    /// A digest of the waiting docs' URLs and sketches as the first stage stored them.
    pub waiting_digest: String,
    /// The inputs (WARC files or their shards: one identity), by identity (hex) and name.
    pub inputs: Vec<(String, String)>,
    /// Key ranges of the join (its tasks).
    pub parts: usize,
    /// Doc ranges of the estimates (their tasks): [from, to).
    pub ranges: Vec<(u64, u64)>,
    /// With edges on content: each host's template id for the sweep's new docs.
    pub templates: Option<Vec<(String, u32)>>,
}

impl Plan {
    /// The plan's file in a job's folder.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("plan.json")
    }

    /// The checkpoint the tasks read.
    pub fn index_path(dir: &Path) -> PathBuf {
        dir.join("index")
    }

    fn with_id(mut self) -> Plan {
        self.id = String::new();
        let body = serde_json::to_vec(&self).unwrap_or_default();
        self.id = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&body));
        self
    }

    /// Reads `DIR/plan.json`, refusing a damaged or altered one by name.
    pub fn load(dir: &Path) -> Result<Plan> {
        let path = Plan::path(dir);
        let bad = |m: String| IndexError::Invalid(format!("{}: {m}", path.display()));
        let text = std::fs::read(&path).map_err(|e| {
            bad(format!(
                "cannot read ({e}): not the --out folder of a pairs job, or its prepare step did not finish"
            ))
        })?;
        let plan: Plan =
            serde_json::from_slice(&text).map_err(|e| bad(format!("not a pairs plan: {e}")))?;
        if plan.format != PLAN_FORMAT {
            return Err(bad(format!(
                "plan format {}; this tidemark reads {PLAN_FORMAT}: run the pairs job again with it",
                plan.format
            )));
        }
        if plan.clone().with_id().id != plan.id {
            return Err(bad(
                "its digest does not match its contents (edited or damaged)".into(),
            ));
        }
        Ok(plan)
    }

    /// Doc range `j`.
    fn range(&self, j: usize) -> Result<(u64, u64)> {
        self.ranges.get(j).copied().ok_or_else(|| {
            IndexError::Invalid(format!(
                "--part {j}: plan {} has {} doc ranges",
                self.id,
                self.ranges.len()
            ))
        })
    }

    fn stamp(&self, kind: &'static str, part: usize, docs: (u64, u64)) -> Stamp {
        Stamp {
            plan: self.id.clone(),
            kind,
            part,
            docs,
        }
    }

    fn settings(&self, threads: usize) -> pairs::Settings {
        pairs::Settings {
            threads: threads.max(1),
            partitions: 1,
            cap: self.params.common_shingle_cap as usize,
            floor: self.params.edge_floor,
        }
    }

    /// Refuses an index whose state before the sweep is not the plan's: other
    /// parameters, other sweeps before, or (the sweep not begun) another next doc; and
    /// inputs that are not the plan's. Called before an ingest writes anything.
    pub fn check_before(
        &self,
        index: &Index,
        sweep_id: u32,
        begun: bool,
        inputs: &[(String, [u8; 16])],
    ) -> Result<()> {
        let refuse = |m: String| {
            IndexError::Invalid(format!(
                "--pairs: the pairs of plan {} were made for another index state: {m}",
                self.id
            ))
        };
        if index.params() != &self.params {
            return Err(refuse(format!(
                "its parameters are {:?}, this index's {:?}",
                self.params,
                index.params()
            )));
        }
        let before: Vec<(u32, String)> = index
            .sweeps()
            .all(&crate::access::Reader::everything())?
            .into_iter()
            .filter(|(id, _)| *id < sweep_id)
            .map(|(id, s)| (id, s.label))
            .collect();
        if before != self.sweeps_before || sweep_id != self.sweep_id {
            let labels = |v: &[(u32, String)]| {
                v.iter()
                    .map(|(_, l)| l.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(refuse(format!(
                "it follows the sweeps [{}], this sweep follows [{}]",
                labels(&self.sweeps_before),
                labels(&before)
            )));
        }
        if !begun && index.counters().next_doc != self.first {
            return Err(refuse(format!(
                "its sweep's first new doc is {}, this index's next doc is {}",
                self.first,
                index.counters().next_doc
            )));
        }
        let hex = |id: &[u8; 16]| data_encoding::HEXLOWER.encode(id);
        for (name, id) in inputs {
            if !self.inputs.iter().any(|(i, _)| *i == hex(id)) {
                return Err(IndexError::Invalid(format!(
                    "--pairs: {name} is not one of the inputs plan {} was made from (its pairs are not in it)",
                    self.id
                )));
            }
        }
        for (i, n) in &self.inputs {
            if !inputs.iter().any(|(_, id)| hex(id) == *i) {
                return Err(IndexError::Invalid(format!(
                    "--pairs: plan {} was made from {n} too; give it with the other inputs",
                    self.id
                )));
            }
        }
        Ok(())
    }

    /// Refuses waiting docs other than the plan's ([`waiting_digest`]): checked when the
    /// sweep's pairs begin (`next_pair`: the first doc still waiting).
    pub fn check_waiting(&self, index: &Index, next_pair: u64, end: u64) -> Result<()> {
        let refuse = |m: String| {
            IndexError::Invalid(format!(
                "--pairs: plan {} was made for other waiting docs: {m}",
                self.id
            ))
        };
        if end != self.end || next_pair < self.first || next_pair > self.end {
            return Err(refuse(format!(
                "docs {}..{} wait in the plan, {next_pair}..{end} in this index",
                self.first, self.end
            )));
        }
        // Whole only before any was paired (a resumed run's earlier run checked it).
        if next_pair == self.first {
            let digest = waiting_digest(index, self.first, self.end)?;
            if digest != self.waiting_digest {
                return Err(refuse(format!(
                    "their sketches differ (digest {digest}, the plan's {})",
                    self.waiting_digest
                )));
            }
        }
        Ok(())
    }

    fn for_pairs(&self) -> Option<super::FastMap<String, u32>> {
        self.templates.as_ref().map(|t| t.iter().cloned().collect())
    }
}

/// A digest of docs `first..end`'s `unpaired` entries and stored sketches.
fn waiting_digest(index: &Index, first: u64, end: u64) -> Result<String> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut from = first;
    while from < end {
        let waiting = index.unpaired().from(from, 4096)?;
        let waiting: Vec<_> = waiting.into_iter().filter(|(d, _)| *d < end).collect();
        let Some(last) = waiting.last().map(|(d, _)| *d) else {
            break;
        };
        for (d, w) in &waiting {
            h.update(&d.to_be_bytes());
            h.update(&w.sweep.to_be_bytes());
            h.update(w.url.as_bytes());
            h.update(&[0]);
        }
        for (d, v) in index.sketches().raw_range(from, last + 1)? {
            h.update(&d.to_be_bytes());
            h.update(&(v.len() as u64).to_be_bytes());
            h.update(&v);
        }
        from = last + 1;
    }
    Ok(format!("{:016x}", h.digest()))
}

/// What `pairs prepare` is asked.
pub struct PrepareOptions {
    /// The job's folder (created; must not hold a plan).
    pub out: PathBuf,
    /// The sweep's label in the checkpoint (when the index has no waiting sweep).
    pub sweep: String,
    /// Key ranges of the join.
    pub parts: usize,
    /// Doc ranges of the estimates.
    pub ranges: usize,
}

/// `pairs prepare`: the checkpoint, the first stage of `shards` in it, the plan.
pub fn prepare(
    db: &Path,
    config: &Config,
    shards: &[PathBuf],
    ingest: &IngestOptions,
    p: &PrepareOptions,
    progress: impl FnMut(Progress),
) -> Result<Plan> {
    if Plan::path(&p.out).exists() || Plan::index_path(&p.out).exists() {
        return Err(IndexError::Invalid(format!(
            "{}: holds a pairs job already; give an empty or new --out",
            p.out.display()
        )));
    }
    std::fs::create_dir_all(&p.out)
        .map_err(|e| IndexError::Invalid(format!("{}: cannot create: {e}", p.out.display())))?;
    {
        let index = Index::open(db, config, false)?;
        index.checkpoint(&Plan::index_path(&p.out))?;
    }
    let index = Index::open(&Plan::index_path(&p.out), config, false)?;
    // A sweep the index already holds the first stage of (`ingest --pairs-later`) is
    // the one paired.
    let label = match index.unpaired().first()? {
        Some((_, s)) => index
            .sweeps()
            .all(&crate::access::Reader::everything())?
            .into_iter()
            .find(|(id, _)| *id == s)
            .map(|(_, i)| i.label)
            .unwrap_or_else(|| p.sweep.clone()),
        None => p.sweep.clone(),
    };
    let opts = IngestOptions {
        sweep: label.clone(),
        pairs: PairsFrom::Later,
        ..ingest.clone()
    };
    let summary = super::ingest_shards(&index, shards, &opts, progress)?;
    let sweeps = index.sweeps().all(&crate::access::Reader::everything())?;
    let sweep_id = sweeps
        .iter()
        .find(|(_, s)| s.label == label)
        .map(|(id, _)| *id)
        .ok_or_else(|| {
            IndexError::Invalid(format!(
                "nothing to pair: the inputs are ingested already ({})",
                summary.already_ingested.join(", ")
            ))
        })?;
    let end = index.counters().next_doc;
    let first = match index.unpaired().first()? {
        Some((d, _)) => d,
        None => end,
    };
    let inputs = Shards(shards)
        .plan(&index, &opts)?
        .into_iter()
        .map(|i| (data_encoding::HEXLOWER.encode(&i.id), i.name))
        .collect();
    // With edges on content: the sweep's templates, learned as the ingest's second
    // stage will (written into the checkpoint, as it will write them).
    let templates = match index.params().resemblance {
        Resemblance::Full => None,
        Resemblance::Content => {
            let (_, for_pairs) =
                super::templates::for_waiting(&index, sweep_id, &ingest.template, ingest.threads)?;
            let by_host = for_pairs.by_host;
            let mut v: Vec<(String, u32)> = by_host.into_iter().collect();
            v.sort();
            Some(v)
        }
    };
    index.flush()?;
    let n = end - first;
    let k = p.ranges.max(1) as u64;
    let ranges: Vec<(u64, u64)> = (0..k)
        .map(|j| (first + n * j / k, first + n * (j + 1) / k))
        .filter(|(a, b)| a < b)
        .collect();
    let plan = Plan {
        format: PLAN_FORMAT,
        id: String::new(),
        params: index.params().clone(),
        sweeps_before: sweeps
            .iter()
            .filter(|(id, _)| *id < sweep_id)
            .map(|(id, s)| (*id, s.label.clone()))
            .collect(),
        sweep_id,
        sweep: label,
        first,
        end,
        waiting_digest: waiting_digest(&index, first, end)?,
        inputs,
        parts: p.parts.max(1),
        ranges,
        templates,
    }
    .with_id();
    let path = Plan::path(&p.out);
    let body = serde_json::to_vec_pretty(&plan).unwrap_or_default();
    crate::durable::write_atomic(&path, &body)
        .map_err(|e| IndexError::Invalid(format!("{}: cannot write: {e}", path.display())))?;
    Ok(plan)
}

/// The waiting docs `from..to` of the plan's checkpoint, with their templates.
struct Docs {
    stored: Vec<StoredSketch>,
    compact: Vec<CompactSketch>,
}

impl Docs {
    fn read(index: &Index, plan: &Plan, (from, to): (u64, u64), threads: usize) -> Result<Docs> {
        let by_host = plan.for_pairs();
        let mut stored = Vec::with_capacity((to - from) as usize);
        let mut compact = Vec::with_capacity((to - from) as usize);
        let mut at = from;
        while at < to {
            let batch = pairs::read_waiting_docs(index, at, to, threads)?;
            if batch.is_empty() {
                return Err(IndexError::Invalid(format!(
                    "doc {at} of the plan does not wait for its pairs in {}",
                    index.path().display()
                )));
            }
            at += batch.len() as u64;
            for (_, _, mut s, url) in batch {
                s.template = template_of(&by_host, &url);
                compact.push(s.compact());
                stored.push(s);
            }
        }
        Ok(Docs { stored, compact })
    }

    fn new_docs(&self) -> Vec<NewDoc<'_>> {
        self.stored
            .iter()
            .zip(&self.compact)
            .map(|(s, c)| NewDoc {
                level: s.posting_level,
                values: &s.posting,
                compact: c,
                stored: s,
            })
            .collect()
    }
}

fn template_of(by_host: &Option<super::FastMap<String, u32>>, url: &str) -> u32 {
    let Some(m) = by_host else { return 0 };
    let surt = crate::url::surt(url);
    m.get(crate::url::host_of_surt(&surt)).copied().unwrap_or(0)
}

/// What a task opened: the plan, the checkpoint, its templates.
struct Task {
    plan: Plan,
    index: Index,
    set: Option<TemplateSet>,
}

/// What a join or estimate task's pair step reads beside the checkpoint: the postings
/// buffer as the checkpoint leaves it (up to the sweep's first doc), the over-cap values
/// it finds, and no sketch cache.
struct TaskState {
    fresh: Fresh,
    over_cap: OverCap,
    cache: SketchCache,
}

impl TaskState {
    /// The pair step's view of the checkpoint.
    fn view<'a>(&'a self, t: &'a Task, unsettled: Option<Unsettled<'a>>) -> View<'a> {
        fn readable(_: u64) -> Result<()> {
            Ok(())
        }
        View {
            index: &t.index,
            fresh: &self.fresh,
            over_cap: &self.over_cap,
            cache: &self.cache,
            readable: &readable,
            templates: t.set.as_ref(),
            unsettled,
        }
    }
}

impl Task {
    fn state(&self) -> Result<TaskState> {
        Ok(TaskState {
            fresh: Fresh::load(&self.index, Some(self.plan.first))?,
            over_cap: OverCap::default(),
            cache: SketchCache::new(0),
        })
    }

    fn open(dir: &Path, config: &Config) -> Result<Task> {
        let plan = Plan::load(dir)?;
        let index = Index::open_read_only(&Plan::index_path(dir), config)?;
        if index.params() != &plan.params {
            return Err(IndexError::Invalid(format!(
                "{}: made with parameters {:?}; this configuration's are {:?}",
                Plan::path(dir).display(),
                plan.params,
                index.params()
            )));
        }
        let set = match plan.templates {
            Some(_) => Some(index.template_values().all()?),
            None => None,
        };
        Ok(Task { plan, index, set })
    }
}

/// What a task did, for the job's report.
#[derive(Debug, Serialize)]
pub struct TaskSummary {
    /// "join" or "estimate".
    pub task: &'static str,
    /// Its key range or doc range.
    pub part: usize,
    /// Docs it read.
    pub docs: u64,
    /// Rows it wrote.
    pub rows: u64,
    /// Seconds.
    pub seconds: f64,
}

/// Runs task `task` of part `part`: `work` returns the docs it read and the rows it
/// wrote.
fn timed(
    task: &'static str,
    part: usize,
    work: impl FnOnce() -> Result<(u64, u64)>,
) -> Result<TaskSummary> {
    let clock = std::time::Instant::now();
    let (docs, rows) = work()?;
    Ok(TaskSummary {
        task,
        part,
        docs,
        rows,
        seconds: clock.elapsed().as_secs_f64(),
    })
}

/// `pairs keys --part j`: the posting keys of doc range `j`'s waiting docs, one file per
/// key range (a shuffle by key: each join task then reads only its keys).
pub fn keys(dir: &Path, config: &Config, range: usize, threads: usize) -> Result<TaskSummary> {
    timed("keys", range, || keys_task(dir, config, range, threads))
}

fn keys_task(dir: &Path, config: &Config, range: usize, threads: usize) -> Result<(u64, u64)> {
    let t = Task::open(dir, config)?;
    let plan = &t.plan;
    let (a, b) = plan.range(range)?;
    let docs = Docs::read(&t.index, plan, (a, b), threads)?;
    let new = docs.new_docs();
    let (tmpl, entry_counts) = pairs::doc_templates(t.set.as_ref(), &new);
    drop(tmpl);
    let mut rows = 0;
    for k in 0..plan.parts {
        let mine: Vec<DocKeys> = (new.iter().zip(&docs.compact).zip(&entry_counts))
            .enumerate()
            .map(|(i, ((d, c), n))| {
                let lo = d
                    .values
                    .partition_point(|v| pairs::key_range(*v, plan.parts) < k);
                let hi =
                    lo + d.values[lo..].partition_point(|v| pairs::key_range(*v, plan.parts) == k);
                DocKeys {
                    doc: a + i as u64,
                    level: d.level,
                    template: c.template,
                    entry_count: u32::try_from(*n).unwrap_or(u32::MAX),
                    keys: d.values[lo..hi].to_vec(),
                }
            })
            .filter(|d| !d.keys.is_empty())
            .collect();
        rows += mine.iter().map(|d| d.keys.len() as u64).sum::<u64>();
        pair_files::write_keys(
            &pair_files::keys_path(dir, range, k),
            &plan.stamp("keys", k, (a, b)),
            &mine,
        )?;
    }
    Ok((new.len() as u64, rows))
}

/// `pairs join --part k`: the join of key range `k` for the waiting docs with keys in it
/// (read from every doc range's keys file), its shares written per doc range.
pub fn join(dir: &Path, config: &Config, part: usize, threads: usize) -> Result<TaskSummary> {
    timed("join", part, || join_task(dir, config, part, threads))
}

fn join_task(dir: &Path, config: &Config, part: usize, threads: usize) -> Result<(u64, u64)> {
    let t = Task::open(dir, config)?;
    let plan = &t.plan;
    if part >= plan.parts {
        return Err(IndexError::Invalid(format!(
            "--part {part}: plan {} has key ranges 0 to {}",
            plan.id,
            plan.parts - 1
        )));
    }
    let mut docs: Vec<DocKeys> = Vec::new();
    for (j, (a, b)) in plan.ranges.iter().enumerate() {
        pair_files::read_keys(
            &pair_files::keys_path(dir, j, part),
            &plan.stamp("keys", part, (*a, *b)),
            &mut docs,
        )?;
    }
    let joined: Vec<pairs::JoinDoc> = docs
        .iter()
        .map(|d| pairs::JoinDoc {
            id: d.doc,
            level: d.level,
            values: &d.keys,
        })
        .collect();
    let tmpl: Vec<&[u32]> = docs
        .iter()
        .map(|d| t.set.as_ref().map_or(&[][..], |s| s.get(d.template)))
        .collect();
    let entry_counts: Vec<usize> = docs.iter().map(|d| d.entry_count as usize).collect();
    let state = t.state()?;
    let view = state.view(&t, None);
    let found = pairs::join_range(
        &view,
        &joined,
        plan.settings(threads),
        (&tmpl, &entry_counts),
        (part, plan.parts),
    )?;
    let mut rows = 0;
    for (j, (a, b)) in plan.ranges.iter().enumerate() {
        let inside = |l: &[(u64, u64)]| -> Vec<(u64, u64)> {
            l.iter().filter(|(d, _)| d >= a && d < b).copied().collect()
        };
        let mine = Shares {
            shares: inside(&found.shares),
            heads: inside(&found.heads),
            overs: inside(&found.overs),
        };
        rows += (mine.shares.len() + mine.heads.len() + mine.overs.len()) as u64;
        pair_files::write_shares(
            &pair_files::shares_path(dir, part, j),
            &plan.stamp("shares", part, (*a, *b)),
            &mine,
        )?;
    }
    Ok((docs.len() as u64, rows))
}

/// `pairs estimate --part j`: the pairs of doc range `j` from every key range's shares.
pub fn estimate(dir: &Path, config: &Config, range: usize, threads: usize) -> Result<TaskSummary> {
    timed("estimate", range, || {
        estimate_task(dir, config, range, threads)
    })
}

fn estimate_task(dir: &Path, config: &Config, range: usize, threads: usize) -> Result<(u64, u64)> {
    let t = Task::open(dir, config)?;
    let plan = &t.plan;
    let (a, b) = plan.range(range)?;
    let docs = Docs::read(&t.index, plan, (a, b), threads)?;
    let new = docs.new_docs();
    let n = new.len();
    let (tmpl, entry_counts) = pairs::doc_templates(t.set.as_ref(), &new);
    let mut joined = Joined {
        tmpl,
        entry_counts,
        heads: vec![Vec::new(); n],
        overs: vec![Vec::new(); n],
    };
    let mut shares: Vec<Vec<u64>> = vec![Vec::new(); n];
    for k in 0..plan.parts {
        let s = pair_files::read_shares(
            &pair_files::shares_path(dir, k, range),
            &plan.stamp("shares", k, (a, b)),
        )?;
        for (d, v) in s.shares {
            shares[(d - a) as usize].push(v);
        }
        for (d, v) in s.heads {
            joined.heads[(d - a) as usize].push(v);
        }
        for (d, v) in s.overs {
            joined.overs[(d - a) as usize].push(v);
        }
    }
    // The earlier waiting docs' templates (read from the checkpoint without one): from
    // their URLs, for those read.
    let by_host = plan.for_pairs();
    let unpaired = t.index.unpaired();
    let template = |d: u64| -> Result<u32> {
        if by_host.is_none() {
            return Ok(0);
        }
        match unpaired.get(&d)? {
            Some(w) => Ok(template_of(&by_host, &w.url)),
            None => Err(IndexError::Invalid(format!(
                "doc {d} does not wait for its pairs in {}",
                t.index.path().display()
            ))),
        }
    };
    let state = t.state()?;
    let unsettled = Unsettled {
        from: plan.first,
        template: &template,
    };
    let view = state.view(&t, Some(unsettled));
    let of = |i: usize| shares[i].clone();
    let mut found = pairs::estimate(
        &view,
        a,
        &new,
        0,
        plan.settings(threads),
        (&joined, &of),
        &mut Vec::new(),
        std::time::Instant::now(),
    )?;
    // The sketches as the commit may store them: it reads no base.
    super::bases::ahead(&mut found.docs, &new, a, &found.read, threads)?;
    let rows = found.docs.iter().map(|d| d.estimates.len() as u64).sum();
    pair_files::write_pairs(
        &pair_files::pairs_paths(dir, range),
        &plan.stamp("pairs", range, (a, b)),
        &found.docs,
    )?;
    Ok((n as u64, rows))
}

/// The pairs files of a plan, read in doc order by `ingest --pairs`.
pub(super) struct PairsFiles {
    dir: PathBuf,
    plan: Plan,
    /// The range loaded: its first doc and its docs' pairs.
    loaded: Option<(u64, std::collections::VecDeque<pairs::DocPairs>)>,
}

impl PairsFiles {
    /// Opens the job's folder, checking every pairs file is there and of this plan.
    pub(super) fn open(dir: &Path, plan: Plan) -> Result<PairsFiles> {
        for (j, (a, b)) in plan.ranges.iter().enumerate() {
            let (ds, es) = pair_files::pairs_stamps(&plan.stamp("pairs", j, (*a, *b)));
            let (dp, ep) = pair_files::pairs_paths(dir, j);
            pair_files::check(&dp, &ds)?;
            pair_files::check(&ep, &es)?;
        }
        Ok(PairsFiles {
            dir: dir.to_path_buf(),
            plan,
            loaded: None,
        })
    }

    /// The plan they were made for.
    pub(super) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The pairs of docs `first..first + n`, in order.
    pub(super) fn take(&mut self, first: u64, n: usize) -> Result<Vec<pairs::DocPairs>> {
        let mut out = Vec::with_capacity(n);
        let mut d = first;
        while out.len() < n {
            let in_loaded = self
                .loaded
                .as_ref()
                .is_some_and(|(a, l)| d >= *a && d < *a + l.len() as u64);
            if !in_loaded {
                let Some(j) = self.plan.ranges.iter().position(|(a, b)| d >= *a && d < *b) else {
                    return Err(IndexError::Invalid(format!(
                        "--pairs: doc {d} is in no range of plan {}",
                        self.plan.id
                    )));
                };
                let (a, b) = self.plan.ranges[j];
                let docs = pair_files::read_pairs(
                    &pair_files::pairs_paths(&self.dir, j),
                    &self.plan.stamp("pairs", j, (a, b)),
                )?;
                self.loaded = Some((a, docs.into()));
            }
            let (a, l) = self.loaded.as_mut().expect("loaded");
            // Docs before `d` (paired by a run before this one) are dropped.
            while *a < d {
                l.pop_front();
                *a += 1;
            }
            let p = l.pop_front().expect("in range");
            *a += 1;
            out.push(p);
            d += 1;
        }
        Ok(out)
    }
}

/// A batch's pairs from a pairs job's files (`ingest --pairs`): new docs `first`, … with
/// their sketches as stored in full. Their bases are decided as the local pair step's
/// ([`super::bases`]), the state of the sweep's docs of earlier ranges from `bits`.
pub(super) fn batch_from_files(
    files: &std::sync::Mutex<PairsFiles>,
    (first, stored): (u64, &[StoredSketch]),
) -> Result<pairs::BatchPairs> {
    let clock = std::time::Instant::now();
    let docs = files
        .lock()
        .map_err(|_| IndexError::Invalid("a pair step panicked".into()))?
        .take(first, stored.len())?;
    for (k, (p, s)) in docs.iter().zip(stored).enumerate() {
        if p.over.len() != s.posting.len() {
            return Err(IndexError::Invalid(format!(
                "--pairs: doc {} has {} posting values, its pairs {}: pairs of other docs",
                first + k as u64,
                s.posting.len(),
                p.over.len()
            )));
        }
    }
    Ok(pairs::BatchPairs {
        docs,
        estimate_s: clock.elapsed().as_secs_f64(),
        ..Default::default()
    })
}

impl super::Writer<'_> {
    /// With `--pairs`: checks the pairs job's plan against the waiting docs; the pair step
    /// then takes each batch's pairs from its files.
    pub(super) fn from_files(&mut self, files: PairsFiles) -> Result<()> {
        let plan = files.plan();
        let end = self.index.counters().next_doc;
        if self.next_pair == end {
            // Nothing waits (a sweep paired already): nothing to take from them.
            return Ok(());
        }
        plan.check_waiting(self.index, self.next_pair, end)?;
        let bits = super::bases::AgainstBits::new(plan.first, plan.end);
        // Docs a stopped run paired: whether each is stored against a base, as stored.
        let done: Vec<u64> = (plan.first..self.next_pair).collect();
        for chunk in done.chunks(4096) {
            for (d, c) in self.index.sketches().read_compact(chunk, None)? {
                if c.against {
                    bits.set(d);
                }
            }
        }
        self.pair_step.against_bits = Some(bits);
        self.pair_step.pair_files = Some(Arc::new(std::sync::Mutex::new(files)));
        Ok(())
    }

    /// With `--pairs`: the committed docs' postings go into the buffer on a thread of
    /// their own ([`super::posting_adds`]), which holds it until the end of the ingest.
    pub(super) fn start_posting_adds<'scope>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        index: &'scope Index,
    ) -> Result<()> {
        let fresh = Arc::get_mut(&mut self.lookups.fresh)
            .ok_or_else(|| IndexError::Invalid("the postings buffer is shared".into()))?;
        let budget = (self.lookups.fresh_budget, self.threads);
        let written = Arc::clone(&self.writing.writes.written);
        let fresh = std::mem::take(fresh);
        self.lookups.posting_adds = Some(super::posting_adds::PostingAdds::start(
            scope, index, fresh, budget, written,
        ));
        Ok(())
    }
}
