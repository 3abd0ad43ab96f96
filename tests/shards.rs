//! The map stage (`tidemark sketch`) and the reduce stage (`ingest --sketches`): an
//! index built from shards is the index built from the WARC files, for any grouping of
//! the files into `sketch` runs, any thread count, and resumes that switch between a
//! file and its shard; shards that do not fit are refused before anything is written.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::{
    corpus, export, generate_redesign, same_index, sweep_files, sweeps, tidemark, tidemark_ok,
};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `tidemark [GLOBAL] --threads N sketch --out DIR [--json] FILES...`, which must
/// succeed or report damage.
fn sketch(out: &Path, files: &[PathBuf], threads: usize, global: &[&str]) -> Output {
    let json = global.contains(&"--json");
    let mut args: Vec<String> = global
        .iter()
        .filter(|x| **x != "--json")
        .map(|x| x.to_string())
        .collect();
    args.extend(["--threads".into(), threads.to_string()]);
    args.extend(["sketch".into(), "--out".into(), s(out)]);
    if json {
        args.push("--json".into());
    }
    args.extend(files.iter().map(|f| s(f)));
    let out = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "sketch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn ingest_args(db: &Path, label: &str, files: &[PathBuf], shards: bool) -> Vec<String> {
    let mut args = vec!["--db".to_string(), s(db), "ingest".into()];
    args.extend(["--sweep".into(), label.into()]);
    if shards {
        args.push("--sketches".into());
    }
    args.extend(files.iter().map(|f| s(f)));
    args
}

fn ingest(db: &Path, label: &str, files: &[PathBuf], shards: bool) -> Output {
    let args = ingest_args(db, label, files, shards);
    tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The shard `sketch --out dir` makes of `file`.
fn shard_of(dir: &Path, file: &Path) -> PathBuf {
    dir.join(format!(
        "{}.parquet",
        file.file_name().unwrap().to_string_lossy()
    ))
}

#[test]
fn shards_of_generated_sweeps_make_the_index_their_warc_files_make() {
    let corpus = tempfile::tempdir().unwrap();
    // Steady sweeps with a template change in the third: new, known and resembling content.
    generate_redesign(corpus.path(), 500, 21);
    let work = tempfile::tempdir().unwrap();
    let (from_warcs, from_shards) = (work.path().join("warcs"), work.path().join("shards"));
    for k in 1..=3 {
        let files = sweep_files(corpus.path(), k);
        let label = format!("sweep-{k}");
        let out = ingest(&from_warcs, &label, &files, false);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The same shards from 1 and 2 threads, byte for byte.
        let (one, two) = (
            work.path().join(format!("one-{k}")),
            work.path().join(format!("two-{k}")),
        );
        sketch(&one, &files, 1, &[]);
        sketch(&two, &files, 2, &[]);
        for f in &files {
            let (a, b) = (shard_of(&one, f), shard_of(&two, f));
            assert!(
                std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
                "{} differs between 1 and 2 sketch threads",
                a.display()
            );
        }
        // Shards are committed whatever the thread count of the ingest.
        let threads = if k == 2 { "1" } else { "2" };
        let mut args = vec!["--threads".to_string(), threads.into()];
        args.extend(ingest_args(&from_shards, &label, &[one.clone()], true));
        let out = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("sweep {label}: 1 files")), "{text}");
    }
    same_index(&from_warcs, &from_shards, "generated sweeps");
    // A WARC file and its shard are one input: ingesting the other is a no-op.
    let again = ingest(
        &from_shards,
        "sweep-3",
        &sweep_files(corpus.path(), 3),
        false,
    );
    assert_eq!(again.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("is already ingested"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    same_index(
        &from_warcs,
        &from_shards,
        "after ingesting a file whose shard was ingested",
    );
}

/// The corpus's WARC and ARC files, damaged ones included, in the order a directory
/// argument gives them.
fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let n = p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_ascii_lowercase();
            if p.is_dir() {
                walk(&p, out);
            } else if [".warc", ".warc.gz", ".arc", ".arc.gz"]
                .iter()
                .any(|x| n.ends_with(x))
            {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, &mut v);
    v.sort();
    v
}

#[test]
fn shards_of_real_warcs_damaged_ones_included_make_the_index_the_warcs_make() {
    let Some(dir) = corpus() else { return };
    let files = corpus_files(&dir);
    assert!(files.len() > 40, "{} files", files.len());
    let work = tempfile::tempdir().unwrap();
    let from_warcs = work.path().join("warcs");
    let direct = ingest(&from_warcs, "real", &files, false);
    // Damaged files: reported, the records before the damage indexed (exit 1).
    assert_eq!(
        direct.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&direct.stderr)
    );
    // All files in one run on two threads, and each file in a run of its own on one.
    let (together, apart) = (work.path().join("together"), work.path().join("apart"));
    let out = sketch(&together, &files, 2, &["--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "damaged inputs make sketch exit 1"
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["shards"].as_array().unwrap().len(), files.len());
    for f in &files {
        sketch(&apart, std::slice::from_ref(f), 1, &[]);
        let (a, b) = (shard_of(&together, f), shard_of(&apart, f));
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{}: the shard depends on how the files were grouped",
            f.display()
        );
    }
    let shards: Vec<PathBuf> = files.iter().map(|f| shard_of(&together, f)).collect();
    let from_shards = work.path().join("shards");
    // Committed in two batches under the one label, as shards arriving from a cluster.
    let half = shards.len() / 2;
    let outs: Vec<Output> = [&shards[..half], &shards[half..]]
        .iter()
        .map(|batch| ingest(&from_shards, "real", batch, true))
        .collect();
    for out in &outs {
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The same damage, named by the WARC file and offset.
    let damage = |o: &Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| l.contains("damaged at offset"))
            .map(str::to_string)
            .collect()
    };
    assert!(!damage(&direct).is_empty());
    assert_eq!(
        damage(&direct),
        [damage(&outs[0]), damage(&outs[1])].concat()
    );
    same_index(&from_warcs, &from_shards, "the shared corpus");
}

#[test]
fn shards_that_do_not_fit_are_refused_naming_the_file_and_nothing_is_lost() {
    let corpus = tempfile::tempdir().unwrap();
    common::generate(corpus.path(), 200, 2, 8);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    let (s1, s2) = (sweep_files(corpus.path(), 1), sweep_files(corpus.path(), 2));
    let out = ingest(&db, "sweep-1", &s1, false);
    assert_eq!(out.status.code(), Some(0));
    let before = (export(&db, "jsonl"), sweeps(&db));
    let good = work.path().join("good");
    sketch(&good, &s2, 2, &[]);
    let shard = shard_of(&good, &s2[0]);
    let refused = |shard: &Path, config: Option<&Path>, expect: &str| {
        let mut args = vec![];
        if let Some(c) = config {
            args.extend(["--config".to_string(), s(c)]);
        }
        args.extend(ingest_args(&db, "sweep-2", &[shard.to_path_buf()], true));
        let out = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{expect}: {err}");
        assert!(
            err.contains(&s(shard)),
            "the message names the shard: {err}"
        );
        assert!(err.contains(expect), "expected {expect:?} in: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(
            (export(&db, "jsonl"), sweeps(&db)),
            before,
            "{expect}: a refused shard must change nothing"
        );
    };
    // Truncated (a copy cut in the middle).
    let bytes = std::fs::read(&shard).unwrap();
    let cut = work.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    refused(&cut, None, "not a readable Parquet file");
    // Not Parquet at all.
    let warc = work.path().join("warc.parquet");
    std::fs::copy(&s2[0], &warc).unwrap();
    refused(&warc, None, "not a readable Parquet file");
    // Made with other sketch parameters.
    let other = work.path().join("other.toml");
    std::fs::write(&other, "[sketch]\nsample_target = 256\n").unwrap();
    let odd = work.path().join("odd");
    sketch(&odd, &s2, 2, &["--config", &s(&other)]);
    refused(
        &shard_of(&odd, &s2[0]),
        None,
        "sketch.sample_target: the shard has 256, the index 512",
    );
    // Of another shard format, or not a shard: rewritten with other metadata.
    let rewrite = |name: &str, edit: &dyn Fn(&mut Vec<(String, String)>)| -> PathBuf {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let b =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&shard).unwrap()).unwrap();
        let mut kv: Vec<(String, String)> = b
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .filter(|k| k.key.starts_with("tidemark."))
            .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
            .collect();
        edit(&mut kv);
        let schema = b.schema().clone();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_key_value_metadata(Some(
                kv.into_iter()
                    .map(|(k, v)| parquet::file::metadata::KeyValue::new(k, v))
                    .collect(),
            ))
            .build();
        let path = work.path().join(name);
        let mut w = parquet::arrow::ArrowWriter::try_new(
            std::fs::File::create(&path).unwrap(),
            schema,
            Some(props),
        )
        .unwrap();
        for batch in b.build().unwrap() {
            w.write(&batch.unwrap()).unwrap();
        }
        w.close().unwrap();
        path
    };
    // A shard of format 1 read records as tidemark did before it read them as pywb's
    // indexer does: its captures would differ from its WARC file's.
    let v1 = rewrite("v1.parquet", &|kv| {
        for (k, v) in kv.iter_mut() {
            if k == "tidemark.shard" {
                *v = "1".into();
            }
        }
    });
    refused(
        &v1,
        None,
        "shard format 1; this tidemark reads formats 4 and 5",
    );
    let bare = rewrite("bare.parquet", &|kv| kv.clear());
    refused(&bare, None, "not a tidemark shard");
    // An index that stores texts needs shards that carry them.
    let texts = work.path().join("texts.toml");
    std::fs::write(&texts, "[index]\nstore_texts = true\n").unwrap();
    refused(&shard, Some(&texts), "made without canonical texts");
    // A shard given without --sketches: a hint, not a damaged WARC file.
    let plain = ingest(&db, "sweep-2", std::slice::from_ref(&shard), false);
    assert_eq!(plain.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("give --sketches"),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert_eq!((export(&db, "jsonl"), sweeps(&db)), before);
    // The good shard still goes in, and equals its WARC file.
    let out = ingest(&db, "sweep-2", &[shard.clone()], true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let direct = work.path().join("direct");
    for (k, f) in [(1, &s1), (2, &s2)] {
        let out = ingest(&direct, &format!("sweep-{k}"), f, false);
        assert_eq!(out.status.code(), Some(0));
    }
    same_index(&direct, &db, "after the refusals");
}

#[test]
fn a_killed_shard_ingest_resumes_from_its_shard_or_its_warc_file() {
    let corpus = tempfile::tempdir().unwrap();
    generate_redesign(corpus.path(), 400, 44);
    let work = tempfile::tempdir().unwrap();
    let clean = work.path().join("clean");
    let mut shards = Vec::new();
    let mut window = Vec::new();
    for k in 1..=3 {
        let files = sweep_files(corpus.path(), k);
        let t = std::time::Instant::now();
        let out = ingest(&clean, &format!("sweep-{k}"), &files, false);
        assert_eq!(out.status.code(), Some(0));
        window.push(t.elapsed().as_millis().max(20) as u64);
        let dir = work.path().join(format!("shards-{k}"));
        sketch(&dir, &files, 2, &[]);
        shards.push(files.iter().map(|f| shard_of(&dir, f)).collect::<Vec<_>>());
    }
    let mut rng = tidemark::synth::Rng::new(7);
    let crashy = work.path().join("crashy");
    let (mut kills, mut runs) = (0, 0);
    for k in 1..=3 {
        loop {
            runs += 1;
            assert!(runs < 200, "no progress");
            // Runs alternate between the shards and the WARC files: one input either way.
            let from_shards = runs % 3 != 0;
            let files = if from_shards {
                shards[k - 1].clone()
            } else {
                sweep_files(corpus.path(), k)
            };
            let args = ingest_args(&crashy, &format!("sweep-{k}"), &files, from_shards);
            let delay = Duration::from_millis(rng.below(window[k - 1] as usize) as u64);
            if common::run_or_kill(&args, delay) {
                break;
            }
            kills += 1;
        }
    }
    println!("{kills} kills in {runs} runs");
    same_index(&clean, &crashy, "killed and resumed");
}

#[test]
fn shards_made_for_an_index_with_texts_carry_them_and_history_diffs_agree() {
    let corpus = tempfile::tempdir().unwrap();
    common::generate(corpus.path(), 200, 2, 17);
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("texts.toml");
    std::fs::write(&config, "[index]\nstore_texts = true\n").unwrap();
    let c = s(&config);
    let (from_warcs, from_shards) = (work.path().join("warcs"), work.path().join("shards"));
    for k in 1..=2 {
        let files = sweep_files(corpus.path(), k);
        let label = format!("sweep-{k}");
        let dir = work.path().join(format!("shards-{k}"));
        sketch(&dir, &files, 2, &["--config", &c]);
        for (db, inputs, shards) in [
            (&from_warcs, files.clone(), false),
            (&from_shards, vec![dir.clone()], true),
        ] {
            let mut args = vec!["--config".to_string(), c.clone()];
            args.extend(ingest_args(db, &label, &inputs, shards));
            let out = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    same_index(&from_warcs, &from_shards, "with texts");
    // A URL whose content changed: its word-level diff comes from the stored texts.
    let rows = common::json_lines(&tidemark_ok(&[
        "--db",
        &s(&from_warcs),
        "export",
        "--format",
        "jsonl",
    ]));
    let mut docs: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for r in &rows {
        if let (Some(u), Some(d)) = (r["url"].as_str(), r["doc"].as_u64()) {
            docs.entry(u.to_string()).or_default().push(d);
        }
    }
    let url = docs
        .iter()
        .find(|(_, d)| d.len() == 2 && d[0] != d[1])
        .map(|(u, _)| u.clone())
        .expect("a URL whose content changed");
    let diff = |db: &Path| {
        tidemark_ok(&[
            "--config",
            &c,
            "--db",
            &s(db),
            "history",
            "--diff",
            "--json",
            &url,
        ])
        .stdout
    };
    let (a, b) = (diff(&from_warcs), diff(&from_shards));
    let text = String::from_utf8_lossy(&a).replace("\": \"", "\":\"");
    assert!(text.contains("\"diff\":\""), "no diff in: {text}");
    assert!(a == b, "history --diff differs between the indexes");
}
