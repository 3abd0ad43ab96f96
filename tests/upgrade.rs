//! `tidemark upgrade` and the indexes of released schemas kept in `tests/fixtures/`:
//! each is opened by this build, upgraded, and reads as a fresh ingest of the same WARC
//! files does. A change of the index's format without its migration fails here.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{corpus, tidemark, tidemark_ok};

/// The fixtures: (file, schema, sweeps as (label, WARC files of the shared corpus)).
const FIXTURES: &[(&str, u32, &[(&str, &[&str])])] = &[(
    "index-0.2.0.tar.zst",
    16,
    &[
        (
            "2014-03-25a",
            &["ukwa-discovery__BL-20140325121225068-00000-32090~opera~8443.warc.gz"],
        ),
        (
            "2014-03-25b",
            &["ukwa-discovery__BL-20140325122341434-00000-32090~opera~8443.warc.gz"],
        ),
    ],
)];

/// Unpacks a fixture (a zstd-compressed tar of an `index/` folder) into `dir`.
fn unpack(fixture: &Path, dir: &Path) {
    let bytes = zstd::decode_all(std::fs::File::open(fixture).unwrap()).unwrap();
    let mut tar = Command::new("tar")
        .args(["-x", "-C"])
        .arg(dir)
        .stdin(Stdio::piped())
        .spawn()
        .expect("tar");
    tar.stdin.take().unwrap().write_all(&bytes).unwrap();
    assert!(tar.wait().unwrap().success());
}

/// What a user reads of two indexes is the same: both exports, the report, and the
/// sweeps (their files by name: the fixture was made where the corpus had another path).
fn same_reading(a: &Path, b: &Path, what: &str) {
    let read = |db: &Path, args: &[&str]| {
        let mut all = vec!["--db", db.to_str().unwrap()];
        all.extend_from_slice(args);
        tidemark_ok(&all).stdout
    };
    for args in [
        &["export", "--format", "cdxj"][..],
        &["export", "--format", "jsonl"],
        &["report", "--format", "json"],
    ] {
        let x = read(a, args);
        assert!(!x.is_empty(), "{what}: {args:?} is empty");
        assert!(x == read(b, args), "{what}: {args:?} differ");
    }
    let sweeps = |db: &Path| {
        let mut v: serde_json::Value =
            serde_json::from_slice(&read(db, &["sweeps", "--json"])).unwrap();
        for s in v.as_array_mut().unwrap() {
            for f in s["files"].as_array_mut().unwrap() {
                let name = Path::new(f.as_str().unwrap()).file_name().unwrap();
                *f = name.to_string_lossy().into();
            }
        }
        v
    };
    assert_eq!(sweeps(a), sweeps(b), "{what}: the sweeps differ");
}

#[test]
fn every_released_index_upgrades_to_what_a_fresh_ingest_reads() {
    let Some(warcs) = corpus() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (file, schema, sweeps) in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        unpack(&root.join(file), dir.path());
        let old = dir.path().join("index");
        let db = old.to_str().unwrap();
        let u: serde_json::Value =
            serde_json::from_slice(&tidemark_ok(&["--db", db, "upgrade", "--json"]).stdout)
                .unwrap();
        assert_eq!(u["from"], *schema, "{file}: {u}");
        // Again: nothing left to do.
        let again: serde_json::Value =
            serde_json::from_slice(&tidemark_ok(&["--db", db, "upgrade", "--json"]).stdout)
                .unwrap();
        assert_eq!(again["from"], again["to"], "{file}: {again}");
        assert_eq!(again["steps"], serde_json::json!([]), "{file}");

        let fresh = dir.path().join("fresh");
        for (label, files) in *sweeps {
            let mut args = vec!["--db", fresh.to_str().unwrap(), "ingest", "--sweep", label];
            let paths: Vec<String> = files
                .iter()
                .map(|f| warcs.join(f).display().to_string())
                .collect();
            args.extend(paths.iter().map(|p| p.as_str()));
            tidemark_ok(&args);
        }
        same_reading(&old, &fresh, file);
    }
}

#[test]
fn upgrade_without_an_index_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = tidemark(&["--db", dir.path().join("none").to_str().unwrap(), "upgrade"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no tidemark index"));
}

/// An upgrade killed (SIGKILL) at 10 points of its run, then run again, ends in the index
/// an upgrade that was not killed makes; the upgraded 0.2.0 index keeps links from its
/// next sweep on (its earlier sweeps' WARC files are not read again).
#[test]
fn an_upgrade_killed_anywhere_finishes_when_run_again() {
    let Some(warcs) = corpus() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let (file, _, _) = FIXTURES[0];
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    std::fs::create_dir(&clean).unwrap();
    unpack(&root.join(file), &clean);
    let clean = clean.join("index");
    let started = std::time::Instant::now();
    tidemark_ok(&["--db", clean.to_str().unwrap(), "upgrade"]);
    let took = started.elapsed();
    let mut killed = 0;
    for i in 0..10u32 {
        let at = dir.path().join(format!("k{i}"));
        std::fs::create_dir(&at).unwrap();
        unpack(&root.join(file), &at);
        let db = at.join("index");
        let args: Vec<String> = vec!["--db".into(), db.display().to_string(), "upgrade".into()];
        if !common::run_or_kill(&args, took * i / 10) {
            killed += 1;
        }
        let again: serde_json::Value = serde_json::from_slice(
            &tidemark_ok(&["--db", db.to_str().unwrap(), "upgrade", "--json"]).stdout,
        )
        .unwrap();
        assert_eq!(again["to"], tidemark::index::SCHEMA_VERSION, "{again}");
        same_reading(&db, &clean, &format!("killed at {i}/10 of the upgrade"));
    }
    eprintln!("{killed} of 10 upgrades killed before they ended ({took:?} each)");
    assert!(
        killed >= 3,
        "only {killed} upgrades were killed before they ended"
    );
    // Links from the next sweep on.
    let config = tidemark::config::Config::default();
    let params = tidemark::index::Index::open_read_only(&clean, &config)
        .unwrap()
        .link_params()
        .unwrap();
    assert_eq!((params.window, params.from_sweep), (8, 3));
    // A file of pages with links (the fixture's own are ingested already).
    let third = warcs.join("cc-iawebcommons__link-extraction-test.warc");
    tidemark_ok(&[
        "--db",
        clean.to_str().unwrap(),
        "ingest",
        "--sweep",
        "again",
        third.to_str().unwrap(),
    ]);
    let index = tidemark::index::Index::open_read_only(&clean, &config).unwrap();
    let mut by_sweep = std::collections::BTreeMap::<u32, usize>::new();
    index
        .links()
        .for_each(|k, _| {
            *by_sweep.entry(k.sweep).or_default() += 1;
            Ok(true)
        })
        .unwrap();
    assert_eq!(
        by_sweep.keys().copied().collect::<Vec<_>>(),
        [3],
        "{by_sweep:?}"
    );
    // And by the page linked.
    assert!(index.inbound().of_sweep_built(3).unwrap());
    assert!(!index.inbound().of_sweep_built(2).unwrap());
}

/// An index of schema 17 (each sweep's links kept, not yet by the page linked) is brought
/// to 18 by `upgrade`: each sweep's `inbound` and `anchor_targets` built from its links.
/// Before, it is refused with the advice to upgrade; after, what the pages of each sweep
/// say about a URL (`inlinks`, `related`, `whereis`) reads as in the index ingested by
/// this build.
#[test]
fn a_schema_17_index_gets_each_sweeps_links_by_target() {
    let dir = tempfile::tempdir().unwrap();
    let gen = common::tidemark_gen(&[
        "--out",
        dir.path().to_str().unwrap(),
        "--pages",
        "300",
        "--hosts",
        "2",
        "--sweeps",
        "3",
        "--topics",
        "6",
        "--seed",
        "9",
        "--json",
    ]);
    assert!(gen.status.success());
    let db = dir.path().join("db");
    common::ingest_generated(dir.path(), &db, 3, &[]);
    let d = db.to_str().unwrap();
    let export = tidemark_ok(&["--db", d, "export", "--format", "jsonl"]).stdout;
    let mut urls: Vec<String> = String::from_utf8_lossy(&export)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["url"].to_string())
        .map(|u| u.trim_matches('"').to_string())
        .collect();
    urls.sort();
    urls.dedup();
    let sample: Vec<&String> = urls.iter().step_by(urls.len() / 25 + 1).collect();
    let answers = || {
        let mut all = Vec::new();
        for u in &sample {
            for sweep in ["sweep-1", "sweep-2", "sweep-3"] {
                for cmd in [&["inlinks", "--json"][..], &["related", "--json"]] {
                    let mut args = vec!["--db", d];
                    args.extend_from_slice(cmd);
                    args.extend(["--sweep", sweep, u.as_str()]);
                    let out = tidemark(&args);
                    all.push((out.status.code(), out.stdout));
                }
            }
            all.push((
                Some(0),
                tidemark_ok(&["--db", d, "whereis", "--json", u]).stdout,
            ));
        }
        all
    };
    let before = answers();
    assert!(before.iter().filter(|a| a.0 == Some(0)).count() > 60);
    {
        use rocksdb::{Options, DB};
        let cfs = DB::list_cf(&Options::default(), &db).unwrap();
        let mut rdb = DB::open_cf(&Options::default(), &db, &cfs).unwrap();
        rdb.drop_cf("inbound").unwrap();
        rdb.drop_cf("anchor_targets").unwrap();
        let meta = rdb.cf_handle("meta").unwrap();
        rdb.put_cf(meta, b"schema_version", 17u32.to_be_bytes())
            .unwrap();
    }
    let refused = tidemark(&["--db", d, "inlinks", &sample[0]]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("schema version 17") && err.contains("upgrade"),
        "{err}"
    );
    let u: serde_json::Value =
        serde_json::from_slice(&tidemark_ok(&["--db", d, "upgrade", "--json"]).stdout).unwrap();
    assert_eq!(
        (u["from"].as_u64(), u["to"].as_u64()),
        (Some(17), Some(18)),
        "{u}"
    );
    assert!(u["steps"][0].as_str().unwrap().contains("inbound"), "{u}");
    let index =
        tidemark::index::Index::open_read_only(&db, &tidemark::config::Config::default()).unwrap();
    for sweep in 1..=3 {
        assert!(
            index.inbound().of_sweep_built(sweep).unwrap(),
            "sweep {sweep}"
        );
    }
    drop(index);
    assert!(answers() == before, "answers differ after the upgrade");
}
