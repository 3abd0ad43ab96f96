#!/usr/bin/env python3
"""The service's budgets under its worst requests and a crowd of slow clients.

Usage: python3 tools/budgets.py --db DB [--bin TIDEMARK] [--config FILE] [--slow 1000]
           [--seconds S] [--rss-mb 3072] [--json OUT]

Starts `tidemark serve` over DB (the defaults of config.toml, or --config), then runs at
once, for S seconds (default: twice request_timeout_s, plus 20):
  - SLOW clients (default 1,000), opened 200 a second, each asking a large answer (the
    whole host's captures from either CDX API, or a replay) and reading it one byte a
    second;
  - the worst requests, one after another, each read whole: a prefix of the whole host
    (both CDX APIs), Wayback paging at pageSize=1 (the page count, the first and the last
    page), similar by the doc of the largest cluster (containment too), cluster of its URL,
    the report and the change list of every pair of sweeps, the HTML report;
  - a probe, another client: a CDX lookup of one URL every 50 ms, its latencies kept (and
    for 5 s before the rest starts, alone);
  - the server's resident memory, sampled every 200 ms.
Prints each worst request's status and seconds, the probe's p50 and p99 alone and during,
what became of the slow clients (first byte, cut by the server after how long), the
largest RSS. Exits 1 when a budget is missed: a worst request answered (or refused) after
request_timeout_s + 2 s, a slow client kept past twice request_timeout_s + 5 s, the
probe's p99 during the run at or over 100 ms, RSS at or over --rss-mb. Needs no package
beyond Python 3.
"""
import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/tidemark/target"))


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Server:
    def __init__(self, binary, db, config):
        args = [binary, "--db", db]
        if config:
            args += ["--config", config]
        args += ["serve", "--listen", "127.0.0.1:0", "--json"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"budgets: {binary} serve did not start")
        host, port = json.loads(line)["listen"].rsplit(":", 1)
        self.addr = (host, int(port))
        for _ in range(600):
            try:
                if self.get("/readyz", 5)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        sys.exit("budgets: the server never became ready (no published sweep?)")

    def get(self, path, timeout):
        """(status, bytes, seconds, cut): the whole answer read; cut when the server
        closed the connection before its end."""
        t = time.perf_counter()
        c = http.client.HTTPConnection(*self.addr, timeout=timeout)
        try:
            c.request("GET", path, headers={"Connection": "close"})
            r = c.getresponse()
            try:
                n = len(r.read())
                cut = False
            except (http.client.IncompleteRead, ConnectionError) as e:
                n = len(getattr(e, "partial", b""))
                cut = True
            return r.status, n, time.perf_counter() - t, cut
        finally:
            c.close()

    def fds(self):
        """Files the server holds open: its index's, and one per connection."""
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def first_url(binary, db, config):
    args = [binary, "--db", db] + (["--config", config] if config else []) + ["export", "--format", "jsonl"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    p.kill()
    p.wait()
    return json.loads(line)["url"]


CLOSE, CLOSE_WAIT = 7, 8  # Linux's TCP states (include/net/tcp_states.h)


def tcp_state(sock):
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
    except OSError:
        return CLOSE


class Slow:
    """Clients reading one byte a second."""

    def __init__(self, addr, paths, n):
        self.addr, self.paths, self.n = addr, paths, n
        self.socks = []  # [sock, opened, first_byte, closed]
        self.stop = threading.Event()

    def run(self):
        opened = 0
        next_read = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            # Open 200 a second.
            while opened < self.n and opened < (now - self.start) * 200:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                try:
                    s.connect(self.addr)
                    path = self.paths[opened % len(self.paths)]
                    s.sendall(f"GET {path} HTTP/1.1\r\nHost: budgets\r\n\r\n".encode())
                    s.setblocking(False)
                    self.socks.append([s, time.monotonic(), None, None, path])
                except OSError:
                    s.close()
                    self.socks.append([None, now, None, now, None])
                opened += 1
            if now >= next_read:
                next_read += 1.0
                for e in self.socks:
                    if e[0] is None or e[3] is not None:
                        continue
                    try:
                        b = e[0].recv(1)
                        if b:
                            e[2] = e[2] or time.monotonic()
                        else:
                            e[3] = time.monotonic()
                    except BlockingIOError:
                        pass
                    except OSError:
                        e[3] = time.monotonic()
                    # Cut by the server while bytes still wait here (read at a byte a
                    # second they would take an hour): the connection's state says so.
                    if e[3] is None and tcp_state(e[0]) in (CLOSE_WAIT, CLOSE):
                        e[3] = time.monotonic()
            time.sleep(0.02)

    def summary(self):
        first = [e[2] - e[1] for e in self.socks if e[2]]
        cut = [e[3] - e[1] for e in self.socks if e[3] is not None]
        out = {
            "clients": len(self.socks),
            "first_byte_p50_s": round(pct(first, 50), 2) if first else None,
            "first_byte_max_s": round(max(first), 2) if first else None,
            "cut": len(cut),
            "cut_p50_s": round(pct(cut, 50), 1) if cut else None,
            "cut_max_s": round(max(cut), 1) if cut else None,
            "open_at_end": len(self.socks) - len(cut),
        }
        for e in self.socks:
            if e[0] is not None:
                e[0].close()
        return out


def main():
    ap = argparse.ArgumentParser(
        usage=argparse.SUPPRESS,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--db", required=True)
    ap.add_argument("--bin", default=os.path.join(TARGET, "release", "tidemark"))
    ap.add_argument("--config")
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--rss-mb", type=float, default=3072)
    ap.add_argument("--json")
    a = ap.parse_args()
    # A thousand sockets here and there: the server inherits the raised limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # The server's [serve] values: the embedded defaults (config.toml), or --config's.
    import tomllib

    with open(os.path.join(HERE, "..", "config.toml"), "rb") as f:
        serve_cfg = tomllib.load(f)["serve"]
    if a.config:
        with open(a.config, "rb") as f:
            serve_cfg.update(tomllib.load(f).get("serve", {}))
    timeout = serve_cfg["request_timeout_s"]
    coll = serve_cfg["collection"]
    seconds = a.seconds or 2 * timeout + 20
    url = first_url(a.bin, a.db, a.config)
    host = urllib.parse.urlsplit(url).hostname
    server = Server(a.bin, a.db, a.config)
    q = urllib.parse.quote
    _, _, _, _ = server.get("/healthz", 10)
    sweeps = json.loads(http_body(server, "/api/sweeps"))
    labels = [s["label"] for s in sweeps]
    stats = json.loads(http_body(server, "/api/stats"))
    doc = stats["largest_clusters"][0][0] if stats.get("largest_clusters") else 1
    pages = http_body(server, f"/cdx/search/cdx?url={q(host)}/*&showNumPages=true&pageSize=1")
    last_page = max(int(pages.strip() or 1) - 1, 0)
    worst = [
        f"/cdx/search/cdx?url={q(host)}/*",
        f"/{coll}?url={q(host)}&matchType=host&output=json",
        f"/cdx/search/cdx?url={q(host)}/*&showNumPages=true&pageSize=1",
        f"/cdx/search/cdx?url={q(host)}/*&page=0&pageSize=1",
        f"/cdx/search/cdx?url={q(host)}/*&page={last_page}&pageSize=1",
        f"/api/similar?doc={doc}&threshold=0.1",
        f"/api/similar?doc={doc}&threshold=0.1&containment=1",
        f"/api/cluster?url={q(url)}",
        "/report",
    ]
    for i, x in enumerate(labels):
        for y in labels[i + 1:]:
            worst.append(f"/api/report?from={q(x)}&to={q(y)}")
            worst.append(f"/api/changes?from={q(x)}&to={q(y)}&limit=200")
    probe_path = f"/{coll}?url={q(url)}&output=json"
    slow_paths = [
        f"/cdx/search/cdx?url={q(host)}/*",
        f"/{coll}?url={q(host)}&matchType=host",
        f"/{coll}/20300101000000id_/{url}",
    ]

    # The probe alone.
    def probe(until, out):
        while time.monotonic() < until:
            t = time.monotonic()
            try:
                st, _, secs, _ = server.get(probe_path, timeout + 10)
                out.append(secs * 1000 if st == 200 else float("inf"))
            except OSError:
                out.append(float("inf"))
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))

    alone = []
    probe(time.monotonic() + 5, alone)
    rss_idle = server.rss_mb()
    fds_idle = server.fds()
    # Everything at once.
    end = time.monotonic() + seconds
    during, rss = [], []
    slow = Slow(server.addr, slow_paths, a.slow)
    slow.start = time.monotonic()
    threads = [
        threading.Thread(target=probe, args=(end, during)),
        threading.Thread(target=slow.run),
    ]

    fds = []

    def sample():
        while time.monotonic() < end:
            rss.append(server.rss_mb())
            fds.append((time.monotonic() - slow.start, server.fds()))
            time.sleep(0.2)

    threads.append(threading.Thread(target=sample))
    for t in threads:
        t.start()
    results = []
    for path in worst:
        try:
            st, n, secs, cut = server.get(path, timeout + 30)
        except OSError as e:
            st, n, secs, cut = 0, 0, timeout + 30, True
        results.append({"request": path, "status": st, "seconds": round(secs, 2), "bytes": n, "cut": cut})
        print(f"  {st} {secs:7.2f} s {n:>11,} B{' cut' if cut else ''}  {path}", file=sys.stderr)
    while time.monotonic() < end:
        time.sleep(0.2)
    slow.stop.set()
    for t in threads:
        t.join()
    slow_out = slow.summary()
    server.stop()

    def lat(xs):
        finite = [x for x in xs if x != float("inf")]
        return {
            "requests": len(xs),
            "failed": len(xs) - len(finite),
            "p50_ms": round(pct(xs, 50), 1) if xs else None,
            "p99_ms": round(pct(xs, 99), 1) if xs else None,
            "max_ms": round(max(xs), 1) if xs else None,
        }

    out = {
        "db": os.path.abspath(a.db),
        "captures": stats.get("captures"),
        "sweeps": len(labels),
        "request_timeout_s": timeout,
        "seconds": seconds,
        "worst": results,
        "probe": {"alone": lat(alone), "during": lat(during)},
        "slow": slow_out,
        "rss_mb": {"idle": round(rss_idle), "max": round(max(rss or [rss_idle]))},
    }
    p99 = out["probe"]["during"]["p99_ms"]
    # The server's side of the slow clients: the connections it holds (open files past
    # the idle count), at most and at the end; a cut one leaves its unsent bytes and
    # FIN to the kernel, which the client sees only once it has read what came before.
    peak = max(fds, key=lambda x: x[1]) if fds else (0, fds_idle)
    held = [(t, n) for t, n in fds if n - fds_idle > a.slow // 10]
    out["server_connections"] = {
        "max": peak[1] - fds_idle,
        "at_end": (fds[-1][1] if fds else fds_idle) - fds_idle,
        "last_held_10pct_at_s": round(held[-1][0], 1) if held else None,
    }
    out["budgets"] = {
        "worst_within_timeout": all(r["seconds"] <= timeout + 2 for r in results),
        # With no slow clients (--slow 0) there is none to let go (the tenth of the
        # connections held would be the server's own keep-alives).
        "slow_clients_let_go": a.slow == 0
        or out["server_connections"]["last_held_10pct_at_s"] is None
        or out["server_connections"]["last_held_10pct_at_s"] <= 2 * timeout + 10,
        "probe_p99_under_100ms": p99 is not None and p99 < 100,
        "rss_under_bound": out["rss_mb"]["max"] < a.rss_mb,
        "rss_bound_mb": a.rss_mb,
    }
    text = json.dumps(out, indent=2)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)
    ok = all(v for k, v in out["budgets"].items() if k != "rss_bound_mb")
    sys.exit(0 if ok else 1)


def http_body(server, path):
    c = http.client.HTTPConnection(*server.addr, timeout=120)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.read()
    finally:
        c.close()


if __name__ == "__main__":
    main()
