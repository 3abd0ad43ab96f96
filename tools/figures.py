#!/usr/bin/env python3
"""The README's and the guide's figures, from one file: docs/figures.json.

Each record there is what one benchmark command printed (its --json), with the date,
the commit, the machine and the command that made it. The tables in the pages are
written from the records, between the markers

    <!-- figures: NAME -->
    ...
    <!-- /figures -->

so a figure is never typed twice and the pages cannot disagree with each other.

    python3 tools/figures.py record NAME --what TEXT -- COMMAND...   run COMMAND, keep its JSON
    python3 tools/figures.py record NAME --what TEXT --command TEXT --from FILE...
                                                                    keep runs made by hand
    python3 tools/figures.py render            rewrite every marked table
    python3 tools/figures.py render --check    exit 1 naming each table that differs (CI)

A record holds one JSON document per run; tables show medians over the runs. Recording
replaces the record of that name (its figures' history belongs in docs/history/).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures.json"


def set_root(root):
    """Work on another copy of the repository's pages (the tests' check that can fail)."""
    global ROOT, FIGURES
    ROOT = Path(root).resolve()
    FIGURES = ROOT / "docs" / "figures.json"
MARK = re.compile(r"(<!-- figures: ([a-z0-9-]+) -->\n)(.*?)(<!-- /figures -->)", re.S)


def pages():
    """The pages whose marked tables are written: the README and the guide's."""
    out = [ROOT / "README.md"]
    out += sorted((ROOT / "docs" / "src").rglob("*.md"))
    return out


def load():
    with open(FIGURES) as f:
        return json.load(f)["records"]


# ---------------------------------------------------------------------------------
# Reading records


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def runs(records, name):
    try:
        return records[name]["runs"]
    except KeyError:
        sys.exit(f"figures: docs/figures.json has no record {name!r}")


def per_sweep(records, name, field):
    """The median of `field` (a function of a sweep's JSON) for each sweep, over runs."""
    rs = runs(records, name)
    n = len(rs[0]["sweeps"])
    return [med(field(r["sweeps"][i]) for r in rs) for i in range(n)]


def spread(records, name, field):
    rs = runs(records, name)
    n = len(rs[0]["sweeps"])
    return [[field(r["sweeps"][i]) for r in rs] for i in range(n)]


def source(records, name):
    r = records[name]
    n = len(r["runs"])
    rounds = r["runs"][0].get("rounds", 1) if isinstance(r["runs"][0], dict) else 1
    if n == 1 and rounds > 1:
        runs_said = f"medians of {rounds} rounds"
    else:
        runs_said = "one run" if n == 1 else f"medians of {n} runs"
    return f"{r['date']}, commit {r['commit']}, {runs_said}: `{r['command']}`"


def pct(x):
    return f"{round(100 * x)}%"


def secs(x):
    return f"{x:.1f} s" if x >= 1 else f"{x:.2f} s"


def span(values, fmt, unit=""):
    """`lo–hi` (or one value) of `values`, the unit written once at the end."""
    lo, hi = fmt(min(values)), fmt(max(values))
    return (lo if lo == hi else f"{lo}–{hi}") + unit


def percents(values, digits=0):
    return span([100 * v for v in values], lambda x: f"{x:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{x:.0f}", "%")


def speedup(s, cores):
    p = s["projected_seconds"]
    return p["2"] / p[str(cores)]


def thousands(n):
    return f"{n:,}"


def md_table(head, rows):
    """A markdown table of `head` (column names) and `rows` (lists of cells)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def sweeps_table(run, cols, label=lambda i: i + 1):
    """A row per sweep of a `tidemark-bench --ingest` run: `cols` are (name, cell of a sweep)."""
    rows = [[label(i)] + [cell(s) for _, cell in cols] for i, s in enumerate(run["sweeps"])]
    return md_table(["sweep"] + [name for name, _ in cols], rows)


# ---------------------------------------------------------------------------------
# The tables


def readme_figures(rec):
    ing = "ingest-rd100k"
    secs_ = per_sweep(rec, ing, lambda s: s["ingest_seconds"])
    share = per_sweep(rec, ing, lambda s: s["share_of_zcat_rate"])
    zcat = per_sweep(rec, ing, lambda s: s["zcat_seconds"])
    new = per_sweep(rec, ing, lambda s: s["new_docs"])
    caps = per_sweep(rec, ing, lambda s: s["captures"])
    serial = per_sweep(rec, ing, lambda s: s["serial_share"])
    s16 = per_sweep(rec, ing, lambda s: speedup(s, 16))
    s64 = per_sweep(rec, ing, lambda s: speedup(s, 64))
    llvm = runs(rec, "ingest-llvm-docs")
    llvm_total = med(sum(s["ingest_seconds"] for s in r["sweeps"]) for r in llvm)
    llvm_pages = sum(s["captures"] for s in llvm[0]["sweeps"])
    bands = runs(rec, "content-bands-llvm-docs")[0]
    q = runs(rec, "queries-rd100k")
    qm = {k: med(r[k]["median_ms"] for r in q) for k in ("whereis", "history", "similar")}
    q_caps = q[0]["captures"]
    rows = [
        ("what", "figure"),
        ("---", "---"),
        (
            f"ingest, {thousands(round(caps[0]))} generated pages, first sweep (all new)",
            f"{secs(secs_[0])}: {pct(share[0])} of `zcat`'s rate on the same files "
            f"({secs(zcat[0])})",
        ),
        (
            f"a steady sweep after it ({pct(new[1] / caps[1])} new docs)",
            f"{secs(secs_[1])}: {pct(share[1])} of `zcat`'s rate",
        ),
        (
            "a redesign sweep (every page new, its template changed)",
            f"{secs(secs_[2])}: {pct(share[2])} of `zcat`'s rate",
        ),
        (
            "serial share of an ingest (the commit)",
            f"{percents(serial)}: 16 cores projected {span(s16, lambda x: f'{x:.1f}')}× "
            f"faster than 2, 64 cores {span(s64, lambda x: f'{x:.1f}')}×",
        ),
        (
            f"five sweeps of real manuals (llvm-docs, {thousands(llvm_pages)} captures)",
            f"{secs(llvm_total)} to ingest all",
        ),
        (
            "content resemblance in the band of the exact one, llvm-docs",
            f"{percents([t['content_agree'] for t in bands], 2)} "
            "of changed URLs",
        ),
        (
            f"`whereis` / `history` / `similar`, {thousands(q_caps)} captures",
            f"{qm['whereis']:.3f} / {qm['history']:.3f} / {qm['similar']:.2f} ms median",
        ),
    ]
    table = "\n".join(f"| {a} | {b} |" for a, b in rows)
    said = "\n".join(
        f"- {n}: {source(rec, n)}"
        for n in ("ingest-rd100k", "ingest-llvm-docs", "content-bands-llvm-docs", "queries-rd100k")
    )
    return f"{table}\n\nMeasured ({machine(rec, 'ingest-rd100k')}):\n\n{said}\n"


def ingest_table(rec):
    ing = "ingest-rd100k"
    cols = {
        "captures": lambda s: s["captures"],
        "new": lambda s: s["new_docs"],
        "zcat": lambda s: s["zcat_seconds"],
        "secs": lambda s: s["ingest_seconds"],
        "share": lambda s: s["share_of_zcat_rate"],
        "serial_s": lambda s: s["serial_s"],
        "serial": lambda s: s["serial_share"],
        "cpu": lambda s: s["cpu_s"],
        "p16": lambda s: s["projected_seconds"]["16"],
        "p64": lambda s: s["projected_seconds"]["64"],
        "rss": lambda s: s["peak_rss_mb"],
    }
    m = {k: per_sweep(rec, ing, f) for k, f in cols.items()}
    shares = spread(rec, ing, cols["share"])
    head = (
        "| sweep | captures | new docs | zcat s | ingest s | % of zcat rate (runs) "
        "| serial s (CPU) | serial share | CPU s | projected, 16 cores | 64 cores | peak RSS |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    names = ["1", "2", "3 (redesign)", "4"]
    lines = []
    for i in range(len(m["secs"])):
        lines.append(
            f"| {names[i] if i < len(names) else i + 1} | {thousands(round(m['captures'][i]))} "
            f"| {thousands(round(m['new'][i]))} | {m['zcat'][i]:.2f} | {m['secs'][i]:.1f} "
            f"| {pct(m['share'][i])} ({span(shares[i], lambda x: str(round(100 * x)))}) "
            f"| {m['serial_s'][i]:.2f} | {pct(m['serial'][i])} | {m['cpu'][i]:.1f} "
            f"| {m['p16'][i]:.1f} s | {m['p64'][i]:.1f} s | {m['rss'][i] / 1024:.2f} GB |"
        )
    return head + "\n".join(lines) + f"\n\n{source(rec, ing)} ({machine(rec, ing)}).\n"


def ingest_speedups(rec):
    ing = "ingest-rd100k"
    s16 = per_sweep(rec, ing, lambda s: speedup(s, 16))
    s64 = per_sweep(rec, ing, lambda s: speedup(s, 64))
    f = lambda x: f"{x:.1f}"
    return (
        f"Projected from these figures, 16 cores would ingest the sweeps "
        f"{', '.join(f(x) + '×' for x in s16)} faster than these 2 (sweeps 1 to {len(s16)}), "
        f"64 cores {', '.join(f(x) + '×' for x in s64)}.\n"
    )


def writer_table(rec):
    ing = "ingest-rd100k"
    fields = [
        ("(a) sequence", "sequence_s"),
        ("(b) join", "candidates_s"),
        ("(b) reads + estimates", "estimate_s"),
        ("waited for (b)", "pairs_wait_s"),
        ("(c) edges, unions, settle", "edges_unions_s"),
        ("captures", "captures_s"),
        ("spills", "spill_s"),
        ("finish", "finish_s"),
    ]
    cols = [per_sweep(rec, ing, lambda s, k=k: s["writer"][k]) for _, k in fields]
    out = "| sweep | " + " | ".join(n for n, _ in fields) + " |\n"
    out += "|---" * (len(fields) + 1) + "|\n"
    for i in range(len(cols[0])):
        out += f"| {i + 1} | " + " | ".join(f"{c[i]:.2f}" for c in cols) + " |\n"
    return out + f"\n{source(rec, ing)}.\n"


def queries_table(rec):
    q = runs(rec, "queries-rd100k")
    out = "| query | median | p99 |\n|---|---|---|\n"
    for k in ("whereis", "history", "similar"):
        out += f"| `{k}` | {med(r[k]['median_ms'] for r in q):.3f} ms | {med(r[k]['p99_ms'] for r in q):.2f} ms |\n"
    return out + (
        f"\nOn {thousands(q[0]['captures'])} captures, {q[0]['urls']:,} URLs sampled: "
        f"{source(rec, 'queries-rd100k')} ({machine(rec, 'queries-rd100k')}).\n"
    )


# Columns of the per-sweep tables, shared.
CAPTURES = ("captures", lambda s: thousands(s["captures"]))
NEW_DOCS = ("new docs", lambda s: thousands(s["new_docs"]))
ZCAT = ("zcat s", lambda s: f"{s['zcat_seconds']:.2f}")
SHARE = ("% of zcat rate", lambda s: pct(s["share_of_zcat_rate"]))


def llvm_table(rec):
    name = "ingest-llvm-docs"
    cols = [CAPTURES, NEW_DOCS, ("ingest s", lambda s: f"{s['ingest_seconds']:.2f}"), ZCAT, SHARE,
            ("peak RSS", lambda s: f"{s['peak_rss_mb']:.0f} MB")]
    table = sweeps_table(runs(rec, name)[0], cols, label=lambda i: f"s{i + 1}")
    return table + f"\n{source(rec, name)} ({machine(rec, name)}).\n"


def read_table(rec):
    name = "read-throughput"
    r = runs(rec, name)[0]
    z = r["zcat"]["seconds"]
    rows = [
        ("`zcat FILE > /dev/null`", r["zcat"]),
        ("read + parse (1 reader)", r["read_parse"]),
        ("read + canonicalize + sketch, 1 worker", r["read_canon_sketch_1_worker"]),
        (f"read + canonicalize + sketch, {r['cores']} workers", r["read_canon_sketch_all_cores"]),
    ]
    out = "| stage | seconds | MB/s | × zcat |\n|---|---|---|---|\n"
    for label, m in rows:
        out += f"| {label} | {m['seconds']:.2f} | {m['mb_per_s']:.1f} | {m['seconds'] / z:.2f} |\n"
    huge = r.get("huge_records") or []
    if huge:
        out += (
            "\nSingle huge records, one worker (reading stays linear in record size): "
            + ", ".join(f"{h['record_mb']} MB at {h['mb_per_s']:.0f} MB/s" for h in huge)
            + ".\n"
        )
    return out + (
        f"\n{r['files']} files, {r['warc_mb']:.0f} MB of WARC in {r['gzip_mb']:.0f} MB of gzip; "
        f"{source(rec, name)} ({machine(rec, name)}).\n"
    )


def steady_table(rec):
    name = "ingest-steady"
    r = runs(rec, name)[0]
    cols = [
        CAPTURES,
        NEW_DOCS,
        ZCAT,
        ("ingest s", lambda s: f"{s['ingest_seconds']:.1f}"),
        SHARE,
        ("serial share", lambda s: pct(s["serial_share"])),
        ("CPU s", lambda s: f"{s['cpu_s']:.1f}"),
        ("projected, 16 cores", lambda s: f"{s['projected_seconds']['16']:.1f} s"),
        ("peak RSS", lambda s: f"{s['peak_rss_mb'] / 1024:.2f} GB"),
    ]
    if all("bytes_added_per_new_doc" in s for s in r["sweeps"]):
        cols.append(("bytes added a new doc", lambda s: thousands(round(s["bytes_added_per_new_doc"]))))
    out = sweeps_table(r, cols)
    t = r.get("targets", {})
    if "last_over_second" in t:
        out += f"\nLast sweep over the second: {t['last_over_second']:.2f} in time"
        if "last_over_second_bytes_per_new_doc" in t:
            out += f", {t['last_over_second_bytes_per_new_doc']:.2f} in bytes added a new doc"
        out += ".\n"
    return out + f"\n{source(rec, name)} ({machine(rec, name)}).\n"


def many_files_table(rec):
    name = "many-files"
    rows = [[thousands(r["files"]), f"{r['seconds']:.2f}", f"{r['ms_per_file']:.2f}"] for r in runs(rec, name)[0]]
    return md_table(["files", "seconds", "ms per file"], rows) + (
        f"\n{source(rec, name)} ({machine(rec, name)}); the first row includes the start-up.\n"
    )


def bars(rec):
    ing = "ingest-rd100k"
    share = per_sweep(rec, ing, lambda s: s["share_of_zcat_rate"])
    serial = per_sweep(rec, ing, lambda s: s["serial_share"])
    per_doc = med(r["stats"]["bytes_per_doc"] for r in runs(rec, ing))
    below = [i + 1 for i, x in enumerate(share) if x < 1.0]
    over = [i + 1 for i, x in enumerate(serial) if x > 0.20]
    said = lambda v: ", ".join(str(x) for x in v) or "none"
    return (
        f"| bar | now (the rd100k ingest above) |\n|---|---|\n"
        f"| every sweep at or above `zcat`'s rate on two cores | {', '.join(pct(x) for x in share)} "
        f"of it (sweeps below: {said(below)}) |\n"
        f"| serial share at most 20% | {', '.join(pct(x) for x in serial)} (sweeps over: {said(over)}) |\n"
        f"| at most 1 KB of index a doc | {per_doc:,.0f} bytes a doc |\n"
    )


def content_bands_table(rec):
    """Per corpus and transition: the share of changed URLs in the exact value's band."""
    corpora = [
        ("content-bands-llvm-docs", "llvm-docs × 5"),
        ("content-bands-sections", "generated, 10 sections a host"),
    ]
    rows = []
    for name, label in corpora:
        for i, t in enumerate(runs(rec, name)[0]):
            rows.append([
                label if i == 0 else "",
                f"{t['from']} → {t['to']} ({thousands(t['changed'])})",
                f"{100 * t['content_agree']:.2f}%",
                f"{100 * t['full_agree']:.2f}%",
            ])
    table = md_table(["corpus", "transition (changed URLs)", "content bands as the exact", "all shingles' bands as the exact"], rows)
    said = "\n".join(f"- {n}: {source(rec, n)}" for n, _ in corpora)
    return f"{table}\nMeasured ({machine(rec, corpora[0][0])}):\n\n{said}\n"


def map_reduce_tables(rec):
    """`tidemark-bench --map-reduce --json`: per sweep in µs a page, the fit, the projections."""
    name = "map-reduce-rd100k"
    rs = runs(rec, name)
    labels = ["1 (first)", "2 (steady)", "3 (template change)", "4 (steady)"]

    def m(i, k):
        return med(r["sweeps"][i][k] for r in rs)

    rows = []
    for i in range(len(rs[0]["sweeps"])):
        pages = m(i, "pages")
        us = lambda k: f"{1e6 * m(i, k) / pages:,.0f}"
        new = m(i, "new_docs")
        spark = m(i, "pairs_spark_local2_seconds")
        rows.append([
            labels[i] if i < len(labels) else str(i + 1),
            thousands(round(pages)),
            thousands(round(new)),
            us("sketch_cpu_seconds"),
            f"{m(i, 'shard_bytes') / pages:,.0f}",
            us("merge_seconds"),
            us("records_commit_seconds"),
            us("pairs_commit_seconds"),
            us("commit_serial_seconds"),
            f"{1e6 * m(i, 'pairs_tasks_cpu_seconds') / max(new, 1):,.0f}",
            f"{spark:.1f}" if spark is not None else "–",
        ])
    head = ["sweep", "pages", "new docs", "sketch, CPU", "shard bytes", "local merge", "commit: records",
            "commit: pairs", "commit, serial part", "pairs tasks, CPU a new doc", "Spark `local[2]`, s"]
    table = md_table(head, rows)

    def g(k):
        return med(r[k] for r in rs)

    us = lambda k: f"{1e6 * g(k):.0f}"
    fit = (
        f"Fitted over the sweeps: the map stage costs {us('map_seconds_per_page_per_core')} "
        f"CPU-µs a page; the pairs {us('pairs_cpu_seconds_per_new_doc')} CPU-µs a new doc, on "
        f"any number of executors; the commit on the index's machine "
        f"{1e6 * (g('records_commit_seconds_per_new_page') + g('pairs_commit_seconds_per_new_page')):.0f} µs "
        f"a new-doc page and "
        f"{1e6 * (g('records_commit_seconds_per_known_page') + g('pairs_commit_seconds_per_known_page')):.0f} µs "
        f"a known one on these two cores (records {us('records_commit_seconds_per_new_page')} / "
        f"{us('records_commit_seconds_per_known_page')}, pairs {us('pairs_commit_seconds_per_new_page')} / "
        f"{us('pairs_commit_seconds_per_known_page')}), "
        f"{pct(g('commit_share_of_local_merge_per_new_doc'))} of a local merge's time a new doc "
        f"({us('merge_seconds_per_new_page')} µs; {us('merge_seconds_per_known_page')} µs a known page). "
        f"Its serial part is **{us('commit_serial_seconds_per_new_page')} µs a new doc** and "
        f"{us('commit_serial_seconds_per_known_page')} µs a known one: "
        f"**{pct(g('commit_serial_share_of_local_merge_per_new_doc'))} of the local merge's time a new doc** "
        f"(target: at most 20%). Every run's split index was the local merge's: "
        f"{'yes' if all(r['same_index'] for r in rs) else 'NO'}.\n"
    )

    def human(s):
        if s >= 2 * 86400:
            return f"{s / 86400:.1f} days"
        if s >= 2 * 3600:
            return f"{s / 3600:.1f} h" if s < 100 * 3600 else f"{s / 3600:.0f} h"
        if s >= 120:
            return f"{s / 60:.0f} min"
        return f"{s:.0f} s"

    prow = []
    for k, p in enumerate(rs[0]["projection"]):
        pm = lambda f: med(f(r["projection"][k]) for r in rs)
        cells = [
            f"{human(pm(lambda q: q['wall_seconds'][e]))} ({human(pm(lambda q: q['wall_seconds_serial_commit'][e]))})"
            f" / {human(pm(lambda q: q['wall_seconds_local_merge'][e]))}"
            for e in ("10", "100", "1000")
        ]
        n = p["pages"]
        prow.append([
            f"{n / 1e9:.0f}B pages" if n >= 1e9 else f"{n / 1e6:.0f}M pages",
            "all new" if p["content"] == "new" else p["content"],
            f"{human(pm(lambda q: q['commit_seconds']))} ({human(pm(lambda q: q['commit_serial_seconds']))})",
            *cells,
        ])
    proj = md_table(["sweep", "content", "commit (serial part)", "E=10", "E=100", "E=1,000"], prow)
    big = [k for k, p in enumerate(rs[0]["projection"]) if p["pages"] >= 1e9 and p["content"] == "all new"]
    target = ""
    if big:
        k = big[0]
        pm = lambda f: med(f(r["projection"][k]) for r in rs)
        target = (
            f"A 3B-page sweep of new content, on an index machine with cores to spare and 100 "
            f"executors, is in the index in **{human(pm(lambda q: q['wall_seconds_serial_commit']['100']))}** "
            f"(the target: a day): {human(pm(lambda q: q['commit_serial_seconds']))} of the commit's serial "
            f"part, the pairs' {human(pm(lambda q: q['pairs_cpu_seconds']) / 100)} on the cluster, the map "
            f"beside the records' commit.\n\n"
        )
    return (
        f"{table}\n{fit}\nProjected (steady: {pct(g('steady_new_share'))} new docs):\n\n{proj}\n{target}"
        f"{source(rec, name)} ({machine(rec, name)}).\n"
    )


def serving_table(rec):
    """`tools/loadtest.sh --json`: without and with access rules, medians over runs."""
    plain, rules = runs(rec, "serving-rd100k"), runs(rec, "serving-rd100k-rules")
    key = lambda s: (s["phase"], s["scenario"], s["mode"])
    order = [key(s) for s in plain[0]]
    said = {"idle": "idle", "during-ingest": "during ingest", "cdx-exact": "CDX exact (`/tidemark?url=`)",
            "cdx-prefix-100": "CDX prefix, 100 lines", "whereis": "`/api/whereis`", "similar": "`/api/similar`"}

    def cells(rs, k):
        got = [s for r in rs for s in r if key(s) == k]
        if not got:
            return ["–", "–", "–"]
        return [
            f"{med(s['rps'] for s in got):,.0f}",
            f"{med(s['p50_ms'] for s in got):.2f}",
            f"{med(s['p99_ms'] for s in got):.1f}",
        ]

    rows = [[said[k[0]], said[k[1]], k[2], *cells(plain, k), *cells(rules, k)] for k in order]
    errors = sum(s["errors"] + s["non_2xx"] for r in plain + rules for s in r)
    table = md_table(["phase", "request", "load", "req/s", "p50 ms", "p99 ms",
                      "with access rules: req/s", "p50 ms", "p99 ms"], rows)
    return (
        f"{table}\nError or non-2xx responses in all runs: {errors}.\n\n"
        f"- serving-rd100k: {source(rec, 'serving-rd100k')}\n"
        f"- serving-rd100k-rules: {source(rec, 'serving-rd100k-rules')}\n\n"
        f"({machine(rec, 'serving-rd100k')}.)\n"
    )


def budgets_table(rec):
    """`tools/budgets.py --json`: the worst requests, the other client, the slow ones, RSS
    (of the run whose server held the most, and each run's)."""
    name = "budgets-m1"
    # The run whose server held the most: the one a bound must hold for.
    all_runs = runs(rec, name)
    r = max(all_runs, key=lambda x: x["rss_mb"]["max"])
    rows = [[f"`{w['request']}`", str(w["status"]), f"{w['seconds']:.2f}", thousands(w["bytes"])]
            for w in r["worst"]]
    table = md_table(["worst request", "status", "seconds", "bytes"], rows)
    p, s, m, c = r["probe"], r["slow"], r["rss_mb"], r["server_connections"]
    return (
        f"{table}\n"
        f"Index: {thousands(r['captures'])} captures in {r['sweeps']} sweeps; "
        f"`request_timeout_s` {r['request_timeout_s']}.\n\n"
        f"- Another client (a CDX lookup every 50 ms): p50 {p['alone']['p50_ms']} ms, p99 "
        f"{p['alone']['p99_ms']} ms alone; p50 {p['during']['p50_ms']} ms, p99 "
        f"{p['during']['p99_ms']} ms, max {p['during']['max_ms'] / 1000:.1f} s during the run "
        f"({thousands(p['during']['requests'])} requests, {p['during']['failed']} failed; the "
        f"slowest waited behind the slow clients' first requests for a worker).\n"
        f"- {thousands(s['clients'])} slow clients (one byte a second): first byte after "
        f"{s['first_byte_p50_s']} s (median), {s['first_byte_max_s']} s at most. The server held "
        f"{thousands(c['max'])} connections at most, more than a tenth of them until "
        f"{c['last_held_10pct_at_s']} s, {thousands(c['at_end'])} at the end (a connection cut "
        f"behind unread bytes closes for its client only once it has read them).\n"
        f"- Server RSS: {m['idle']} MB idle, {thousands(m['max'])} MB at most (the bound checked: "
        f"{thousands(r['budgets']['rss_bound_mb'])} MB"
        + (f"; in each of the {len(all_runs)} runs: "
           + ", ".join(f"{thousands(x['rss_mb']['max'])} MB" for x in all_runs)
           if len(all_runs) > 1 else "")
        + ").\n\n"
        f"{source(rec, name).replace(f'medians of {len(all_runs)} runs', f'the run of {len(all_runs)} whose server held the most')}"
        f" ({machine(rec, name)}).\n"
    )


def machine(rec, name):
    return rec[name]["machine"]


TABLES = {
    "readme": readme_figures,
    "ingest-rd100k": lambda rec: ingest_table(rec) + "\n" + ingest_speedups(rec),
    "ingest-rd100k-writer": writer_table,
    "ingest-llvm-docs": llvm_table,
    "queries-rd100k": queries_table,
    "read-throughput": read_table,
    "ingest-steady": steady_table,
    "many-files": many_files_table,
    "bars": bars,
    "content-bands": content_bands_table,
    "map-reduce": map_reduce_tables,
    "serving": serving_table,
    "budgets": budgets_table,
}


# ---------------------------------------------------------------------------------
# Commands


def render(check):
    rec = load()
    stale = 0
    for page in pages():
        text = page.read_text()

        def fill(m):
            name = m.group(2)
            if name not in TABLES:
                sys.exit(f"figures: {page.relative_to(ROOT)} marks an unknown table {name!r}")
            return m.group(1) + TABLES[name](rec) + m.group(4)

        new = MARK.sub(fill, text)
        if new != text:
            if check:
                names = [m.group(2) for m in MARK.finditer(text)]
                print(
                    f"figures: {page.relative_to(ROOT)} is not up to date "
                    f"(tables {', '.join(names)}); run `python3 tools/figures.py render`",
                    file=sys.stderr,
                )
                stale += 1
            else:
                page.write_text(new)
                print(f"wrote {page.relative_to(ROOT)}")
    return 1 if stale else 0


def this_machine():
    cores = os.cpu_count()
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem = next(l for l in open("/proc/meminfo") if l.startswith("MemTotal"))
        gib = round(int(mem.split()[1]) / 1024 / 1024)
    except (OSError, StopIteration):
        gib = None
    out = f"{cores} cores"
    if model:
        out += f" ({model})"
    if gib:
        out += f", {gib} GiB"
    return out + f", {platform.system()}"


def head_commit():
    return subprocess.run(
        ["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def record(a):
    if a.cmd:
        argv = a.cmd
        done = []
        for i in range(a.runs):
            out = subprocess.run(argv, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"figures: {shlex.join(argv)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
            done.append(json.loads(out.stdout))
        command = a.command or shlex.join(argv)
    else:
        if not a.from_ or not a.command:
            sys.exit("figures: record needs a command after --, or --from FILE... with --command")
        done = [json.load(open(f)) for f in a.from_]
        command = a.command
    data = json.load(open(FIGURES)) if FIGURES.exists() else {"records": {}}
    data["records"][a.name] = {
        "what": a.what,
        "date": a.date or datetime.date.today().isoformat(),
        "commit": a.commit or head_commit(),
        "machine": a.machine or this_machine(),
        "command": command,
        "runs": done,
    }
    data["records"] = dict(sorted(data["records"].items()))
    FIGURES.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"recorded {a.name}: {len(done)} run(s)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what_to_do", required=True)
    r = sub.add_parser("render", help="rewrite the marked tables from docs/figures.json")
    r.add_argument("--check", action="store_true", help="only compare; exit 1 naming stale pages")
    r.add_argument("--root", help="the repository (default: the one this script is in)")
    rec = sub.add_parser("record", help="keep a benchmark's JSON as a record")
    rec.add_argument("name")
    rec.add_argument("--what", required=True, help="what the record measures, one line")
    rec.add_argument("--runs", type=int, default=1, help="run the command this many times")
    rec.add_argument("--from", dest="from_", nargs="+", help="JSON files of runs made by hand")
    rec.add_argument("--command", help="the command that made them (with --from)")
    rec.add_argument("--commit", help="the commit measured (default: HEAD)")
    rec.add_argument("--date", help="the day it was measured (default: today)")
    rec.add_argument("--machine", help="the machine (default: this one's cores, CPU, memory)")
    # The command to run comes after `--`, untouched by the options above.
    argv = sys.argv[1:]
    cmd = argv[argv.index("--") + 1 :] if "--" in argv else []
    a = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    a.cmd = cmd
    if a.what_to_do == "render":
        if a.root:
            set_root(a.root)
        sys.exit(render(a.check))
    record(a)


if __name__ == "__main__":
    main()
