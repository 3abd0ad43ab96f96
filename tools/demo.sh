#!/usr/bin/env bash
# The README's first command: set up, build, read real sweeps of a real site (the LLVM
# and Clang manuals of five releases from Debian's packages: tools/llvm_sweeps.sh) and
# show what tidemark finds: a template change, a page's history, a moved page. Where the
# packages cannot be had (no apt, no network), or with arguments (passed on), the
# offline demo on generated sweeps (`tidemark demo`). Writes ./tidemark-demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
cargo build --release --quiet --bin tidemark --bin tidemark-gen
bin="$CARGO_TARGET_DIR/release"
dir=tidemark-demo
if [ $# -gt 0 ]; then
    exec "$bin/tidemark" demo "$@"
fi
if ! bash tools/llvm_sweeps.sh "$dir/sweeps" "$bin/tidemark-gen"; then
    echo "tidemark demo: the real sweeps could not be made; the offline demo on generated sweeps instead" >&2
    exec "$bin/tidemark" demo
fi
rm -rf "$dir/index"
for i in 1 2 3 4 5; do
    "$bin/tidemark" --db "$dir/index" ingest --sweep "s$i" "$dir/sweeps/s$i"
done
show() {
    echo
    echo "\$ tidemark --db $dir/index $*"
    "$bin/tidemark" --db "$dir/index" "$@"
}
show sweeps
echo
echo "What five releases of the manuals did, the template changes first (the report's first lines):"
show report | head -24
echo
echo "A page whose own text did not change when LLVM 16's manual got a new theme (s4):"
show history https://llvm.org/docs/tutorial/LangImpl01.html
echo
echo "A page whose URL went away, found by its content under a new name:"
show whereis https://llvm.org/docs/AMDGPU/gfx1030_vdst_473a69.html
cat <<EOT

The binary is $bin/tidemark. To look around in a browser (lost and found, history,
similar; replay of the archived pages), serve the index and open http://127.0.0.1:8080/ :

  $bin/tidemark --db $dir/index serve --archive $dir/sweeps
EOT
