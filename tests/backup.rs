//! `tidemark backup` and `restore` through the real binary on generated sweeps: a backup
//! taken while an ingest runs restores to the index of the snapshot it copied (and that
//! index goes on taking sweeps), a second backup copies only new files, `--verify` finds
//! a flipped byte, and a damaged backup restores nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{generate, ingest_generated, same_index, sweep_files, tidemark, tidemark_ok};
use serde_json::Value;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// `backup --to BACKUPS --json` of the index at `db` with `extra` options.
fn backup_json(db: &Path, backups: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--db", s(db), "backup", "--to", s(backups), "--json"];
    args.extend_from_slice(extra);
    json(&tidemark_ok(&args))
}

/// The sweeps an index holds.
fn sweep_count(db: &Path) -> usize {
    json(&tidemark_ok(&["--db", s(db), "sweeps", "--json"]))
        .as_array()
        .unwrap()
        .len()
}

/// The files of a backup, largest first.
fn largest_files(backup: &Path) -> Vec<PathBuf> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(backup)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| (std::fs::metadata(&p).unwrap().len(), p))
        .collect();
    v.sort();
    v.into_iter().rev().map(|(_, p)| p).collect()
}

#[test]
fn a_backup_taken_during_an_ingest_restores_to_the_snapshot_it_copied() {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path().join("web");
    generate(&web, 2500, 2, 811);
    let (ref1, ref2) = (dir.path().join("ref1"), dir.path().join("ref2"));
    ingest_generated(&web, &ref1, 1, &[]);
    ingest_generated(&web, &ref2, 2, &[]);

    let db = dir.path().join("db");
    let backups = dir.path().join("backups");
    // No snapshot yet: nothing to back up, said as a usage error.
    let none = tidemark(&["--db", s(&db), "backup", "--to", s(&backups)]);
    assert_eq!(none.status.code(), Some(2));
    ingest_generated(&web, &db, 1, &[]);

    // Sweep 2 goes in while the backup is taken.
    let mut args: Vec<String> = vec![
        "--db".into(),
        s(&db).into(),
        "--threads".into(),
        "1".into(),
        "ingest".into(),
        "--sweep".into(),
        "sweep-2".into(),
    ];
    args.extend(sweep_files(&web, 2).iter().map(|f| s(f).to_string()));
    let mut ingest = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let progress = db.join("ingest-progress.json");
    let start = Instant::now();
    while !progress.exists() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(progress.exists(), "the ingest never said it was under way");
    let first = backup_json(&db, &backups, &[]);
    let during = ingest.try_wait().unwrap().is_none();
    let done = ingest.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    // The generated sweep takes seconds to ingest on one thread, the backup of one
    // sweep's index a fraction of that.
    assert!(
        during,
        "the ingest ended before the backup: nothing was shown"
    );
    assert_eq!(first["snapshot"], 1, "{first}");
    assert_eq!(first["already"], false);
    assert!(first["linked"]["files"].as_u64().unwrap() > 0, "{first}");
    assert_eq!(
        first["total"]["bytes"].as_u64().unwrap(),
        first["copied"]["bytes"].as_u64().unwrap() + first["linked"]["bytes"].as_u64().unwrap()
    );

    // Restored: the index of sweep 1, which goes on taking sweep 2 as the original did.
    let restored = dir.path().join("restored");
    let r = json(&tidemark_ok(&[
        "--db",
        s(&restored),
        "restore",
        s(&backups),
        "--json",
    ]));
    assert_eq!(r["snapshot"], 1);
    assert_eq!(sweep_count(&restored), 1);
    same_index(
        &restored,
        &ref1,
        "restored from the backup taken during the ingest",
    );
    assert!(
        restored.join("snapshots").is_dir(),
        "a restored index is published for serve"
    );
    ingest_generated_from(&web, &restored, 2);
    same_index(&restored, &ref2, "restored, then sweep 2 ingested");

    // A second backup keeps the files the first holds that still are the index's.
    let second = backup_json(&db, &backups, &[]);
    assert_eq!(second["snapshot"], 2, "{second}");
    assert!(second["reused"]["files"].as_u64().unwrap() > 0, "{second}");
    assert!(
        second["copied"]["bytes"].as_u64().unwrap() < second["total"]["bytes"].as_u64().unwrap(),
        "{second}"
    );
    let again = backup_json(&db, &backups, &[]);
    assert_eq!(again["already"], true, "{again}");
    let newest = dir.path().join("newest");
    tidemark_ok(&["--db", s(&newest), "restore", s(&backups)]);
    same_index(&newest, &ref2, "restored from the second backup");
    // The older one by number.
    let older = dir.path().join("older");
    tidemark_ok(&["--db", s(&older), "restore", s(&backups), "--backup", "1"]);
    same_index(
        &older,
        &ref1,
        "restored from the first backup by --backup 1",
    );

    let checked = json(&tidemark_ok(&[
        "backup",
        "--to",
        s(&backups),
        "--verify",
        "--json",
    ]));
    assert_eq!(checked.as_array().unwrap().len(), 2, "{checked}");
    for v in checked.as_array().unwrap() {
        assert!(v["problems"].as_array().unwrap().is_empty(), "{v}");
    }

    // --keep 1: only the newest stays.
    let kept = backup_json(&db, &backups, &["--keep", "1"]);
    assert_eq!(kept["removed"], serde_json::json!([1]), "{kept}");
    assert!(!backups.join("0000000001").exists());

    // One backup's folder restores as itself; a backup number the folder lacks is a
    // usage error.
    let single = dir.path().join("single");
    tidemark_ok(&[
        "--db",
        s(&single),
        "restore",
        s(&backups.join("0000000002")),
    ]);
    same_index(&single, &ref2, "restored from one backup's folder");
    let missing = tidemark(&[
        "--db",
        s(&dir.path().join("none")),
        "restore",
        s(&backups),
        "--backup",
        "9",
    ]);
    assert_eq!(missing.status.code(), Some(2));

    // The restored index numbers its snapshots from 1 again; its backups go on in the
    // same folder after the others, and --keep keeps the newest.
    let after_restore = backup_json(&restored, &backups, &["--keep", "2"]);
    assert_eq!(after_restore["number"], 3, "{after_restore}");
    assert_eq!(after_restore["already"], false, "{after_restore}");
    assert_eq!(
        after_restore["removed"],
        serde_json::json!([]),
        "{after_restore}"
    );
    assert!(backups.join("0000000003/CHECKSUMS").exists());
}

/// Ingests sweep `k` of a generated web into `db` as `sweep-k`.
fn ingest_generated_from(web: &Path, db: &Path, k: usize) {
    let mut args: Vec<String> = vec![
        "--db".into(),
        s(db).into(),
        "ingest".into(),
        "--sweep".into(),
        format!("sweep-{k}"),
    ];
    args.extend(sweep_files(web, k).iter().map(|f| s(f).to_string()));
    tidemark_ok(&args.iter().map(|a| a.as_str()).collect::<Vec<_>>());
}

#[test]
fn a_flipped_byte_in_a_backup_is_found_and_restores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path().join("web");
    generate(&web, 300, 1, 812);
    let db = dir.path().join("db");
    ingest_generated(&web, &db, 1, &[]);
    let backups = dir.path().join("backups");
    // Copies: a flipped byte in a hard link would be one in the index too.
    let b = backup_json(&db, &backups, &["--copy"]);
    assert_eq!(b["linked"]["files"], 0, "{b}");
    {
        use std::os::unix::fs::MetadataExt;
        for f in largest_files(Path::new(b["backup"].as_str().unwrap())) {
            assert_eq!(std::fs::metadata(&f).unwrap().nlink(), 1, "{f:?} is shared");
        }
    }
    let backup = PathBuf::from(b["backup"].as_str().unwrap());
    tidemark_ok(&["backup", "--to", s(&backups), "--verify"]);

    let victim = largest_files(&backup).remove(0);
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&victim, &bytes).unwrap();

    let v = tidemark(&["backup", "--to", s(&backups), "--verify"]);
    assert_eq!(v.status.code(), Some(1), "a damaged backup verified");
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(
        err.contains(s(&victim)),
        "the damaged file is not named: {err}"
    );
    assert!(String::from_utf8_lossy(&v.stdout).contains("DAMAGED"));

    let target = dir.path().join("restored");
    let r = tidemark(&["--db", s(&target), "restore", s(&backups)]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains(s(&victim)),
        "the damaged file is not named: {err}"
    );
    assert!(!target.exists(), "a damaged backup left an index behind");
    assert!(!dir.path().join("restored.restoring").exists());

    // The checksums file itself damaged.
    bytes[mid] ^= 0x20;
    std::fs::write(&victim, &bytes).unwrap();
    let sums = backup.join("CHECKSUMS");
    let text = std::fs::read_to_string(&sums).unwrap();
    std::fs::write(&sums, text.replacen("file ", "file 0", 1)).unwrap();
    let v = tidemark(&["backup", "--to", s(&backups), "--verify"]);
    assert_eq!(v.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&v.stderr).contains("CHECKSUMS"));

    // Never over an index.
    let over = tidemark(&["--db", s(&db), "restore", s(&backups)]);
    assert_eq!(over.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&over.stderr).contains("not empty"));
}
