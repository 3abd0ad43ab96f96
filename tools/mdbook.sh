#!/usr/bin/env bash
# mdBook, which builds the guide in docs/ (tests/docs.rs builds it and checks its
# links). Sourced by tools/test.sh and tools/docs.sh; installed from crates.io once per
# machine (about 4 minutes on 2 cores) into cargo's bin directory.
set -euo pipefail
MDBOOK_VERSION=0.4.52
if ! mdbook --version 2>/dev/null | grep -q "v$MDBOOK_VERSION"; then
    echo "tidemark setup: installing mdbook $MDBOOK_VERSION from crates.io for the guide (once per machine) …" >&2
    # Its own target directory: the shared one holds tidemark's release build.
    CARGO_TARGET_DIR="$HOME/.cache/tidemark/mdbook-target" \
        cargo install mdbook --locked --version "$MDBOOK_VERSION" --quiet
fi
TIDEMARK_MDBOOK="$(command -v mdbook || echo "${CARGO_HOME:-$HOME/.cargo}/bin/mdbook")"
export TIDEMARK_MDBOOK
