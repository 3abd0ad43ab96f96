#!/usr/bin/env python3
"""The map stage of a distributed tidemark ingest, on Spark.

Each input WARC/ARC file is one Spark task that runs `tidemark sketch` on it and
writes its shard (FILE.parquet) into the output folder; `tidemark ingest --sketches`
then commits the shards on one machine. The shards are byte-identical to those a local
`tidemark sketch` makes, so a retried or speculative task rewrites the same bytes
(each shard is written under a temporary name and renamed when whole).

    spark-submit --master spark://HOST:7077 tools/spark/sketch_job.py \
        --binary /path/to/tidemark --out /shared/shards --files-from warcs.txt

The binary is shipped to the executors (SparkContext.addFile), with the tidemark
configuration when one is given; input paths and the output folder must be reachable
under the same names from every executor (a shared file system: NFS, Lustre, a FUSE
mount of object storage). Also runs without spark-submit: `python sketch_job.py
--master local[2] …` (PyPI's pyspark bundles Spark; it needs Java 17 or later).

Exit status: 0 every file sketched; 1 some input was damaged (its shard holds the
records before the damage; the report names it); 2 bad arguments, or a task failed.
"""

import argparse
import json
import os
import subprocess
import sys


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", help="WARC/ARC files (paths every executor can read)")
    p.add_argument("--files-from", help="a file with more paths, one per line")
    p.add_argument("--out", required=True, help="folder of the shards (shared by every executor)")
    p.add_argument("--binary", default="tidemark", help="the tidemark binary to ship to the executors")
    p.add_argument("--config", help="tidemark configuration (the index's: sketch parameters, record cap)")
    p.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    p.add_argument("--task-threads", type=int, default=1,
                   help="threads of each tidemark task (match spark.task.cpus)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    a = p.parse_args(argv)
    if a.files_from:
        with open(a.files_from) as f:
            a.files += [line.strip() for line in f if line.strip()]
    if not a.files:
        p.error("no input files: give FILE arguments or --files-from LIST")
    return a


def sketch_one(path, out, binary_name, config_name, threads):
    """One task: `tidemark sketch` of one file, with the shipped binary."""
    from pyspark import SparkFiles

    binary = SparkFiles.get(binary_name)
    os.chmod(binary, 0o755)
    cmd = [binary]
    if config_name:
        cmd += ["--config", SparkFiles.get(config_name)]
    cmd += ["--threads", str(threads), "sketch", "--json", "--out", out, path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        # A task that could not write its shard fails: Spark retries it, then the job.
        raise RuntimeError(f"tidemark sketch {path}: exit {r.returncode}: {r.stderr.strip()}")
    shard = json.loads(r.stdout)["shards"][0]
    return {"file": path, "exit": r.returncode, **shard}


def main(argv):
    a = parse_args(argv)
    for f in a.files:
        if not os.path.isfile(f):
            print(f"sketch_job: no such file: {f}", file=sys.stderr)
            return 2
    if not os.access(a.binary, os.X_OK):
        print(f"sketch_job: {a.binary} is not an executable tidemark binary", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("tidemark-sketch")
    if a.master:
        builder = builder.master(a.master)
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    sc.addFile(os.path.abspath(a.binary))
    binary_name = os.path.basename(a.binary)
    config_name = None
    if a.config:
        sc.addFile(os.path.abspath(a.config))
        config_name = os.path.basename(a.config)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    # Absolute as tidemark makes them (`..` kept): the source path in a shard's metadata
    # is the one a local `tidemark sketch` of the same argument writes.
    files = [f if os.path.isabs(f) else os.path.join(os.getcwd(), f) for f in a.files]
    threads = a.task_threads
    try:
        results = (
            sc.parallelize(files, numSlices=len(files))
            .map(lambda f: sketch_one(f, out, binary_name, config_name, threads))
            .collect()
        )
    except Exception as e:  # a task failed after its retries
        print(f"sketch_job: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    damaged = [r for r in results if r["error"]]
    report = {
        "files": len(results),
        "records": sum(r["records"] for r in results),
        "shard_bytes": sum(r["bytes"] for r in results),
        "shards": results,
    }
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['files']} files, {report['records']} records into {out} "
              f"({report['shard_bytes'] / 1e6:.1f} MB of shards)")
    for r in damaged:
        off, msg = r["error"]
        print(f"sketch_job: {r['file']}: damaged at offset {off}: {msg} "
              f"(the records before it are in {r['shard']})", file=sys.stderr)
    return 1 if damaged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
