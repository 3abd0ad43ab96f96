#!/usr/bin/env bash
# The Python programs the tests drive (pywb, cdx_toolkit, an independent link-format
# parser for the service; DuckDB for the Parquet export; PySpark, which bundles Spark,
# for the map stage on Spark; prometheus_client, whose parser reads /metrics), in a
# virtual environment beside the shared target directory: created once per machine,
# reused after. Sourced by tools/test.sh; exports TIDEMARK_PYTHON for the tests.
set -euo pipefail

py_dir="${TIDEMARK_VENV:-$HOME/.cache/tidemark/venv}"
# Pinned: pywb 2.9.1 is the version the acceptance test names.
py_reqs="pywb==2.9.1 cdx_toolkit==0.9.39 LinkHeader==0.4.3 duckdb==2.0.0 pyspark==4.3.0 prometheus_client==0.26.0"
if ! command -v python3 >/dev/null 2>&1; then
    echo "tidemark setup: python3 not found; the service tests that drive pywb and cdx_toolkit will say SKIPPED" >&2
    return 0 2>/dev/null || exit 0
fi
if [ ! -x "$py_dir/bin/python" ] || [ "$(cat "$py_dir/.tidemark-reqs" 2>/dev/null)" != "$py_reqs" ]; then
    echo "tidemark setup: creating the Python test environment in $py_dir ($py_reqs) …" >&2
    if ! python3 -m venv "$py_dir" 2>/dev/null; then
        if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$py_dir"
        else
            echo "tidemark setup: python3 -m venv failed; install python3-venv" >&2
            exit 1
        fi
    fi
    "$py_dir/bin/pip" install -q --disable-pip-version-check $py_reqs
    echo "$py_reqs" > "$py_dir/.tidemark-reqs"
fi
export TIDEMARK_PYTHON="$py_dir/bin/python"
# PySpark runs Spark on a JVM: Java 17 or later (Debian 12's default JRE is 17).
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "tidemark setup: installing a Java runtime for the Spark test …" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null
    else
        echo "tidemark setup: no Java 17+; the Spark test will say SKIPPED (install default-jre-headless)" >&2
    fi
fi
