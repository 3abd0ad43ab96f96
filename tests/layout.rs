//! The layout's arrows point one way: no module of `src/` imports a sibling that
//! imports it back, directly or around a circle (`tools/module_cycles.py`, as
//! ARCHITECTURE.md says).

use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn no_two_modules_import_each_other() {
    let out = Command::new("python3")
        .arg("tools/module_cycles.py")
        .arg("src")
        .current_dir(ROOT)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "modules importing each other:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn the_check_finds_a_pair_that_imports_each_other() {
    let src = tempfile::tempdir().unwrap();
    let write = |p: &str, text: &str| {
        let path = src.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write("a.rs", "use crate::b::{x, y};\npub fn z() {}\n");
    write("b/mod.rs", "pub mod inner;\npub fn x() {}\npub fn y() {}\n");
    write("b/inner.rs", "pub fn w() { super::super::a::z() }\n");
    assert_eq!(check_names(src.path(), "a <-> b"), (Some(1), true));
}

/// The check's exit status on `src`, and whether its output names the circle.
fn check_names(src: &std::path::Path, circle: &str) -> (Option<i32>, bool) {
    let out = Command::new("python3")
        .arg("tools/module_cycles.py")
        .arg(src)
        .current_dir(ROOT)
        .output()
        .expect("python3");
    let named = String::from_utf8_lossy(&out.stdout).contains(circle);
    (out.status.code(), named)
}

#[test]
fn the_check_finds_a_longer_circle() {
    let src = tempfile::tempdir().unwrap();
    let write = |p: &str, text: &str| std::fs::write(src.path().join(p), text).unwrap();
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    write("a.rs", "pub fn x() { crate::b::y() }\n");
    write("b.rs", "pub fn y() { super::c::z() }\n");
    write("c.rs", "pub fn z() { crate::a::x() }\n");
    assert_eq!(check_names(src.path(), "a -> b -> c -> a"), (Some(1), true));
}
