//! A power cut during an ingest: the sweeps are ingested one command each under a layer
//! (`tests/power_loss/unsynced.c`, loaded with LD_PRELOAD) that records what each fsync
//! made durable; at a random moment the ingest is killed and the index folder is put back
//! to what a cut at that moment leaves on disk: files as of their last sync (empty if
//! never synced), folders' names as of their last sync (none of a folder never synced).
//! Writes no sync covered are lost, so are commands that ended before the cut but left
//! their work unsynced. Then the killed command runs again, and the sweeps after it: the
//! index equals a clean run's (both exports, the sweeps, the report). 20 cuts.

mod common;

use std::collections::HashMap;
use std::io::BufRead;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, UNIX_EPOCH};

use common::{generate, same_index_with, sweep_files};

/// An inode: its number and birth time (numbers are reused after a deletion).
type Inode = (u64, u64);

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// The layer, built from its source with the C compiler RocksDB's build needs anyway.
fn build_layer(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/power_loss/unsynced.c");
    let so = dir.join("unsynced.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if built {
        return Some(so);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must build the power-cut layer (cc)"
    );
    eprintln!("SKIPPED: no C compiler to build tests/power_loss/unsynced.c");
    None
}

fn inode(m: &std::fs::Metadata) -> Inode {
    let born = m
        .created()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    (m.ino(), born)
}

/// What the log says was durable at the cut: each inode's last synced copy, each
/// folder's last synced entries (name, inode, is a folder).
#[derive(Default)]
struct Durable {
    files: HashMap<Inode, PathBuf>,
    folders: HashMap<Inode, Vec<(String, Inode, bool)>>,
}

fn read_log(journal: &Path) -> Durable {
    let mut d = Durable::default();
    let Ok(f) = std::fs::File::open(journal.join("log")) else {
        return d;
    };
    for line in std::io::BufReader::new(f).lines() {
        let line = line.unwrap();
        let w: Vec<&str> = line.splitn(4, ' ').collect();
        assert_ne!(
            w[0], "S",
            "sync() or syncfs() called: not modelled by the layer"
        );
        let key = (w[1].parse().unwrap(), w[2].parse().unwrap());
        assert_ne!(
            key.1, 0,
            "the file system keeps no birth times: inodes are ambiguous"
        );
        let copy = PathBuf::from(w[3]);
        match w[0] {
            "F" => {
                d.files.insert(key, copy);
            }
            "D" => {
                let text = std::fs::read_to_string(&copy).unwrap();
                let entries = text
                    .lines()
                    .map(|l| {
                        let e: Vec<&str> = l.splitn(4, ' ').collect();
                        let key = (e[0].parse().unwrap(), e[1].parse().unwrap());
                        (e[3].to_string(), key, e[2] == "d")
                    })
                    .collect();
                d.folders.insert(key, entries);
            }
            other => panic!("unknown log line {other}"),
        }
    }
    d
}

/// Rebuilds folder `key` at `at` as the cut left it (the root starts empty: a folder
/// never synced has no entries, a file never synced no bytes).
fn rebuild(d: &Durable, key: Inode, at: &Path) -> (usize, usize) {
    std::fs::create_dir(at).unwrap();
    let (mut files, mut lost) = (0, 0);
    for (name, k, folder) in d.folders.get(&key).map(|v| v.as_slice()).unwrap_or(&[]) {
        let p = at.join(name);
        if *folder {
            let (f, l) = rebuild(d, *k, &p);
            files += f;
            lost += l;
        } else if let Some(copy) = d.files.get(k) {
            std::fs::copy(copy, &p).unwrap();
            files += 1;
        } else {
            std::fs::write(&p, b"").unwrap();
            lost += 1;
        }
    }
    (files, lost)
}

/// Runs `args` under the layer; kills it at `cut` (from now) unless it ends first
/// (then it must succeed). True when it ended.
fn run_until(layer: &Path, root: &Path, journal: &Path, args: &[String], cut: Duration) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .env("LD_PRELOAD", layer)
        .env("UNSYNCED_ROOT", root)
        .env("UNSYNCED_JOURNAL", journal)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run tidemark");
    let t = Instant::now();
    while t.elapsed() < cut {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(
                status.success(),
                "tidemark {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    false
}

#[test]
fn a_power_cut_at_random_moments_then_the_same_command_again_equals_a_clean_run() {
    let work = tempfile::tempdir().unwrap();
    let Some(layer) = build_layer(work.path()) else {
        return;
    };
    let corpus = work.path().join("corpus");
    let sweeps = 3;
    generate(&corpus, 300, sweeps, 41);
    // Odd cuts spill postings every few dozen docs, so cuts land in spills too.
    let config = work.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let small = work.path().join("small-buffer.toml");
    std::fs::write(&small, "[ingest]\npostings_buffer_mb = 1\n").unwrap();
    let ingest = |db: &Path, cfg: &Path, k: usize| -> Vec<String> {
        let mut a = vec!["--db".into(), s(db), "--config".into(), s(cfg)];
        a.extend(["ingest".into(), "--sweep".into(), format!("sweep-{k}")]);
        a.extend(sweep_files(&corpus, k).iter().map(|f| s(f)));
        a
    };
    // The clean run, and how long each command takes under the layer.
    let clean = work.path().join("clean");
    std::fs::create_dir(&clean).unwrap();
    let journal = work.path().join("journal-clean");
    std::fs::create_dir(&journal).unwrap();
    let mut window = Vec::new();
    for k in 1..=sweeps {
        let t = Instant::now();
        let forever = Duration::from_secs(600);
        assert!(run_until(
            &layer,
            &clean,
            &journal,
            &ingest(&clean.join("db"), &config, k),
            forever
        ));
        window.push(t.elapsed());
    }
    let total: Duration = window.iter().sum();
    let mut rng = tidemark::synth::Rng::new(7);
    let (mut lost_files, mut mid_command) = (0, 0);
    for cut in 0..20 {
        let round = work.path().join(format!("cut-{cut}"));
        let (root, journal) = (round.join("root"), round.join("journal"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&journal).unwrap();
        let root_key = inode(&std::fs::metadata(&root).unwrap());
        let cfg = if cut % 2 == 1 { &small } else { &config };
        let db = root.join("db");
        // The cut lands anywhere in the three commands, or (rarely) after them.
        let mut left =
            Duration::from_millis(rng.below(total.as_millis() as usize * 21 / 20) as u64);
        let mut killed = None;
        for k in 1..=sweeps {
            let t = Instant::now();
            if !run_until(&layer, &root, &journal, &ingest(&db, cfg, k), left) {
                killed = Some(k);
                break;
            }
            left = left.saturating_sub(t.elapsed());
        }
        // The power comes back: the folder as the cut left it.
        let durable = read_log(&journal);
        std::fs::rename(&root, round.join("before-cut")).unwrap();
        let (_, lost) = rebuild(&durable, root_key, &root);
        lost_files += lost;
        // The same command again, then the sweeps after it.
        if let Some(k) = killed {
            mid_command += 1;
            for k in k..=sweeps {
                let out = common::tidemark(
                    &ingest(&db, cfg, k)
                        .iter()
                        .map(|a| a.as_str())
                        .collect::<Vec<_>>(),
                );
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "cut {cut} in sweep {k}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        same_index_with(
            &clean.join("db"),
            &db,
            &format!("cut {cut} (in sweep {killed:?})"),
            &[],
        );
        std::fs::remove_dir_all(&round).unwrap();
    }
    println!(
        "20 cuts ({mid_command} inside a command); {lost_files} files never synced came back empty; every index equals the clean run's"
    );
}
