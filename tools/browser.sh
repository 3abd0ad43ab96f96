#!/usr/bin/env bash
# Debian's Chromium and its WebDriver for the browser tests (the HTML report in
# tests/report.rs, the lost-and-found page in tests/serve.rs). Sourced by tools/test.sh;
# installed when missing and this is root, otherwise those checks say SKIPPED.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "tidemark setup: installing chromium and chromium-driver for the browser tests …" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "tidemark setup: chromium or chromedriver is missing (sudo apt-get install -y chromium chromium-driver); the browser checks will say SKIPPED" >&2
    fi
fi
