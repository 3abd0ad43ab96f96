#!/usr/bin/env bash
# The README's second command: set up, then run every test (same release profile as
# the demo, so RocksDB is built once). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
source tools/browser.sh
source tools/pyenv.sh
source tools/mdbook.sh
# Real sweeps of a real site for tests/llvm_docs.rs: the LLVM and Clang manuals of five
# releases from Debian's packages (~40 MB, downloaded once; the demo's script).
cargo build --release --quiet --bin tidemark-gen
TIDEMARK_LLVM_SWEEPS="$HOME/.cache/tidemark/llvm-sweeps"
bash tools/llvm_sweeps.sh "$TIDEMARK_LLVM_SWEEPS" "$CARGO_TARGET_DIR/release/tidemark-gen"
export TIDEMARK_LLVM_SWEEPS
# The install documented for users (docs/src/deploy.md), from the same build; and the
# minimum Rust version of Cargo.toml: no standard-library API newer than it
# (clippy's incompatible_msrv; an older toolchain cannot be fetched on these machines).
cargo install --locked --quiet --path . --root "$CARGO_TARGET_DIR/install" --bin tidemark
"$CARGO_TARGET_DIR/install/bin/tidemark" --version
if ! cargo clippy --version > /dev/null 2>&1; then
    echo "tidemark test: cargo clippy is missing (rustup component add clippy)" >&2
    exit 1
fi
cargo clippy --release --all-targets --quiet -- -A clippy::all -D clippy::incompatible_msrv
cargo test --release "$@"
