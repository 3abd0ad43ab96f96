#!/usr/bin/env bash
# Load test of `tidemark serve` with wrk (Debian's package): 64 connections on 2 threads
# against a copy of an index, for a CDX exact query, a CDX prefix query of 100 lines,
# whereis and similar; then the same while `tidemark ingest` adds the next sweep to the
# index being served. Prints requests/s, p50 and p99 latency and error responses per
# scenario, and writes them as JSON. A benchmark, not a test: it asserts nothing.
#
#   bash tools/loadtest.sh --db DIR [--next FILE_OR_DIR… --label LABEL] [--seconds 10]
#                          [--connections 64] [--json OUT.json]
#
# e.g. after `tidemark-gen --out /tmp/big --pages 100000 --sweeps 5 --seed 2026` and
# ingesting sweeps 1-4 into /tmp/big/db:
#   bash tools/loadtest.sh --db /tmp/big/db --next /tmp/big/sweep-05 --label sweep-5
set -euo pipefail
cd "$(dirname "$0")/.."

db="" ; label="" ; seconds=10 ; conns=64 ; json_out="" ; next=()
while [ $# -gt 0 ]; do
    case "$1" in
        --db) db="$2"; shift 2 ;;
        --next) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do next+=("$1"); shift; done ;;
        --label) label="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --connections) conns="$2"; shift 2 ;;
        --json) json_out="$2"; shift 2 ;;
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
if ! command -v wrk >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
    else
        echo "loadtest: install wrk (sudo apt-get install -y wrk)" >&2; exit 1
    fi
fi

work=$(mktemp -d)
trap 'kill $server_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
echo "copying the index (the ingest phase extends the copy) …" >&2
cp -a "$db" "$work/db"

# Paths to ask: URLs spread over the index (every k-th capture), those with content for
# similar, one host per URL for the prefix query.
"$bin" --db "$work/db" export > "$work/export.cdxj"
total=$(wc -l < "$work/export.cdxj")
step=$(( total / 2000 + 1 ))
awk -v step="$step" 'NR % step == 0' "$work/export.cdxj" > "$work/sample.cdxj"
python3 - "$work" <<'EOF'
import json, sys, urllib.parse
work = sys.argv[1]
q = lambda s: urllib.parse.quote(s, safe="")
lines = [l.split(" ", 2) for l in open(f"{work}/sample.cdxj")]
urls, seen, content, hosts = [], set(), [], []
for key, ts, j in lines:
    v = json.loads(j)
    if key in seen:
        continue
    seen.add(key)
    urls.append(v["url"])
    if "doc" in v and v.get("type") != "revisit":
        content.append(v["url"])
    hosts.append(v["url"].split("/")[2])
def write(name, paths):
    with open(f"{work}/{name}.paths", "w") as f:
        f.write("\n".join(paths) + "\n")
write("cdx-exact", [f"/tidemark?url={q(u)}" for u in urls])
write("cdx-prefix-100", [f"/tidemark?url={q(h + '/*')}&limit=100" for h in hosts])
write("whereis", [f"/api/whereis?url={q(u)}" for u in urls])
write("similar", [f"/api/similar?url={q(u)}" for u in content])
EOF
cat > "$work/paths.lua" <<'EOF'
local paths = {}
for line in io.lines(os.getenv("TIDEMARK_PATHS")) do paths[#paths + 1] = line end
local i = math.random(#paths)
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
EOF

"$bin" --db "$work/db" serve --listen 127.0.0.1:0 --json > "$work/listen" 2> "$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/listen" ] && break; sleep 0.1; done
addr=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"])' "$work/listen")
echo "server at http://$addr (snapshot of $(basename "$db"))" >&2

results="$work/results.jsonl"
: > "$results"
run() { # phase scenario
    local out
    out=$(TIDEMARK_PATHS="$work/$2.paths" wrk -t2 -c"$conns" -d"${seconds}s" --latency -s "$work/paths.lua" "http://$addr" 2>&1)
    python3 - "$1" "$2" <<EOF >> "$results"
import json, re, sys
out = """$out"""
def ms(s):
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v * 1000 if u == "s" else v
lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
req = int(re.search(r"(\d+) requests in", out).group(1))
bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
errs = re.search(r"Socket errors:.*", out)
print(json.dumps({"phase": sys.argv[1], "scenario": sys.argv[2], "requests": req, "rps": rps,
                  "p50_ms": ms(lat["50"]), "p99_ms": ms(lat["99"]),
                  "non_2xx": int(bad.group(1)) if bad else 0,
                  "socket_errors": errs.group(0) if errs else None}))
EOF
    tail -1 "$results" >&2
}
for s in cdx-exact cdx-prefix-100 whereis similar; do run idle "$s"; done

if [ ${#next[@]} -gt 0 ]; then
    echo "ingesting ${next[*]} as $label while the load runs …" >&2
    files=()
    for n in "${next[@]}"; do
        if [ -d "$n" ]; then while IFS= read -r f; do files+=("$f"); done < <(find "$n" -name '*.warc.gz' | sort); else files+=("$n"); fi
    done
    "$bin" --db "$work/db" ingest --sweep "$label" "${files[@]}" > "$work/ingest.out" 2>&1 &
    ingest_pid=$!
    for s in cdx-exact cdx-prefix-100 whereis similar; do
        if kill -0 $ingest_pid 2>/dev/null; then run during-ingest "$s"; else echo "(the ingest ended before $s)" >&2; fi
    done
    wait $ingest_pid || { echo "loadtest: the ingest failed:" >&2; cat "$work/ingest.out" >&2; exit 1; }
    cat "$work/ingest.out" >&2
fi

python3 - "$results" "$json_out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'phase':<14} {'scenario':<15} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
for r in rows:
    print(f"{r['phase']:<14} {r['scenario']:<15} {r['rps']:>9.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['non_2xx']:>8}")
if sys.argv[2]:
    json.dump(rows, open(sys.argv[2], "w"), indent=1)
EOF
