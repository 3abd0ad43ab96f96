//! `tidemark demo`: the embedded default run. Generates a small synthetic web of several
//! sweeps with the project's own generator, ingests them one by one into an index
//! (`DIR/index`), and checks the sketches against the generator's ground truth
//! (estimated against exact resemblance for every edit and move).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use tidemark::scan::{scan_files, ScanEvent, ScanOptions};
use tidemark::sketch::{estimate, Sketch};
use tidemark::synth::{generate, parse_size, GenOptions};

use super::{Globals, EXIT_DAMAGE, EXIT_OK};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to write the demo sweeps.
    #[arg(long, default_value = "tidemark-demo", value_name = "DIR")]
    pub dir: PathBuf,
    /// Uncompressed size of one sweep (e.g. 1MB, 20MB).
    #[arg(long, default_value = "1MB")]
    pub size: String,
    /// Number of sweeps.
    #[arg(long, default_value_t = 3)]
    pub sweeps: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &Globals, a: Args) -> anyhow::Result<u8> {
    let Some(bytes) = parse_size(&a.size) else {
        anyhow::bail!("--size must look like 1MB, 500KB or 2GB, not {:?}", a.size);
    };
    let t0 = Instant::now();
    let opts = GenOptions::for_size(a.dir.clone(), bytes, a.sweeps.max(2), a.seed);
    let quiet = a.json;
    if !quiet {
        eprintln!(
            "generating {} sweeps of ~{} into {} …",
            opts.sweeps,
            a.size,
            a.dir.display()
        );
    }
    let generated = generate(&opts, |line| {
        if !quiet {
            eprintln!("  {line}");
        }
    })?;
    let scan_opts = ScanOptions {
        threads: g.config.threads(),
        params: g.config.sketch_params(),
        record_cap: g.config.ingest.record_cap,
        anchor_window: 0,
        read_only: false,
        hold: 0,
    };
    // Sketch of every 200 capture, per sweep and URL.
    let mut sketches: Vec<HashMap<String, Sketch>> = Vec::new();
    let mut records = 0u64;
    let mut damaged = 0;
    let t_scan = Instant::now();
    for sw in &generated.sweeps {
        let mut map = HashMap::new();
        scan_files(&sw.files, &scan_opts, |ev| {
            match ev {
                ScanEvent::Record { scanned, .. } => {
                    records += 1;
                    let c = scanned.capture;
                    if let (Some(url), Some(sk), Some(200)) = (c.url, c.sketch, c.status) {
                        map.insert(url, sk);
                    }
                }
                ScanEvent::FileEnd { error: Some(e), .. } => {
                    damaged += 1;
                    eprintln!("tidemark demo: damaged file: {e}");
                }
                ScanEvent::Failed { message, .. } => {
                    damaged += 1;
                    eprintln!("tidemark demo: failed on a record: {message}");
                }
                _ => {}
            }
            true
        });
        sketches.push(map);
    }
    let scan_secs = t_scan.elapsed().as_secs_f64();
    // The main job: every sweep into a fresh index, one after the other.
    let db = a.dir.join("index");
    let _ = std::fs::remove_dir_all(&db);
    let index = tidemark::index::Index::open(&db, &g.config, true)?;
    let mut ingested = Vec::new();
    for sw in &generated.sweeps {
        let opts = tidemark::ingest::IngestOptions {
            sweep: sw.label.clone(),
            date: Some(sw.date.clone()),
            threads: g.config.threads(),
            record_cap: g.config.ingest.record_cap,
            postings_buffer_mb: g.config.ingest.postings_buffer_mb,
            sketch_cache_mb: g.config.ingest.sketch_cache_mb,
            pair_partitions: g.config.ingest.pair_partitions,
            template: g.config.template,
            // The demo keeps texts so `history --diff` has something to show.
            store_texts: true,
            pairs: Default::default(),
        };
        let s = tidemark::ingest::ingest(&index, &sw.files, &opts, |_| {})?;
        if !quiet {
            println!(
                "ingested sweep {}: {} captures, {} new docs, {} known, {} edges, {} unions",
                s.sweep,
                s.counts.captures,
                s.counts.new_docs,
                s.counts.known_docs,
                s.counts.edges,
                s.counts.unions
            );
        }
        let c = &s.counts;
        ingested.push(json!({"sweep": s.sweep, "captures": c.captures, "new_docs": c.new_docs, "known_docs": c.known_docs, "edges": c.edges, "unions": c.unions}));
    }
    let stats = tidemark::query::summary::stats(&index)?;
    drop(index);
    // Estimated against exact resemblance for every edit and every move.
    let mut errors: Vec<f64> = Vec::new();
    let mut rows = Vec::new();
    for (k, sw) in generated.sweeps.iter().enumerate().skip(1) {
        let truth: serde_json::Value = serde_json::from_slice(&std::fs::read(&sw.truth)?)?;
        // A revisit has no sketch of its own: resolve to the last full capture of the URL.
        let lookup = |url: &str, upto: usize| -> Option<&Sketch> {
            (0..=upto).rev().find_map(|i| sketches[i].get(url))
        };
        let mut pairs = Vec::new();
        for e in truth["edits"].as_array().into_iter().flatten() {
            let url = e["url"].as_str().unwrap_or_default();
            pairs.push((
                url.to_string(),
                url.to_string(),
                e["resemblance"].as_f64().unwrap_or(0.0),
            ));
        }
        for m in truth["moves"].as_array().into_iter().flatten() {
            pairs.push((
                m["from"].as_str().unwrap_or_default().to_string(),
                m["to"].as_str().unwrap_or_default().to_string(),
                m["resemblance"].as_f64().unwrap_or(0.0),
            ));
        }
        let mut within = 0;
        let n = pairs.len();
        for (from, to, exact) in &pairs {
            if let (Some(a), Some(b)) = (lookup(from, k - 1), sketches[k].get(to)) {
                let est = estimate(a, b).resemblance;
                errors.push((est - exact).abs());
                if (est - exact).abs() <= 0.05 {
                    within += 1;
                }
            }
        }
        rows.push(json!({"sweep": sw.label, "changes_checked": n, "within_0.05": within}));
    }
    let mean_err = if errors.is_empty() {
        0.0
    } else {
        errors.iter().sum::<f64>() / errors.len() as f64
    };
    let max_err = errors.iter().cloned().fold(0.0, f64::max);
    let result = json!({
        "dir": a.dir, "sweeps": generated.sweeps.iter().map(|s| &s.label).collect::<Vec<_>>(),
        "warc_bytes": generated.bytes, "gzip_bytes": generated.compressed_bytes, "records": records,
        "scan_seconds": scan_secs, "threads": scan_opts.threads,
        "resemblance_checks": rows, "mean_abs_error": mean_err, "max_abs_error": max_err,
        "damaged_files": damaged, "index": db, "ingested": ingested,
        "clusters": stats.clusters, "multi_doc_clusters": stats.multi_doc_clusters, "docs": stats.docs,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!(
            "read {} records ({:.1} MB of WARC, {:.1} MB gzip) in {:.2} s on {} threads",
            records,
            generated.bytes as f64 / 1e6,
            generated.compressed_bytes as f64 / 1e6,
            scan_secs,
            scan_opts.threads
        );
        for r in &rows {
            println!(
                "sweep {}: {} edits and moves; estimated resemblance within 0.05 of exact for {}",
                r["sweep"].as_str().unwrap_or_default(),
                r["changes_checked"],
                r["within_0.05"]
            );
        }
        println!("mean |estimated - exact| resemblance: {mean_err:.4} (max {max_err:.4})");
        println!(
            "index {}: {} docs in {} clusters ({} of two or more docs), {} captures of {} URLs",
            db.display(),
            stats.docs,
            stats.clusters,
            stats.multi_doc_clusters,
            stats.captures,
            stats.urls
        );
        println!(
            "demo done in {:.1} s; try: tidemark --db {} stats   (or sweeps, export, whereis URL, history URL --diff, similar URL, cluster URL, report, serve)",
            t0.elapsed().as_secs_f64(),
            db.display()
        );
    }
    Ok(if damaged > 0 { EXIT_DAMAGE } else { EXIT_OK })
}
