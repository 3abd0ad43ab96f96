//! `tidemark inspect FILE...`

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::json;
use tidemark::scan::{scan_files, ScanEvent, ScanOptions};

use super::{json_line, stdout, Globals, EXIT_DAMAGE, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub inputs: super::inputs::Inputs,
    /// One JSON object per record ({"file","offset","type","url","date","status","tokens","shingles","sketch"}),
    /// then one {"summary": {...}} object per file.
    #[arg(long)]
    pub json: bool,
    /// Print only the per-file summaries.
    #[arg(long)]
    pub summary: bool,
}

pub fn run(g: &Globals, args: Args) -> anyhow::Result<u8> {
    let files = match args.inputs.resolve() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tidemark inspect: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let opts = ScanOptions {
        threads: g.config.threads(),
        params: g.config.sketch_params(),
        record_cap: g.config.ingest.record_cap,
        anchor_window: 0,
        read_only: false,
        hold: 0,
    };
    let mut out = stdout();
    let mut by_type: BTreeMap<String, u64> = BTreeMap::new();
    let mut warnings: Vec<serde_json::Value> = Vec::new();
    let mut damaged = false;
    let mut io_err: Option<std::io::Error> = None;
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    scan_files(&files, &opts, |ev| {
        let r = (|| -> std::io::Result<()> {
            match ev {
                ScanEvent::FileStart { .. } => {
                    by_type.clear();
                    warnings.clear();
                }
                ScanEvent::Record { file, scanned } => {
                    let rec = &scanned.record;
                    let c = &scanned.capture;
                    *by_type.entry(rec.kind.to_string()).or_default() += 1;
                    for w in &rec.warnings {
                        warnings.push(json!({"offset": rec.offset, "message": w}));
                        if !args.json {
                            eprintln!("tidemark inspect: {}: warning: {w}", names[file]);
                        }
                    }
                    if args.summary {
                        return Ok(());
                    }
                    let shingles = c.sketch.as_ref().map(|s| s.shingles);
                    let sketch = c.sketch.as_ref().map(|s| s.values.len());
                    if args.json {
                        let mut v = json!({
                            "file": names[file], "offset": rec.offset, "type": rec.kind,
                            "url": c.url, "date": c.timestamp, "status": c.status,
                            "tokens": c.sketch.as_ref().map(|_| c.tokens), "shingles": shingles, "sketch": sketch,
                        });
                        if c.truncated {
                            v["truncated"] = json!(true);
                        }
                        if rec.short {
                            v["short"] = json!(true);
                        }
                        let all: Vec<&String> =
                            rec.warnings.iter().chain(c.warnings.iter()).collect();
                        if !all.is_empty() {
                            v["warnings"] = json!(all);
                        }
                        json_line(&mut out, &v)?;
                    } else {
                        let dash = |o: Option<String>| o.unwrap_or_else(|| "-".into());
                        let mut flags = String::new();
                        if c.truncated {
                            flags.push_str(" [truncated]");
                        }
                        if rec.short {
                            flags.push_str(" [short]");
                        }
                        writeln!(
                            out,
                            "{:>10} {:<9} {:>3} {} {} tokens={} shingles={} sketch={}{}",
                            rec.offset,
                            rec.kind,
                            dash(c.status.map(|s| s.to_string())),
                            dash(c.timestamp.clone()),
                            dash(c.url.clone()),
                            dash(c.sketch.as_ref().map(|_| c.tokens.to_string())),
                            dash(shingles.map(|s| s.to_string())),
                            dash(sketch.map(|s| s.to_string())),
                            flags
                        )?;
                    }
                }
                ScanEvent::FileEnd {
                    file,
                    records,
                    error,
                    ..
                } => {
                    if let Some(e) = &error {
                        damaged = true;
                        eprintln!(
                            "tidemark inspect: {}: damaged at offset {}: {}",
                            names[file], e.offset, e.message
                        );
                    }
                    let errors: Vec<_> = error
                        .iter()
                        .map(|e| json!({"offset": e.offset, "message": e.message}))
                        .collect();
                    if args.json {
                        json_line(
                            &mut out,
                            &json!({"summary": {"file": names[file], "records": records, "by_type": by_type, "errors": errors, "warnings": warnings}}),
                        )?;
                    } else {
                        let types: Vec<String> =
                            by_type.iter().map(|(k, v)| format!("{k} {v}")).collect();
                        let status = match &error {
                            None => "read to the end".to_string(),
                            Some(e) => format!("DAMAGED at offset {}: {}", e.offset, e.message),
                        };
                        let warned = if warnings.is_empty() {
                            String::new()
                        } else {
                            format!("; {} warnings", warnings.len())
                        };
                        writeln!(
                            out,
                            "== {}: {} records ({}); {}{}",
                            names[file],
                            records,
                            types.join(", "),
                            status,
                            warned
                        )?;
                    }
                    by_type.clear();
                }
                ScanEvent::Failed {
                    file,
                    offset,
                    message,
                } => {
                    return Err(std::io::Error::other(format!(
                        "{}: {}",
                        names[file],
                        tidemark::scan::failed_on(offset, &message)
                    )));
                }
            }
            Ok(())
        })();
        match r {
            Ok(()) => true,
            Err(e) => {
                io_err = Some(e);
                false
            }
        }
    });
    if let Some(e) = io_err {
        return Err(e.into());
    }
    out.flush()?;
    Ok(if damaged { EXIT_DAMAGE } else { EXIT_OK })
}
