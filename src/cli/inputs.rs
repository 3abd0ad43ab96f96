//! The WARC/ARC files a command reads: paths given (a directory stands for its WARC and
//! ARC files, recursively, in sorted order) and `--files-from FILE` (one path per line,
//! `-` for standard input) — a crawl of 80,000 files does not fit on a command line.

use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Input options shared by the commands that read WARC files.
#[derive(clap::Args, Debug)]
pub struct Inputs {
    /// WARC/ARC files (.warc, .warc.gz, .arc, .arc.gz; compression is detected from the
    /// bytes), or directories: their WARC and ARC files, recursively, in sorted order.
    #[arg(value_name = "FILE|DIR", required_unless_present = "files_from")]
    pub files: Vec<PathBuf>,
    /// Read more paths from this file, one per line (`-`: standard input); they follow
    /// the paths given as arguments.
    #[arg(long, value_name = "LIST")]
    pub files_from: Option<PathBuf>,
}

/// Names of the files a directory stands for.
fn is_archive_name(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    [".warc", ".warc.gz", ".arc", ".arc.gz"]
        .iter()
        .any(|ext| n.ends_with(ext))
}

/// Names of the shards (`tidemark sketch`) a directory stands for.
fn is_shard_name(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

fn walk(dir: &Path, wanted: fn(&Path) -> bool, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("cannot read directory {}: {e}", dir.display()))?;
        let p = e.path();
        if p.is_dir() {
            walk(&p, wanted, out)?;
        } else if wanted(&p) {
            out.push(p);
        }
    }
    Ok(())
}

impl Inputs {
    /// The files, in order: each argument (a directory expanded, sorted), then the list.
    /// An error names the path that is missing, or the directory without WARC files.
    pub fn resolve(&self) -> Result<Vec<PathBuf>, String> {
        self.resolve_as(
            is_archive_name,
            "WARC or ARC files (.warc, .warc.gz, .arc, .arc.gz)",
        )
    }

    /// As [`Inputs::resolve`], for shards: a directory stands for its `.parquet` files.
    pub fn resolve_shards(&self) -> Result<Vec<PathBuf>, String> {
        self.resolve_as(
            is_shard_name,
            "shards (.parquet, made by `tidemark sketch`)",
        )
    }

    fn resolve_as(&self, wanted: fn(&Path) -> bool, what: &str) -> Result<Vec<PathBuf>, String> {
        let mut given: Vec<PathBuf> = self.files.clone();
        if let Some(list) = &self.files_from {
            let reader: Box<dyn BufRead> = if list.as_os_str() == "-" {
                Box::new(std::io::stdin().lock())
            } else {
                Box::new(std::io::BufReader::new(
                    std::fs::File::open(list)
                        .map_err(|e| format!("--files-from {}: {e}", list.display()))?,
                ))
            };
            for (i, line) in reader.lines().enumerate() {
                let line = line
                    .map_err(|e| format!("--files-from {} line {}: {e}", list.display(), i + 1))?;
                let line = line.trim_end_matches('\r');
                if !line.trim().is_empty() {
                    given.push(PathBuf::from(line));
                }
            }
        }
        let mut out = Vec::with_capacity(given.len());
        for p in given {
            if p.is_dir() {
                let mut found = Vec::new();
                walk(&p, wanted, &mut found)?;
                if found.is_empty() {
                    return Err(format!("{} is a directory without {what}", p.display()));
                }
                found.sort();
                out.extend(found);
            } else if p.is_file() {
                out.push(p);
            } else {
                return Err(format!("no such file: {}", p.display()));
            }
        }
        if out.is_empty() {
            return Err("no input files: give FILE|DIR arguments or --files-from LIST".into());
        }
        Ok(out)
    }
}
