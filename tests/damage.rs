//! A damaged index, tried as a user meets it: every column family with its values
//! truncated, emptied or flipped, or a key of the wrong shape among its keys, then the
//! commands that read that family. A value or key of the wrong shape is a corruption
//! error naming the family and the key, exit status 2; nothing panics, whatever the
//! damage (a flipped value may still have the right shape: then any clean exit will do).

mod common;

use std::path::{Path, PathBuf};

use common::{generate, ingest_generated, sweep_files, tidemark, tidemark_ok};
use rocksdb::{Options, DB};

/// A generated index of two sweeps with stored texts, the files of a third sweep, and a
/// URL with several captures and a multi-doc cluster.
struct Pristine {
    _dir: tempfile::TempDir,
    db: PathBuf,
    config: PathBuf,
    next_sweep: Vec<PathBuf>,
    /// Sweep 3's first file without payload digests: every text is canonicalized and
    /// looked up by fingerprint (a digest would settle known payloads first).
    no_digests: PathBuf,
    url: String,
}

fn pristine() -> Pristine {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 300, 3, 13);
    let config = dir.path().join("texts.toml");
    std::fs::write(&config, "[index]\nstore_texts = true\n").unwrap();
    let db = dir.path().join("db");
    ingest_generated(&corpus, &db, 2, &["--config", config.to_str().unwrap()]);
    // A URL whose content changed between the sweeps (two docs, history with a diff).
    let url = docs_by_url(&db)
        .iter()
        .find(|(_, d)| d.len() >= 2 && d[0] != d[1])
        .map(|(u, _)| u.clone())
        .expect("a URL whose content changed");
    let next_sweep = sweep_files(&corpus, 3);
    let mut warc = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&next_sweep[0]).unwrap()),
        &mut warc,
    )
    .unwrap();
    let text = String::from_utf8_lossy(&warc).to_string();
    assert!(text.contains("WARC-Payload-Digest: "));
    let stripped: String = text
        .split_inclusive("\r\n")
        .filter(|l| !l.starts_with("WARC-Payload-Digest: "))
        .collect();
    // And other bytes with the same canonical text (tag names are case-blind), so the
    // content is found by its text's fingerprint, not by its payload's digest.
    assert!(stripped.contains("<html"));
    let stripped = stripped.replace("<html", "<HTML");
    let no_digests = dir.path().join("no-digests.warc");
    std::fs::write(&no_digests, stripped).unwrap();
    Pristine {
        next_sweep,
        no_digests,
        _dir: dir,
        db,
        config,
        url,
    }
}

/// The docs of each URL's captures, in export order (`export --format jsonl`).
fn docs_by_url(db: &Path) -> std::collections::BTreeMap<String, Vec<u64>> {
    let out = tidemark(&["--db", db.to_str().unwrap(), "export", "--format", "jsonl"]);
    assert!(out.status.success());
    let mut docs_of: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for r in &common::json_lines(&out) {
        if let (Some(u), Some(d)) = (r["url"].as_str(), r["doc"].as_u64()) {
            docs_of.entry(u.to_string()).or_default().push(d);
        }
    }
    docs_of
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Every value one byte shorter.
    Truncate,
    /// Every value empty.
    Empty,
    /// Every value one byte longer.
    Extend,
    /// Every byte of every value inverted (the shape may survive).
    Flip,
    /// One key of the wrong shape where the commands' scans pass.
    Key,
}

/// Copies the index and damages family `cf` in the copy.
fn damaged_copy(p: &Pristine, cf: &str, damage: Damage, at: &Path) -> PathBuf {
    let copy = at.join(format!("{cf}-{damage:?}"));
    copy_dir(&p.db, &copy);
    let cfs = DB::list_cf(&Options::default(), &copy).unwrap();
    let db = DB::open_cf(&Options::default(), &copy, &cfs).unwrap();
    let h = db.cf_handle(cf).unwrap();
    let entries: Vec<(Box<[u8]>, Box<[u8]>)> = db
        .iterator_cf(h, rocksdb::IteratorMode::Start)
        .map(|e| e.unwrap())
        .collect();
    assert!(!entries.is_empty(), "{cf} is empty in the pristine index");
    match damage {
        Damage::Key => {
            // Under the prefix the reads scan: the URL's SURT, its host, a root, a doc.
            let k: Vec<u8> = match cf {
                "captures" | "host_sweeps" => {
                    let surt = surt_of(&p.url);
                    let cut = if cf == "host_sweeps" {
                        surt.find(')').unwrap() + 1
                    } else {
                        surt.len()
                    };
                    [&surt.as_bytes()[..cut], &[0, b'2', b'0']].concat()
                }
                // Scanned by a doc or root prefix: a short key under every one.
                "members" | "doc_captures" => {
                    for (k, _) in &entries {
                        db.put_cf(h, [&k[..8], &[1, 2, 3][..]].concat(), b"")
                            .unwrap();
                    }
                    Vec::new()
                }
                _ => entries[0].0[..3].to_vec(),
            };
            if !k.is_empty() {
                db.put_cf(h, k, b"").unwrap();
            }
        }
        _ => {
            for (k, v) in &entries {
                let nv: Vec<u8> = match damage {
                    Damage::Truncate => v[..v.len().saturating_sub(1)].to_vec(),
                    Damage::Empty => Vec::new(),
                    Damage::Extend => [&v[..], &[7][..]].concat(),
                    Damage::Flip => v.iter().map(|b| !b).collect(),
                    Damage::Key => unreachable!(),
                };
                db.put_cf(h, k, nv).unwrap();
            }
        }
    }
    db.flush_cf(h).unwrap();
    copy
}

/// Copies an index: its files and its postings' runs (not its snapshots).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        } else if e.file_name() == "postings" {
            copy_dir(&e.path(), &to.join("postings"));
        }
    }
}

fn surt_of(url: &str) -> String {
    tidemark::url::surt(url)
}

/// The commands that read family `cf` (those that write go last: they change the copy).
fn readers(cf: &str, p: &Pristine) -> Vec<Vec<String>> {
    let u = p.url.clone();
    let ingest = {
        let mut a = vec!["ingest".to_string(), "--sweep".into(), "sweep-3".into()];
        a.extend(p.next_sweep.iter().map(|f| f.display().to_string()));
        a
    };
    let cmds: Vec<Vec<&str>> = match cf {
        "meta" => vec![vec!["stats"]],
        "sweeps" => vec![vec!["sweeps", "--json"], vec!["stats"]],
        "files" => vec![vec!["sweeps", "--json"]],
        "docs" => vec![vec!["cluster", &u]],
        "sketches" => vec![vec!["similar", &u]],
        "captures" => vec![vec!["export"], vec!["stats"], vec!["history", &u]],
        "doc_captures" => vec![vec!["cluster", &u], vec!["similar", &u]],
        "parents" => vec![vec!["stats"], vec!["export"]],
        "members" => vec![vec!["cluster", &u]],
        "host_sweeps" => vec![vec!["whereis", &u]],
        "texts" => vec![vec!["history", "--diff", &u]],
        "edges" => vec![vec!["recluster", "--threshold", "0.6"]],
        _ => vec![],
    };
    let mut out: Vec<Vec<String>> = cmds
        .into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect();
    if matches!(cf, "files" | "payloads" | "url_last" | "sweeps") {
        out.push(ingest);
    }
    if cf == "fingerprints" {
        out.push(vec![
            "ingest".into(),
            "--sweep".into(),
            "resent".into(),
            p.no_digests.display().to_string(),
        ]);
    }
    out
}

#[test]
fn every_damaged_column_family_is_a_corruption_error_naming_it_never_a_panic() {
    let p = pristine();
    let work = tempfile::tempdir().unwrap();
    let families = [
        "meta",
        "sweeps",
        "files",
        "fingerprints",
        "payloads",
        "docs",
        "sketches",
        "captures",
        "doc_captures",
        "url_last",
        "edges",
        "parents",
        "members",
        "host_sweeps",
        "texts",
    ];
    // Families whose values are empty by design: growing them is the damage.
    let keyed_only = ["members"];
    // An empty value means "not kept" (an index written before it was).
    let optional_value = ["host_sweeps"];
    let scanned = [
        "sweeps",
        "files",
        "captures",
        "parents",
        "edges",
        "members",
        "host_sweeps",
        "doc_captures",
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for cf in families {
        let mut damages = vec![Damage::Flip];
        if keyed_only.contains(&cf) {
            damages.push(Damage::Extend);
        } else if optional_value.contains(&cf) {
            damages.extend([Damage::Truncate, Damage::Extend]);
        } else {
            damages.extend([Damage::Truncate, Damage::Empty]);
        }
        if scanned.contains(&cf) {
            damages.push(Damage::Key);
        }
        for damage in damages {
            let copy = damaged_copy(&p, cf, damage, work.path());
            let mut named = false;
            let mut seen = Vec::new();
            for cmd in readers(cf, &p) {
                let mut args = vec![
                    "--db".to_string(),
                    copy.display().to_string(),
                    "--config".into(),
                    p.config.display().to_string(),
                ];
                args.extend(cmd.iter().cloned());
                let out = tidemark(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
                let err = String::from_utf8_lossy(&out.stderr).to_string();
                let code = out.status.code();
                if err.contains("panicked") || !matches!(code, Some(0..=2)) {
                    failures.push(format!("{cf} {damage:?} {cmd:?}: exit {code:?}: {err}"));
                }
                let names_it = err.contains(&format!("data corruption in {cf}: key "))
                    || (cf == "meta" && err.contains("is not a tidemark index"));
                if names_it {
                    if code != Some(2) {
                        failures.push(format!("{cf} {damage:?} {cmd:?}: exit {code:?}, not 2"));
                    }
                    named = true;
                }
                seen.push(format!("{cmd:?} → {code:?} {}", err.trim()));
                checked += 1;
            }
            if !matches!(damage, Damage::Flip) && !named {
                failures.push(format!(
                    "{cf} {damage:?}: no command named the damage:\n  {}",
                    seen.join("\n  ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 60, "only {checked} commands ran");
}

/// The postings' files (runs and manifest, beside RocksDB's): a run with a flipped byte,
/// cut short or missing, a manifest edited or cut: the commands that read postings
/// (`similar`, the next ingest) exit 2 naming the file; nothing panics.
#[test]
fn damaged_postings_files_are_errors_naming_the_file_never_a_panic() {
    let p = pristine();
    let work = tempfile::tempdir().unwrap();
    let runs = |db: &Path| -> Vec<PathBuf> {
        let mut r: Vec<PathBuf> = std::fs::read_dir(db.join("postings"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "run"))
            .collect();
        r.sort();
        r
    };
    assert!(
        !runs(&p.db).is_empty(),
        "the pristine index has postings runs"
    );
    type Harm = fn(&Path, &[PathBuf]) -> &'static str;
    let harms: [(&str, Harm); 5] = [
        ("flipped", |_, r| {
            let mut b = std::fs::read(&r[0]).unwrap();
            let mid = b.len() / 3;
            b[mid] ^= 0x40;
            std::fs::write(&r[0], b).unwrap();
            "checksum"
        }),
        ("cut", |_, r| {
            let b = std::fs::read(&r[0]).unwrap();
            std::fs::write(&r[0], &b[..b.len() - 5]).unwrap();
            "not a postings run"
        }),
        ("missing", |_, r| {
            std::fs::remove_file(&r[0]).unwrap();
            "No such file"
        }),
        ("manifest edited", |db, _| {
            let m = db.join("postings/MANIFEST");
            let t = std::fs::read_to_string(&m)
                .unwrap()
                .replacen("mark ", "mark 1", 1);
            std::fs::write(&m, t).unwrap();
            "MANIFEST"
        }),
        ("manifest cut", |db, _| {
            let m = db.join("postings/MANIFEST");
            let t = std::fs::read(&m).unwrap();
            std::fs::write(&m, &t[..t.len() / 2]).unwrap();
            "MANIFEST"
        }),
    ];
    for (name, harm) in harms {
        let copy = work.path().join(name.replace(' ', "-"));
        copy_dir(&p.db, &copy);
        let want = harm(&copy, &runs(&copy));
        for cmd in readers("sketches", &p).into_iter().chain([{
            let mut a = vec!["ingest".to_string(), "--sweep".into(), "sweep-3".into()];
            a.extend(p.next_sweep.iter().map(|f| f.display().to_string()));
            a
        }]) {
            let mut args = vec!["--db".to_string(), copy.display().to_string()];
            args.extend(["--config".into(), p.config.display().to_string()]);
            args.extend(cmd.iter().cloned());
            let out = tidemark(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{name} {cmd:?}: {err}");
            assert_eq!(out.status.code(), Some(2), "{name} {cmd:?}: {err}");
            assert!(
                err.contains("postings") && err.contains(want),
                "{name} {cmd:?}: {err}"
            );
        }
    }
}

/// A first ingest killed while RocksDB was creating the index's families leaves a
/// directory with some of them, or only RocksDB's `default` one: the next ingest takes it
/// up as a new index. A RocksDB database of someone else's, with data, is still refused.
#[test]
fn a_half_created_index_is_taken_up_and_a_foreign_database_refused() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 20, 1, 8);
    let files: Vec<String> = sweep_files(&corpus, 1)
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let half = dir.path().join("half");
    {
        let mut o = Options::default();
        o.create_if_missing(true);
        let mut db = DB::open(&o, &half).unwrap();
        db.create_cf("sweeps", &Options::default()).unwrap();
    }
    let mut args = vec!["--db", half.to_str().unwrap(), "ingest", "--sweep", "s1"];
    args.extend(files.iter().map(|f| f.as_str()));
    tidemark_ok(&args);
    let out = tidemark_ok(&["--db", half.to_str().unwrap(), "stats"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("sweeps 1"));

    let foreign = dir.path().join("foreign");
    {
        let mut o = Options::default();
        o.create_if_missing(true);
        let db = DB::open(&o, &foreign).unwrap();
        db.put(b"their key", b"their value").unwrap();
    }
    let mut args = vec!["--db", foreign.to_str().unwrap(), "ingest", "--sweep", "s1"];
    args.extend(files.iter().map(|f| f.as_str()));
    let out = tidemark(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(err.contains("is not a tidemark index"), "{err}");
    // Untouched: no family of ours added to it.
    assert_eq!(
        DB::list_cf(&Options::default(), &foreign).unwrap(),
        vec!["default".to_string()]
    );
    let db = DB::open_default(&foreign).unwrap();
    assert_eq!(
        db.get(b"their key").unwrap().as_deref(),
        Some(&b"their value"[..])
    );
}

/// A sketch stored against a base doc whose sketch is gone: reading it is a corruption
/// error naming the family and the doc's key (exit 2), never a panic or a wrong answer.
#[test]
fn a_sketch_whose_base_is_gone_is_a_corruption_error_naming_it() {
    let p = pristine();
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("no-bases");
    copy_dir(&p.db, &copy);
    // The newest doc of a URL whose content changed, stored against another doc
    // (format byte 5); then every sketch stored whole (format 4) removed.
    let docs_of = docs_by_url(&copy);
    let cfs = DB::list_cf(&Options::default(), &copy).unwrap();
    let db = DB::open_cf(&Options::default(), &copy, &cfs).unwrap();
    let h = db.cf_handle("sketches").unwrap();
    let format = |d: u64| db.get_cf(h, d.to_be_bytes()).unwrap().map(|v| v[0]);
    let url = docs_of
        .iter()
        .find(|(_, d)| d.len() >= 2 && d[0] != d[1] && format(*d.iter().max().unwrap()) == Some(5))
        .map(|(u, _)| u.clone())
        .expect("a changed URL whose newest sketch is stored against another doc");
    let whole: Vec<Box<[u8]>> = db
        .iterator_cf(h, rocksdb::IteratorMode::Start)
        .map(|e| e.unwrap())
        .filter(|(_, v)| v.first() == Some(&4))
        .map(|(k, _)| k)
        .collect();
    assert!(!whole.is_empty());
    for k in whole {
        db.delete_cf(h, k).unwrap();
    }
    db.flush_cf(h).unwrap();
    drop(db);
    for cmd in [vec!["similar", url.as_str()], vec!["whereis", url.as_str()]] {
        let mut args = vec!["--db", copy.to_str().unwrap()];
        args.extend(cmd.iter());
        let out = tidemark(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{cmd:?}: {err}");
        if cmd[0] == "similar" {
            assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
            assert!(
                err.contains("data corruption in sketches: key ")
                    && err.contains("which has no sketch"),
                "{cmd:?}: {err}"
            );
        }
    }
}

/// An index of the previous layout (schema 14: SURT keys not yet pywb's) is refused with the version found and what to do,
/// not misread.
#[test]
fn an_index_of_an_older_schema_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 40, 1, 5);
    let db = dir.path().join("db");
    ingest_generated(&corpus, &db, 1, &[]);
    {
        let cfs = DB::list_cf(&Options::default(), &db).unwrap();
        let rdb = DB::open_cf(&Options::default(), &db, &cfs).unwrap();
        let meta = rdb.cf_handle("meta").unwrap();
        rdb.put_cf(meta, b"schema_version", 15u32.to_be_bytes())
            .unwrap();
    }
    let more = sweep_files(&corpus, 1)[0].display().to_string();
    for cmd in [&["stats"][..], &["ingest", "--sweep", "x", &more][..]] {
        let mut args = vec!["--db", db.to_str().unwrap()];
        args.extend_from_slice(cmd);
        let out = tidemark(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains("has schema version 15; this tidemark reads version 18")
                && err.contains("before release 0.2.0")
                && err.contains("into a new --db"),
            "{cmd:?}: {err}"
        );
    }
}

/// Damage below the values — bytes of the index's table files overwritten on disk — is
/// caught by RocksDB's block checksums and reported as a damaged index (exit 2), not a
/// failed operation and never a panic.
#[test]
fn damaged_table_files_are_a_damaged_index() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    generate(&corpus, 200, 1, 9);
    let db = dir.path().join("db");
    ingest_generated(&corpus, &db, 1, &[]);
    let mut damaged = 0;
    for e in std::fs::read_dir(&db).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            let mut b = std::fs::read(&p).unwrap();
            if b.len() > 4096 {
                // Inside the data blocks, before the index and footer at the end.
                let at = b.len() / 4;
                for x in &mut b[at..at + 64] {
                    *x = !*x;
                }
                std::fs::write(&p, b).unwrap();
                damaged += 1;
            }
        }
    }
    assert!(damaged > 0, "no table file to damage");
    let out = tidemark(&["--db", db.to_str().unwrap(), "export"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("data corruption") && !err.contains("panicked"),
        "{err}"
    );
}
