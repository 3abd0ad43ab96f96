//! The guide: its generated reference pages are those the code makes now, the book
//! builds, and none of its links is broken.

mod common;

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn the_reference_pages_are_up_to_date() {
    let dir = Path::new(ROOT).join("docs/src/reference");
    let out = common::tidemark(&[
        "reference",
        "--out",
        dir.to_str().unwrap(),
        "--root",
        ROOT,
        "--check",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // And the check can fail: a page changed on disk is named.
    let copy = tempfile::tempdir().unwrap();
    for p in ["cli.md", "http.md", "tools.md"] {
        std::fs::copy(dir.join(p), copy.path().join(p)).unwrap();
    }
    std::fs::write(copy.path().join("http.md"), "stale\n").unwrap();
    let out = common::tidemark(&[
        "reference",
        "--out",
        copy.path().to_str().unwrap(),
        "--root",
        ROOT,
        "--check",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("http.md is not up to date"), "{said}");
    assert!(!said.contains("tools.md"), "{said}");
}

#[test]
fn the_guide_builds_and_its_links_hold() {
    let mdbook = std::env::var("TIDEMARK_MDBOOK").unwrap_or_else(|_| "mdbook".into());
    if Command::new(&mdbook).arg("--version").output().is_err() {
        // tools/test.sh installs mdBook; CI runs it, so there a missing one is a failure.
        assert!(
            std::env::var_os("CI").is_none(),
            "mdbook is missing in CI (tools/mdbook.sh installs it)"
        );
        eprintln!("SKIPPED: mdbook not found (bash tools/test.sh installs it)");
        return;
    }
    let book = tempfile::tempdir().unwrap();
    let out = Command::new(&mdbook)
        .args(["build", "docs", "--dest-dir"])
        .arg(book.path())
        .current_dir(ROOT)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mdbook build: {log}");
    assert!(
        !log.contains("[ERROR]") && !log.contains("[WARN]"),
        "mdbook build: {log}"
    );
    assert!(book.path().join("reference/cli.html").exists());
    let check = Command::new("python3")
        .arg(Path::new(ROOT).join("tools/check_links.py"))
        .arg(book.path())
        .args(["--markdown", "README.md", "CHANGELOG.md", "ARCHITECTURE.md"])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "broken links in the guide:\n{}{}",
        String::from_utf8_lossy(&check.stderr),
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn the_figures_of_the_readme_and_the_guide_come_from_figures_json() {
    let figures = Path::new(ROOT).join("tools/figures.py");
    let check = |root: &Path| {
        Command::new("python3")
            .arg(&figures)
            .args(["render", "--check", "--root"])
            .arg(root)
            .output()
            .unwrap()
    };
    let out = check(Path::new(ROOT));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The check can fail: a copy whose figures.json says another time is named.
    let copy = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(copy.path().join("docs/src")).unwrap();
    std::fs::copy(
        Path::new(ROOT).join("README.md"),
        copy.path().join("README.md"),
    )
    .unwrap();
    let json = std::fs::read_to_string(Path::new(ROOT).join("docs/figures.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for run in v["records"]["ingest-rd100k"]["runs"]
        .as_array_mut()
        .unwrap()
    {
        run["sweeps"][1]["ingest_seconds"] = serde_json::json!(99.0);
    }
    std::fs::write(copy.path().join("docs/figures.json"), v.to_string()).unwrap();
    let out = check(copy.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("README.md is not up to date"));
}

#[test]
fn a_repository_path_named_in_the_docs_that_does_not_exist_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(
        &page,
        "see `src/no_such_module.rs` and `tools/figures.py`\n",
    )
    .unwrap();
    let out = Command::new("python3")
        .arg(Path::new(ROOT).join("tools/check_links.py"))
        .arg(dir.path())
        .arg("--markdown")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("`src/no_such_module.rs` names no file"),
        "{said}"
    );
    assert!(!said.contains("figures.py"), "{said}");
}
