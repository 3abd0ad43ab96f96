//! The examples of the README and the guide run, and print what the pages show.
//!
//! Every fenced `text` block of `README.md` and `docs/src/*.md` whose first line starts
//! with `$ ` is a transcript: each `$ COMMAND` line is run by bash in a folder that holds
//! the indexes the pages name, and what it prints on standard output must be the lines
//! that follow it, up to the next `$ ` line. `tidemark-demo/` is what `tools/demo.sh`
//! makes (the five llvm-docs sweeps, `tools/llvm_sweeps.sh`, in `tidemark-demo/sweeps`,
//! indexed in `tidemark-demo/index`), `gen-demo/` what `tidemark demo --dir gen-demo`
//! makes (generated sweeps and their index). `curl` examples ask a `tidemark serve` of
//! the generated index, shown at `127.0.0.1:8080`.
//!
//! Volatile output is masked in the pages as trycmd masks it: `[..]` (or `…`) in a line
//! stands for any text, and a line of `...` (or `…`) for any number of lines. A command that writes
//! (`ingest`, `recluster`) runs on a copy of its index.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::server::Server;
use common::tidemark_ok;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A transcript step: the page and line it is on, the command, the lines it shows.
struct Step {
    at: String,
    command: String,
    shown: Vec<String>,
}

/// The transcripts of `page`.
fn steps(page: &Path) -> Vec<Step> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(ROOT)
        .unwrap_or(page)
        .display()
        .to_string();
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((_, line)) = lines.next() {
        if line.trim() != "```text" {
            continue;
        }
        // A block in a list item is indented as its fence is.
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut block = Vec::new();
        for (n, l) in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            block.push((n + 1, l.strip_prefix(indent).unwrap_or(l)));
        }
        if !block.first().is_some_and(|(_, l)| l.starts_with("$ ")) {
            continue;
        }
        for (n, l) in block {
            match l.strip_prefix("$ ") {
                Some(cmd) => out.push(Step {
                    at: format!("{name}:{n}"),
                    command: cmd.to_string(),
                    shown: Vec::new(),
                }),
                None => out.last_mut().unwrap().shown.push(l.to_string()),
            }
        }
    }
    out
}

/// Whether `line` is shown as `pattern` (`[..]`: any text).
fn line_matches(pattern: &str, line: &str) -> bool {
    let pattern = pattern.replace('…', "[..]");
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == *line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || !line[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `got` is shown as `shown` (`...` lines: any number of lines).
fn matches(shown: &[String], got: &[&str]) -> bool {
    match shown.first() {
        None => got.is_empty(),
        Some(s) if s.trim() == "..." || s.trim() == "…" => {
            (0..=got.len()).any(|k| matches(&shown[1..], &got[k..]))
        }
        Some(s) => {
            !got.is_empty()
                && line_matches(s.trim_end(), got[0].trim_end())
                && matches(&shown[1..], &got[1..])
        }
    }
}

/// The folder the examples run in, made once.
fn workspace() -> Option<&'static PathBuf> {
    static W: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    W.get_or_init(|| {
        let sweeps = common::llvm_sweeps()?;
        let w = tempfile::tempdir().unwrap().keep();
        let demo = w.join("tidemark-demo");
        std::fs::create_dir_all(&demo).unwrap();
        std::os::unix::fs::symlink(&sweeps, demo.join("sweeps")).unwrap();
        common::ingest_llvm(&sweeps, &demo.join("index"));
        tidemark_ok(&["demo", "--dir", w.join("gen-demo").to_str().unwrap()]);
        // `tidemark` on the PATH is this build.
        let bin = w.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tidemark"), bin.join("tidemark")).unwrap();
        Some(w)
    })
    .as_ref()
}

/// Runs one step in the workspace (or in a copy of it, for a command that writes).
fn run(w: &Path, step: &Step, server: &mut Option<Server>) -> Vec<String> {
    let mut command = step.command.clone();
    let mut dir = w.to_path_buf();
    if command.contains(" ingest ") || command.contains(" recluster ") {
        let copy = tempfile::tempdir().unwrap().keep();
        let out = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", w.display()))
            .arg(&copy)
            .output()
            .unwrap();
        assert!(out.status.success());
        dir = copy;
    }
    let mut base = None;
    if command.contains("127.0.0.1:8080") {
        let s = server.get_or_insert_with(|| {
            Server::start(
                &w.join("gen-demo/index"),
                &[],
                &["--archive", w.join("gen-demo").to_str().unwrap()],
            )
        });
        command = command.replace("127.0.0.1:8080", &s.addr);
        base = Some(s.addr.clone());
    }
    let path = format!(
        "{}:{}",
        w.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-c", &command])
        .current_dir(&dir)
        .env("PATH", path)
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).to_string();
    if let Some(addr) = base {
        text = text.replace(&addr, "127.0.0.1:8080");
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // A blank line at the end is not shown.
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

#[test]
fn the_examples_of_the_readme_and_the_guide_print_what_the_pages_show() {
    let Some(w) = workspace() else { return };
    let mut pages = vec![Path::new(ROOT).join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs/src"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    let mut server = None;
    let (mut ran, mut wrong) = (0, Vec::new());
    for page in &pages {
        for step in steps(page) {
            ran += 1;
            let got = run(w, &step, &mut server);
            let got_ref: Vec<&str> = got.iter().map(String::as_str).collect();
            if !matches(&step.shown, &got_ref) {
                wrong.push(format!(
                    "{}: $ {}\n--- the page shows:\n{}\n--- it prints:\n{}\n",
                    step.at,
                    step.command,
                    step.shown.join("\n"),
                    got.join("\n")
                ));
            }
        }
    }
    assert!(ran >= 20, "only {ran} examples found");
    assert!(
        wrong.is_empty(),
        "{} of {ran} examples print something else:\n\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_mask_matches_only_what_it_stands_for() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(matches(&s(&["a [..] c"]), &["a b c"]));
    assert!(!matches(&s(&["a [..] c"]), &["a b d"]));
    assert!(matches(&s(&["x", "...", "z"]), &["x", "1", "2", "z"]));
    assert!(matches(&s(&["x", "...", "z"]), &["x", "z"]));
    assert!(!matches(&s(&["x", "z"]), &["x", "y", "z"]));
    assert!(!matches(&s(&["x"]), &["x", "extra"]));
    assert!(matches(
        &s(&["took [..] s, [..] pages"]),
        &["took 1.2 s, 40 pages"]
    ));
    assert!(matches(
        &s(&["== …/x.warc: 1 records"]),
        &["== a/b/x.warc: 1 records"]
    ));
    assert!(matches(&s(&["a", "…"]), &["a", "b", "c"]));
}
