//! `tidemark pairs prepare|join|estimate`: the tasks of a pairs job
//! (`tools/spark/pairs_job.py`), each a process a cluster runs; see
//! `tidemark::ingest::pairs_job`.

use std::io::Write;
use std::path::PathBuf;

use tidemark::ingest::pairs_job::{self, PrepareOptions};
use tidemark::ingest::{IngestOptions, PairsFrom};

use super::{stdout, Globals, EXIT_OK, EXIT_USAGE};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// On the index's machine: a checkpoint of the index in OUT/index with the sweep's
    /// records committed into it (its new docs waiting), and OUT/plan.json (what the
    /// pairs depend on, the key and doc ranges). The index itself is not changed.
    Prepare(PrepareArgs),
    /// One doc range's posting keys, one file per key range:
    /// OUT/keys/range-J.part-K.parquet.
    Keys(TaskArgs),
    /// One key range of the join, for the waiting docs with keys in it:
    /// OUT/shares/part-K.range-J.parquet.
    Join(TaskArgs),
    /// One doc range's counts, candidates and estimates from every key range's shares:
    /// OUT/pairs/range-J.{docs,estimates}.parquet, for `ingest --pairs OUT`.
    Estimate(TaskArgs),
}

#[derive(clap::Args, Debug)]
pub struct PrepareArgs {
    /// The job's folder (created; must not hold a job yet).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Label the sweep's records are committed under in the checkpoint (when the index
    /// has no sweep waiting for its pairs already: then that one's).
    #[arg(long, value_name = "LABEL", default_value = "pairs-job")]
    pub sweep: String,
    /// Key ranges of the join (its tasks).
    #[arg(long, default_value_t = 16)]
    pub parts: usize,
    /// Doc ranges of the estimates (their tasks).
    #[arg(long, default_value_t = 16)]
    pub ranges: usize,
    /// The sweep's shards (`tidemark sketch`), in the order `ingest` will be given them.
    #[command(flatten)]
    pub inputs: super::inputs::Inputs,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct TaskArgs {
    /// The job's folder (`pairs prepare --out`).
    #[arg(long, value_name = "DIR")]
    pub pairs: PathBuf,
    /// The task's key range (join) or doc range (keys, estimate), from 0.
    #[arg(long)]
    pub part: usize,
    /// Print what the task did as JSON: {"task","part","docs","rows","seconds"}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &Globals, c: Command) -> anyhow::Result<u8> {
    let threads = g.config.threads();
    let mut out = stdout();
    match c {
        Command::Prepare(a) => {
            let shards = match a.inputs.resolve_shards() {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("tidemark pairs prepare: {e}");
                    return Ok(EXIT_USAGE);
                }
            };
            let c = &g.config;
            let ingest = IngestOptions {
                sweep: a.sweep.clone(),
                date: None,
                threads,
                record_cap: c.ingest.record_cap,
                postings_buffer_mb: c.ingest.postings_buffer_mb,
                sketch_cache_mb: c.ingest.sketch_cache_mb,
                pair_partitions: c.ingest.pair_partitions,
                template: c.template,
                store_texts: c.index.store_texts,
                pairs: PairsFrom::Later,
            };
            let p = PrepareOptions {
                out: a.out.clone(),
                sweep: a.sweep.clone(),
                parts: a.parts,
                ranges: a.ranges,
            };
            let plan = pairs_job::prepare(&c.index.path, c, &shards, &ingest, &p, |_| {})?;
            if a.json {
                serde_json::to_writer_pretty(&mut out, &plan)?;
                writeln!(out)?;
            } else {
                writeln!(
                    out,
                    "plan {}: sweep {}, docs {}..{} waiting, {} key ranges, {} doc ranges, in {}",
                    plan.id,
                    plan.sweep,
                    plan.first,
                    plan.end,
                    plan.parts,
                    plan.ranges.len(),
                    a.out.display()
                )?;
            }
        }
        Command::Keys(a) => {
            let s = pairs_job::keys(&a.pairs, &g.config, a.part, threads)?;
            report(&mut out, &s, a.json)?;
        }
        Command::Join(a) => {
            let s = pairs_job::join(&a.pairs, &g.config, a.part, threads)?;
            report(&mut out, &s, a.json)?;
        }
        Command::Estimate(a) => {
            let s = pairs_job::estimate(&a.pairs, &g.config, a.part, threads)?;
            report(&mut out, &s, a.json)?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

fn report(out: &mut impl Write, s: &pairs_job::TaskSummary, json: bool) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, s)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{} {}: {} docs, {} rows in {:.2} s",
            s.task, s.part, s.docs, s.rows, s.seconds
        )?;
    }
    Ok(())
}
