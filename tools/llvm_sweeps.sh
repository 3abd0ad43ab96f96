#!/usr/bin/env bash
# Real sweeps of a real site for the demo: the LLVM and Clang manuals of five releases
# (13, 14, 15, 16, 19; 2022-2025) from Debian's llvm-N-doc and clang-N-doc packages,
# written by `tidemark-gen --site` as five crawl sweeps of https://llvm.org/docs/ and
# https://clang.llvm.org/docs/, each dated its release's day. The packages (~40 MB) are
# downloaded with apt-get download and extracted, not installed. Deterministic: the same
# packages give byte-identical sweeps.
#
#   bash tools/llvm_sweeps.sh OUT_DIR GEN_BINARY     -> OUT_DIR/s1 … OUT_DIR/s5
#
# Exit 3 when the packages cannot be had (no apt, no root for its lists, no network):
# the demo then falls back to generated sweeps.
set -euo pipefail
out=$1
gen=$2
# The releases' upstream dates (13.0.1, 14.0.6, 15.0.6, 16.0.6, 19.1.7).
releases="13:2022-02-02 14:2022-06-24 15:2022-11-29 16:2023-06-14 19:2025-01-14"
cache="$HOME/.cache/tidemark/llvm-docs"
mkdir -p "$cache/debs" "$out"
command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || {
    echo "tidemark demo: no apt-get/dpkg-deb here: the real sweeps need Debian's packages" >&2
    exit 3
}
need=()
for r in $releases; do
    v=${r%%:*}
    for p in llvm-$v-doc clang-$v-doc; do
        ls "$cache/debs/${p}"_*.deb >/dev/null 2>&1 || need+=("$p")
    done
done
if [ ${#need[@]} -gt 0 ]; then
    echo "tidemark demo: downloading ${need[*]} (~40 MB, once) …" >&2
    if ! (cd "$cache/debs" && apt-get download "${need[@]}" >/dev/null 2>&1); then
        [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 || true
        (cd "$cache/debs" && apt-get download "${need[@]}" >/dev/null 2>&1) || {
            echo "tidemark demo: apt-get download ${need[*]} failed (no network, or no root to update apt's lists)" >&2
            exit 3
        }
    fi
fi
i=0
for r in $releases; do
    v=${r%%:*}
    date=${r#*:}
    i=$((i + 1))
    tree="$cache/trees/$v"
    if [ ! -d "$tree" ]; then
        rm -rf "$tree.tmp"
        mkdir -p "$tree.tmp"
        for d in "$cache/debs/llvm-$v-doc"_*.deb "$cache/debs/clang-$v-doc"_*.deb; do
            dpkg-deb -x "$d" "$tree.tmp"
        done
        mv "$tree.tmp" "$tree"
    fi
    if [ ! -d "$out/s$i" ]; then
        "$gen" --out "$out/s$i.tmp" --start "$date" \
            --site "$tree/usr/share/doc/llvm-$v-doc/html=https://llvm.org/docs/" \
            --site "$tree/usr/share/doc/clang-$v/html=https://clang.llvm.org/docs/" >/dev/null
        mv "$out/s$i.tmp" "$out/s$i"
        echo "sweep s$i: the LLVM $v and Clang $v manuals as of $date: $(ls "$out/s$i"/*.warc.gz)" >&2
    fi
done
