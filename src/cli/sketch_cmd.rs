//! `tidemark sketch --out DIR FILE...`: the map stage, WARC/ARC files to shards.

use std::io::Write;
use std::path::PathBuf;

use tidemark::shard::write::{sketch_files, SketchOptions};
use tidemark::shard::ShardParams;

use super::{stdout, Globals, EXIT_DAMAGE, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Folder of the shards (created if absent): FILE.parquet for each input FILE.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub inputs: super::inputs::Inputs,
    /// Print the summary as JSON: {"shards":[{"source","shard","records","bytes","error"}],"records","sketched","bytes","shard_bytes","seconds"}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &Globals, a: Args) -> anyhow::Result<u8> {
    let files = match a.inputs.resolve() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tidemark sketch: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let c = &g.config;
    let index = tidemark::index::IndexParams::from_config(c);
    let opts = SketchOptions {
        threads: c.threads(),
        params: ShardParams::of_index(&index, c.ingest.record_cap, c.links.window),
        texts: c.index.store_texts,
    };
    let bar = super::index_cmds::byte_bar(a.json);
    let started = std::time::Instant::now();
    let summary = sketch_files(&files, &a.out, &opts, |done, total| {
        if let Some(b) = &bar {
            b.set_length(total.max(1));
            b.set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tidemark sketch: {e}");
            return Ok(EXIT_DAMAGE);
        }
    };
    let secs = started.elapsed().as_secs_f64();
    for s in &summary.shards {
        if let Some((offset, message)) = &s.error {
            eprintln!(
                "tidemark sketch: {}: damaged at offset {offset}: {message} (the records before it are in {})",
                s.source, s.shard
            );
        }
    }
    let mut out = stdout();
    if a.json {
        let mut v = serde_json::to_value(&summary)?;
        v["seconds"] = serde_json::json!(secs);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{} files, {} records ({} sketched) into {} shards in {}: {:.1} MB of shards ({:.0} bytes a record) in {:.1} s",
            files.len(),
            summary.records,
            summary.sketched,
            summary.shards.len(),
            a.out.display(),
            summary.shard_bytes as f64 / 1e6,
            summary.shard_bytes as f64 / summary.records.max(1) as f64,
            secs
        )?;
    }
    out.flush()?;
    let damaged = summary.shards.iter().any(|s| s.error.is_some());
    Ok(if damaged { EXIT_DAMAGE } else { EXIT_OK })
}
