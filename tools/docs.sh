#!/usr/bin/env bash
# Builds the guide: regenerates its reference pages from the code (`tidemark
# reference`), builds the book with mdBook into docs/book, and checks its links.
# Open docs/book/index.html afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
source tools/mdbook.sh
cargo build --release --quiet --bin tidemark
"$CARGO_TARGET_DIR/release/tidemark" reference --out docs/src/reference
"$TIDEMARK_MDBOOK" build docs
python3 tools/check_links.py docs/book --markdown README.md CHANGELOG.md ARCHITECTURE.md
echo "the guide: docs/book/index.html"
