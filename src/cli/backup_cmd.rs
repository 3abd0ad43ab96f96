//! `tidemark backup --to DIR` (and `--verify`), `tidemark restore DIR --db NEW`.

use std::io::Write;
use std::path::PathBuf;

use tidemark::backup::{self, BackupError, BackupOptions};

use super::index_cmds::byte_bar;
use super::{stdout, Globals, EXIT_DAMAGE, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// Backup folder (created if absent): one backup per published snapshot in it,
    /// DIR/NNNNNNNNNN with its CHECKSUMS; a second backup copies only new files.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Take no backup: check every file of the backups in DIR against its checksum
    /// (exit 1 naming each damaged file).
    #[arg(long)]
    pub verify: bool,
    /// With --verify: only backup N (the number of its folder in DIR).
    #[arg(long, value_name = "N", requires = "verify")]
    pub backup: Option<u64>,
    /// Copy every file, even where a hard link to the index's would do (a backup on the
    /// index's own file system that must not share its files).
    #[arg(long, conflicts_with = "verify")]
    pub copy: bool,
    /// After the backup, remove all but the newest N backups in DIR.
    #[arg(long, value_name = "N", conflicts_with = "verify", value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: Option<u64>,
    /// Print JSON: {"backup","number","snapshot","total","copied","linked","reused","already","removed"}
    /// (each count {"files","bytes"}); with --verify a list of {"backup","number","snapshot","total","problems"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// A backup folder (its newest backup is restored) or one backup in it.
    #[arg(value_name = "DIR")]
    pub from: PathBuf,
    /// Backup N of the folder (the number of its folder) rather than the newest.
    #[arg(long, value_name = "N")]
    pub backup: Option<u64>,
    /// Print JSON: {"backup","snapshot","db","total"}.
    #[arg(long)]
    pub json: bool,
}

/// The exit status of a backup error (an index error goes on to the usual handling).
fn failed(cmd: &str, e: BackupError) -> anyhow::Result<u8> {
    let code = match &e {
        BackupError::Index(_) => {
            return Err(match e {
                BackupError::Index(i) => i.into(),
                _ => unreachable!(),
            })
        }
        BackupError::NoSnapshot(_)
        | BackupError::Busy(_)
        | BackupError::NoBackup(_)
        | BackupError::NotEmpty(_)
        | BackupError::Unknown(_) => EXIT_USAGE,
        BackupError::Damaged(_) | BackupError::Io { .. } => EXIT_DAMAGE,
    };
    eprintln!("tidemark {cmd}: {e}");
    Ok(code)
}

/// Bytes done of the total on the progress bar, if there is one.
fn shown(bar: &Option<indicatif::ProgressBar>, done: u64, total: u64) {
    if let Some(b) = bar {
        b.set_length(total.max(1));
        b.set_position(done);
    }
}

pub fn run_backup(g: &Globals, a: BackupArgs) -> anyhow::Result<u8> {
    let bar = byte_bar(a.json);
    let show = |done, total| shown(&bar, done, total);
    let mut out = stdout();
    if a.verify {
        let checked = match backup::verify(&a.to, a.backup, show) {
            Ok(c) => c,
            Err(e) => return failed("backup --verify", e),
        };
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        let bad = checked.iter().any(|v| !v.problems.is_empty());
        if a.json {
            serde_json::to_writer_pretty(&mut out, &checked)?;
            writeln!(out)?;
        } else {
            for v in &checked {
                let state = if v.problems.is_empty() {
                    "ok"
                } else {
                    "DAMAGED"
                };
                writeln!(
                    out,
                    "{}: snapshot {}, {} files, {:.1} MB: {state}",
                    v.backup.display(),
                    v.snapshot,
                    v.total.files,
                    v.total.bytes as f64 / 1e6
                )?;
            }
        }
        out.flush()?;
        for v in &checked {
            for p in &v.problems {
                eprintln!("tidemark backup --verify: {p}");
            }
        }
        return Ok(if bad { EXIT_DAMAGE } else { EXIT_OK });
    }
    let opts = BackupOptions {
        copy: a.copy,
        keep: a.keep.map(|k| k as usize),
    };
    let started = std::time::Instant::now();
    let s = match backup::backup(&g.config.index.path, &a.to, &opts, show) {
        Ok(s) => s,
        Err(e) => return failed("backup", e),
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if a.json {
        serde_json::to_writer_pretty(&mut out, &s)?;
        writeln!(out)?;
    } else if s.already {
        writeln!(
            out,
            "{} already holds snapshot {}: nothing to do",
            s.backup.display(),
            s.snapshot
        )?;
    } else {
        let mb = |b: u64| b as f64 / 1e6;
        writeln!(
            out,
            "snapshot {} backed up to {}: {} files, {:.1} MB ({:.1} MB copied, {:.1} MB linked to the index's files, {:.1} MB kept from earlier backups) in {:.1} s",
            s.snapshot,
            s.backup.display(),
            s.total.files,
            mb(s.total.bytes),
            mb(s.copied.bytes),
            mb(s.linked.bytes),
            mb(s.reused.bytes),
            started.elapsed().as_secs_f64()
        )?;
        if !s.removed.is_empty() {
            let n: Vec<String> = s.removed.iter().map(|n| n.to_string()).collect();
            writeln!(out, "removed the backups of snapshots {}", n.join(", "))?;
        }
    }
    Ok(EXIT_OK)
}

pub fn run_restore(g: &Globals, a: RestoreArgs) -> anyhow::Result<u8> {
    let bar = byte_bar(a.json);
    let show = |done, total| shown(&bar, done, total);
    let db = &g.config.index.path;
    let r = match backup::restore(&a.from, a.backup, db, &g.config, show) {
        Ok(r) => r,
        Err(e) => return failed("restore", e),
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut out = stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "restored snapshot {} from {} into {}: {} files, {:.1} MB, every checksum matched",
            r.snapshot,
            r.backup.display(),
            r.db.display(),
            r.total.files,
            r.total.bytes as f64 / 1e6
        )?;
    }
    Ok(EXIT_OK)
}
