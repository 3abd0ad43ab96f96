#!/usr/bin/env python3
"""The pair step of a sweep on Spark: its new docs' candidates and estimates, as files
the index's machine commits with `tidemark ingest --pairs`.

    python3 tools/spark/pairs_job.py --master spark://HOST:7077 --binary TIDEMARK \\
        --index DB --shards SHARDS --out PAIRS
    tidemark --db DB ingest --sweep LABEL --sketches SHARDS --pairs PAIRS

Four steps, each the shipped binary (the rule is the one a local ingest applies):

1. On the driver, `tidemark pairs prepare`: a RocksDB checkpoint of the index in
   PAIRS/index (hard links when PAIRS is on the index's file system), the sweep's
   records committed into it (its new docs waiting for their pairs; the index itself
   is not changed), and PAIRS/plan.json (what the pairs depend on). If the index holds
   the sweep's first stage already (`ingest --pairs-later`), that one is used.
2. One Spark task per doc range, `tidemark pairs keys`: its waiting docs' posting keys,
   one file per key range (the shuffle by key).
3. One Spark task per key range, `tidemark pairs join`: the join of the waiting docs'
   posting keys in its range with the stored lists, written per range of docs.
4. One Spark task per doc range, `tidemark pairs estimate`: its docs' shares from every
   key range, their counts, candidates and estimates, as PAIRS/pairs/*.parquet.

PAIRS must be reachable under the same path from the driver and every executor (NFS,
Lustre, a FUSE mount of object storage); the binary and the configuration are shipped
with SparkContext.addFile. Every file is written under a temporary name and renamed when
whole, so a retried or speculative task rewrites the same bytes. Also runs without
spark-submit: `python pairs_job.py --master local[2] ...` (PyPI's pyspark; Java 17+).

Exit status: 0 the pairs are written; 2 bad arguments, the prepare step failed, or a
task failed after Spark's retries (nothing of the index changes either way).
"""

import argparse
import json
import os
import subprocess
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True, help="the tidemark index (read on the driver)")
    p.add_argument("--shards", required=True, nargs="+",
                   help="the sweep's shards (`tidemark sketch`): files or folders, in ingest order")
    p.add_argument("--out", required=True, help="the job's folder (new; shared by every executor)")
    p.add_argument("--binary", default="tidemark", help="the tidemark binary to ship to the executors")
    p.add_argument("--config", help="tidemark configuration (the index's)")
    p.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    p.add_argument("--sweep", help="label of the sweep in the job's checkpoint (default: pairs-job)")
    p.add_argument("--parts", type=int, help="key ranges of the join (default: 2 per Spark core)")
    p.add_argument("--ranges", type=int, help="doc ranges of the estimates (default: 2 per Spark core)")
    p.add_argument("--task-threads", type=int, default=1,
                   help="threads of each tidemark task (match spark.task.cpus)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p.parse_args(argv)


def run_task(kind, part, pairs, binary_name, config_name, threads):
    """One task: `tidemark pairs join|estimate` of one part, with the shipped binary."""
    from pyspark import SparkFiles

    binary = SparkFiles.get(binary_name)
    os.chmod(binary, 0o755)
    cmd = [binary]
    if config_name:
        cmd += ["--config", SparkFiles.get(config_name)]
    cmd += ["--threads", str(threads), "pairs", kind, "--pairs", pairs, "--part", str(part), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        # Spark retries the task, then fails the job.
        raise RuntimeError(f"tidemark pairs {kind} --part {part}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main(argv):
    a = parse_args(argv)
    if not os.access(a.binary, os.X_OK):
        print(f"pairs_job: {a.binary} is not an executable tidemark binary", file=sys.stderr)
        return 2
    if not os.path.isdir(a.index):
        print(f"pairs_job: no index at {a.index}", file=sys.stderr)
        return 2
    for s in a.shards:
        if not os.path.exists(s):
            print(f"pairs_job: no such shard or folder: {s}", file=sys.stderr)
            return 2
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("tidemark-pairs")
    if a.master:
        builder = builder.master(a.master)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    try:
        cores = max(1, sc.defaultParallelism)
        parts = a.parts or 2 * cores
        ranges = a.ranges or 2 * cores
        out = os.path.abspath(a.out)
        clock = time.time()
        cmd = [os.path.abspath(a.binary)]
        if a.config:
            cmd += ["--config", os.path.abspath(a.config)]
        cmd += ["--db", a.index, "pairs", "prepare", "--json", "--out", out,
                "--parts", str(parts), "--ranges", str(ranges)]
        if a.sweep:
            cmd += ["--sweep", a.sweep]
        cmd += a.shards
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"pairs_job: tidemark pairs prepare: exit {r.returncode}: {r.stderr.strip()}",
                  file=sys.stderr)
            return 2
        plan = json.loads(r.stdout)
        prepare_s = time.time() - clock
        sc.addFile(os.path.abspath(a.binary))
        binary_name = os.path.basename(a.binary)
        config_name = None
        if a.config:
            sc.addFile(os.path.abspath(a.config))
            config_name = os.path.basename(a.config)
        threads = a.task_threads
        n_ranges = len(plan["ranges"])
        def stage(kind, n):
            if n == 0:
                return []
            return (
                sc.parallelize(range(n), numSlices=n)
                .map(lambda p: run_task(kind, p, out, binary_name, config_name, threads))
                .collect()
            )

        try:
            clock = time.time()
            keys = stage("keys", n_ranges)
            keys_s = time.time() - clock
            clock = time.time()
            joins = stage("join", plan["parts"]) if n_ranges else []
            join_s = time.time() - clock
            clock = time.time()
            estimates = stage("estimate", n_ranges)
            estimate_s = time.time() - clock
        except Exception as e:  # a task failed after its retries
            print(f"pairs_job: {e}", file=sys.stderr)
            return 2
    finally:
        spark.stop()
    report = {
        "plan": plan["id"],
        "sweep": plan["sweep"],
        "docs": plan["end"] - plan["first"],
        "parts": plan["parts"],
        "ranges": n_ranges,
        "keys": sum(t["rows"] for t in keys),
        "shares": sum(t["rows"] for t in joins),
        "estimates": sum(t["rows"] for t in estimates),
        "prepare_s": round(prepare_s, 3),
        "keys_s": round(keys_s, 3),
        "join_s": round(join_s, 3),
        "estimate_s": round(estimate_s, 3),
        "out": out,
    }
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"plan {report['plan']}: the pairs of {report['docs']} new docs "
              f"({report['estimates']} estimates) in {out}; commit them with "
              f"`tidemark --db {a.index} ingest --sweep LABEL --sketches ... --pairs {out}`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
