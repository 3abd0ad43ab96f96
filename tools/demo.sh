#!/usr/bin/env bash
# The README's first command: set up, build, and run the embedded default job
# (synthetic sweeps from the project's own generator). Extra arguments go to `tidemark demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
cargo run --release --quiet --bin tidemark -- demo "$@"
