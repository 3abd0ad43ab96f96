#!/usr/bin/env bash
# Shared set-up for tools/demo.sh and tools/test.sh: installs what a fresh Debian
# machine lacks for the build, and points cargo at one target directory outside the
# clone so RocksDB's C++ (12-25 minutes on 2 cores) is compiled once per machine.
set -euo pipefail

need_pkgs=()
# The rocksdb crate runs bindgen, which loads libclang at build time.
if command -v dpkg >/dev/null 2>&1; then
    dpkg -s libclang-dev >/dev/null 2>&1 || need_pkgs+=(libclang-dev)
elif [ -z "${LIBCLANG_PATH:-}" ] && ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib*/libclang.so* >/dev/null 2>&1; then
    echo "tidemark setup: libclang not found; install your system's libclang development package or set LIBCLANG_PATH" >&2
    exit 1
fi
command -v c++ >/dev/null 2>&1 || need_pkgs+=(g++)
command -v make >/dev/null 2>&1 || need_pkgs+=(make)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = "0" ]; then
        echo "tidemark setup: installing ${need_pkgs[*]} …" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    else
        echo "tidemark setup: missing ${need_pkgs[*]}; run:  sudo apt-get update && sudo apt-get install -y ${need_pkgs[*]}" >&2
        exit 1
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "tidemark setup: cargo not found; install the Rust toolchain (https://rustup.rs) first" >&2
    exit 1
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tidemark/target}"
mkdir -p "$CARGO_TARGET_DIR"
if [ ! -d "$CARGO_TARGET_DIR/release/build" ] || ! ls "$CARGO_TARGET_DIR"/release/build/librocksdb-sys-*/out >/dev/null 2>&1; then
    echo "tidemark setup: first build on this machine compiles RocksDB from source (12-25 minutes on 2 cores); later builds reuse $CARGO_TARGET_DIR" >&2
fi
