#!/usr/bin/env bash
# Load test of `tidemark serve` with oha (crates.io; installed on first use into
# $HOME/.cache/tidemark/tools): 64 connections against a copy of an index, for a CDX
# exact query, a CDX prefix query of 100 lines, whereis and similar — each as fast as it
# goes (closed loop: the throughput), and CDX exact and whereis at a fixed rate (5,000
# requests/s: the latency at that load, corrected for coordinated omission); then the
# same while `tidemark ingest` adds the next sweep to the index being served. Prints
# requests/s, p50 and p99 latency and error responses per scenario and writes them as
# JSON. With --acl-rules N the server applies N access rules (pywb .aclj) made from
# URLs of the index other than the ones asked (a takedown list: mostly exact excludes,
# some blocks and per-user rules), so every answer pays the rule lookups and skips the
# excluded captures it meets. A benchmark, not a test: it asserts nothing.
#
#   bash tools/loadtest.sh --db DIR [--next FILE_OR_DIR… --label LABEL] [--seconds 10]
#                          [--connections 64] [--rate 5000] [--acl-rules N]
#                          [--json OUT.json]
#
# e.g. after `tidemark-gen --out /tmp/big --pages 100000 --sweeps 5 --seed 2026` and
# ingesting sweeps 1-4 into /tmp/big/db:
#   bash tools/loadtest.sh --db /tmp/big/db --next /tmp/big/sweep-05 --label sweep-5
set -euo pipefail
cd "$(dirname "$0")/.."

db="" ; label="" ; seconds=10 ; conns=64 ; rate=5000 ; json_out="" ; next=() ; acl_rules=0
while [ $# -gt 0 ]; do
    case "$1" in
        --db) db="$2"; shift 2 ;;
        --next) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do next+=("$1"); shift; done ;;
        --label) label="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --connections) conns="$2"; shift 2 ;;
        --rate) rate="$2"; shift 2 ;;
        --json) json_out="$2"; shift 2 ;;
        --acl-rules) acl_rules="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "loadtest: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$db" ] || { echo "loadtest: give --db DIR (an index)" >&2; exit 2; }
[ -f "$db/CURRENT" ] || { echo "loadtest: no tidemark index at $db" >&2; exit 2; }
if [ ${#next[@]} -gt 0 ] && [ -z "$label" ]; then
    echo "loadtest: --next needs --label (the sweep's label)" >&2; exit 2
fi

source tools/setup.sh
cargo build --release --quiet --bin tidemark
bin="$CARGO_TARGET_DIR/release/tidemark"
oha="$HOME/.cache/tidemark/tools/bin/oha"
if [ ! -x "$oha" ]; then
    echo "installing oha (the load generator) into $HOME/.cache/tidemark/tools …" >&2
    cargo install oha --locked --quiet --root "$HOME/.cache/tidemark/tools"
fi

work=$(mktemp -d)
server_pid=""
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
echo "copying the index (the ingest phase extends the copy) …" >&2
cp -a "$db" "$work/db"

# What to ask: URLs spread over the index (every k-th capture); those with content for
# similar; each URL's host for the prefix query.
"$bin" --db "$work/db" export > "$work/export.cdxj"
total=$(wc -l < "$work/export.cdxj")
awk -v step="$(( total / 2000 + 1 ))" 'NR % step == 0' "$work/export.cdxj" > "$work/sample.cdxj"

acl_args=()
if [ "$acl_rules" -gt 0 ]; then
    python3 - "$work" "$acl_rules" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
asked = {l.split(" ", 1)[0] for l in open(f"{work}/sample.cdxj")}
keys = sorted({l.split(" ", 1)[0] for l in open(f"{work}/export.cdxj")} - asked)
step = max(1, len(keys) // n)
rules = []
for i, k in enumerate(keys[::step][:n]):
    if i % 10 < 8:
        rules.append(f'{k}### - {{"access": "exclude"}}')
    elif i % 10 == 8:
        rules.append(f'{k} - {{"access": "block"}}')
    else:
        rules.append(f'{k} - {{"access": "allow", "user": "staff"}}')
rules.sort(reverse=True)
open(f"{work}/rules.aclj", "w").write("\n".join(rules) + "\n")
print(f"{len(rules)} access rules of {len(keys)} URLs not asked", file=sys.stderr)
PY
    acl_args=(--acl "$work/rules.aclj")
fi

"$bin" --db "$work/db" serve --listen 127.0.0.1:0 --json "${acl_args[@]}" > "$work/listen" 2> "$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/listen" ] && break; sleep 0.1; done
addr=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"])' "$work/listen")
echo "server at http://$addr" >&2

python3 - "$work" "http://$addr" <<'PY'
import json, sys, urllib.parse
work, base = sys.argv[1], sys.argv[2]
q = lambda s: urllib.parse.quote(s, safe="")
urls, seen, content, hosts = [], set(), [], []
for line in open(f"{work}/sample.cdxj"):
    key, ts, j = line.split(" ", 2)
    v = json.loads(j)
    if key in seen:
        continue
    seen.add(key)
    urls.append(v["url"])
    if "doc" in v and v.get("type") != "revisit":
        content.append(v["url"])
    hosts.append(v["url"].split("/")[2])
def write(name, paths):
    with open(f"{work}/{name}.urls", "w") as f:
        f.write("".join(base + p + "\n" for p in paths))
write("cdx-exact", [f"/tidemark?url={q(u)}" for u in urls])
write("cdx-prefix-100", [f"/tidemark?url={q(h + '/*')}&limit=100" for h in hosts])
write("whereis", [f"/api/whereis?url={q(u)}" for u in urls])
write("similar", [f"/api/similar?url={q(u)}" for u in content])
PY

results="$work/results.jsonl"
: > "$results"
run() { # phase scenario [rate]
    local rate_args=() mode=max
    if [ -n "${3:-}" ]; then rate_args=(-q "$3" --latency-correction); mode="$3/s"; fi
    "$oha" --no-tui --output-format json -c "$conns" -z "${seconds}s" -w "${rate_args[@]}" \
        --urls-from-file "$work/$2.urls" > "$work/oha.json"
    python3 - "$1" "$2" "$mode" "$work/oha.json" >> "$results" <<'PY'
import json, sys
o = json.load(open(sys.argv[4]))
codes = o.get("statusCodeDistribution", {})
bad = sum(n for c, n in codes.items() if not c.startswith("2"))
errors = sum(o.get("errorDistribution", {}).values())
p = o["latencyPercentiles"]
print(json.dumps({"phase": sys.argv[1], "scenario": sys.argv[2], "mode": sys.argv[3],
                  "requests": sum(codes.values()) + errors, "rps": o["summary"]["requestsPerSec"],
                  "p50_ms": p["p50"] * 1e3, "p99_ms": p["p99"] * 1e3, "non_2xx": bad, "errors": errors}))
PY
    tail -1 "$results" >&2
}
ingest_pid=""
still_ingesting() { [ -z "$ingest_pid" ] || kill -0 "$ingest_pid" 2>/dev/null; }
phase() { # name
    for s in cdx-exact cdx-prefix-100 whereis similar; do
        still_ingesting || { echo "(the ingest ended before $s)" >&2; return; }
        run "$1" "$s"
    done
    for s in cdx-exact whereis; do
        still_ingesting || { echo "(the ingest ended before $s at $rate/s)" >&2; return; }
        run "$1" "$s" "$rate"
    done
}
# Warm-up: every URL of every scenario once, unmeasured (a fresh server's block cache
# is cold; the first seconds would measure the disk).
for s in cdx-exact cdx-prefix-100 whereis similar; do
    "$oha" --no-tui --output-format quiet -c 16 -n "$(wc -l < "$work/$s.urls")" --urls-from-file "$work/$s.urls" >/dev/null
done
phase idle

if [ ${#next[@]} -gt 0 ]; then
    echo "ingesting ${next[*]} as $label while the load runs …" >&2
    files=()
    for n in "${next[@]}"; do
        if [ -d "$n" ]; then
            while IFS= read -r f; do files+=("$f"); done < <(find "$n" -name '*.warc.gz' | sort)
        else
            files+=("$n")
        fi
    done
    "$bin" --db "$work/db" ingest --sweep "$label" "${files[@]}" > "$work/ingest.out" 2>&1 &
    ingest_pid=$!
    phase during-ingest
    wait "$ingest_pid" || { echo "loadtest: the ingest failed:" >&2; cat "$work/ingest.out" >&2; exit 1; }
    cat "$work/ingest.out" >&2
fi

python3 - "$results" "$json_out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'phase':<14} {'scenario':<15} {'load':<8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'errors':>7}")
for r in rows:
    print(f"{r['phase']:<14} {r['scenario']:<15} {r['mode']:<8} {r['rps']:>8.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['non_2xx']:>8} {r['errors']:>7}")
if sys.argv[2]:
    json.dump(rows, open(sys.argv[2], "w"), indent=1)
PY
