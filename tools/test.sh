#!/usr/bin/env bash
# The README's second command: set up, then run every test (same release profile as
# the demo, so RocksDB is built once). Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
source tools/browser.sh
source tools/pyenv.sh
source tools/mdbook.sh
cargo test --release "$@"
