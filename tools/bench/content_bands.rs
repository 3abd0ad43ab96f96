//! `--content-bands`: content resemblance checked on real pages against the truth. From
//! the WARC files of the index's own sweeps, every page's exact shingle set (tidemark's
//! tokens, all shingles, not a sample); each host's very common shingles per sweep (those
//! on more than 3% of its pages with text and on at least 20: `synth::very_common`, the
//! truth's fixed definition, not tidemark's templates); and for every URL whose text
//! changed since its previous capture with text, the exact content Jaccard with both
//! sweeps' very common shingles left out. Each is put in
//! its band (≥ 0.9, 0.5–0.9, < 0.5) beside the content resemblance the index stored for
//! that capture (`content_resemblance_to_previous`), and likewise on all shingles.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use tidemark::capture::{analyze, Scratch};
use tidemark::index::{Index, IndexError};
use tidemark::query::Searcher;
use tidemark::read::RecordReader;
use tidemark::sketch::SketchParams;
use tidemark::synth::{jaccard_without, union_sorted as union, very_common};
use tidemark::url::{host_of_surt, surt};

use super::Args;

/// A page with text in one sweep: its host (SURT) and exact shingles (sorted, distinct).
struct Page {
    host: String,
    shingles: Vec<u64>,
}

/// The report's bands.
fn band(r: f64) -> usize {
    if r >= 0.9 {
        2
    } else if r >= 0.5 {
        1
    } else {
        0
    }
}

/// Every page with text (2xx or no status) of the files, by URL (the last capture wins);
/// a revisit with the text it repeats, by payload digest among the sweep's records and
/// the URL's `last` page (the URLs' pages of earlier sweeps).
fn read_pages(
    files: &[String],
    params: &SketchParams,
    last: &HashMap<String, (String, Page, Vec<u64>)>,
) -> Result<HashMap<String, Page>, String> {
    let mut out = HashMap::new();
    let mut by_digest: HashMap<String, Vec<u64>> = HashMap::new();
    let mut revisits: Vec<(String, Option<String>)> = Vec::new();
    let mut scratch = Scratch::default();
    for f in files {
        let reader = RecordReader::open(Path::new(f), 16 << 20).map_err(|e| format!("{f}: {e}"))?;
        for r in reader {
            let rec = r.map_err(|e| format!("{f}: {e}"))?;
            let cap = analyze(&rec, params, 16 << 20, &mut scratch);
            let ok = cap.status.is_none_or(|s| (200..300).contains(&s));
            let (Some(url), true) = (cap.url.clone(), ok) else {
                continue;
            };
            let key = surt(&url);
            if cap.refers_to.is_some() {
                revisits.push((key, cap.payload_digest.clone()));
                continue;
            }
            if cap.sketch.is_none() {
                continue;
            }
            // Its sketch was just made from these.
            let set = scratch.shingles().to_vec();
            if let Some(d) = &cap.payload_digest {
                by_digest.insert(d.clone(), set.clone());
            }
            let host = host_of_surt(&key).to_string();
            out.insert(
                key,
                Page {
                    host,
                    shingles: set,
                },
            );
        }
    }
    for (key, digest) in revisits {
        let set = digest
            .and_then(|d| by_digest.get(&d).cloned())
            .or_else(|| last.get(&key).map(|(_, p, _)| p.shingles.clone()));
        if let (Some(shingles), false) = (set, out.contains_key(&key)) {
            let host = host_of_surt(&key).to_string();
            out.insert(key, Page { host, shingles });
        }
    }
    Ok(out)
}

/// Each host's very common shingles: the truth's template ([`very_common`]).
fn templates(pages: &HashMap<String, Page>) -> HashMap<String, Vec<u64>> {
    let mut by_host: HashMap<&str, Vec<&[u64]>> = HashMap::new();
    for page in pages.values() {
        by_host.entry(&page.host).or_default().push(&page.shingles);
    }
    by_host
        .into_iter()
        .map(|(host, sets)| (host.to_string(), very_common(sets)))
        .collect()
}

pub fn bench(a: &Args) -> ExitCode {
    let Some(db) = &a.db else {
        eprintln!(
            "tidemark-bench --content-bands: give --db DIR (an index of the sweeps to check)"
        );
        return ExitCode::from(2);
    };
    let config = tidemark::config::Config::default();
    let index = match Index::open_read_only(db, &config) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("tidemark-bench: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&index) {
        Ok(rows) => {
            if a.json {
                println!("{}", serde_json::to_string_pretty(&rows).unwrap());
            } else {
                println!(
                    "{:<24} {:>8} {:>14} {:>14} {:>8}",
                    "transition", "changed", "content bands", "full bands", "missing"
                );
                for r in rows.as_array().into_iter().flatten() {
                    println!(
                        "{:<24} {:>8} {:>13.2}% {:>13.2}% {:>8}",
                        format!(
                            "{} → {}",
                            r["from"].as_str().unwrap_or(""),
                            r["to"].as_str().unwrap_or("")
                        ),
                        r["changed"],
                        100.0 * r["content_agree"].as_f64().unwrap_or(0.0),
                        100.0 * r["full_agree"].as_f64().unwrap_or(0.0),
                        r["missing"]
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tidemark-bench --content-bands: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(index: &Index) -> Result<serde_json::Value, String> {
    let err = |e: IndexError| e.to_string();
    let p = index.params();
    let params = SketchParams {
        shingle_width: p.shingle_width,
        seed: p.seed,
        sample_target: p.sample_target,
    };
    let mut sweeps = index
        .sweeps()
        .all(&tidemark::access::Reader::everything())
        .map_err(err)?;
    sweeps.sort_by(|x, y| x.1.date.cmp(&y.1.date).then(x.0.cmp(&y.0)));
    let mut names = index.files().names_by_sweep().map_err(err)?;
    let s = Searcher::everything(index).map_err(err)?;
    // Each URL's latest page with text so far: (sweep label, page, its host's template).
    let mut last: HashMap<String, (String, Page, Vec<u64>)> = HashMap::new();
    let mut rows = Vec::new();
    for (id, sweep) in &sweeps {
        let files = names.remove(id).unwrap_or_default();
        let pages = read_pages(&files, &params, &last)?;
        let tmpl = templates(&pages);
        // (from label, to label) → [changed, content agree, full agree, missing, confusion]
        let mut per: HashMap<String, (u64, u64, u64, u64, [[u64; 3]; 3])> = HashMap::new();
        for (key, page) in pages {
            let own = tmpl.get(&page.host).cloned().unwrap_or_default();
            if let Some((from, prev, prev_t)) = last.get(&key) {
                if prev.shingles != page.shingles {
                    let removed = union(prev_t, &own);
                    let full = jaccard_without(&prev.shingles, &page.shingles, &[]);
                    let content = jaccard_without(&prev.shingles, &page.shingles, &removed);
                    let stored = s
                        .captures_of_surt(&key)
                        .map_err(err)?
                        .into_iter()
                        .rev()
                        .find(|c| c.info.sweep == *id && c.info.doc.is_some());
                    let e = per.entry(from.clone()).or_default();
                    e.0 += 1;
                    match (stored, full, content) {
                        (Some(c), Some(full), Some(content)) => {
                            match (c.info.r_prev, c.info.cr_prev) {
                                (Some(r), Some(cr)) => {
                                    let (want, got) = (band(content), band(cr as f64));
                                    e.1 += (want == got) as u64;
                                    e.2 += (band(full) == band(r as f64)) as u64;
                                    e.4[want][got] += 1;
                                }
                                _ => e.3 += 1,
                            }
                        }
                        _ => e.3 += 1,
                    }
                }
            }
            last.insert(key, (sweep.label.clone(), page, own));
        }
        let mut from: Vec<_> = per.into_iter().collect();
        from.sort();
        for (f, (n, content, full, missing, confusion)) in from {
            let judged = (n - missing).max(1) as f64;
            rows.push(json!({
                "from": f, "to": sweep.label, "changed": n, "missing": missing,
                "content_agree": content as f64 / judged, "full_agree": full as f64 / judged,
                "content_confusion_exact_by_stored": confusion,
            }));
        }
    }
    Ok(serde_json::Value::Array(rows))
}
