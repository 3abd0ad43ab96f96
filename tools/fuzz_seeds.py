#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from real WARC/ARC files (run by tools/fuzz.sh;
nothing it writes is committed).

read_records:  the files themselves (those up to 256 KB) and the first 64 KB of larger ones
http_message:  the blocks of WARC `response` records (HTTP status line, headers, body)
canonicalize:  their bodies, behind a selector byte for the media kind and charset
"""
import gzip
import hashlib
import os
import sys
import zlib


def decompress(data):
    if data[:2] != b"\x1f\x8b":
        return data
    out, rest = [], data
    while rest[:2] == b"\x1f\x8b":
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(rest))
        except zlib.error:
            break
        rest = d.unused_data
    return b"".join(out)


def warc_blocks(data):
    pos = 0
    while True:
        start = data.find(b"WARC/1.", pos)
        if start < 0:
            return
        head_end = data.find(b"\r\n\r\n", start)
        if head_end < 0:
            return
        head = data[start:head_end].decode("latin-1").lower()
        length = 0
        kind = ""
        for line in head.split("\r\n"):
            name, _, value = line.partition(":")
            if name == "content-length":
                length = int(value.strip() or 0)
            elif name == "warc-type":
                kind = value.strip()
        block = data[head_end + 4 : head_end + 4 + length]
        if kind == "response":
            yield block
        pos = head_end + 4 + length


def write(folder, data):
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main(warcs, corpus):
    blocks = 0
    for entry in sorted(os.listdir(warcs)):
        path = os.path.join(warcs, entry)
        if not os.path.isfile(path) or not any(
            entry.endswith(x) for x in (".warc", ".warc.gz", ".arc", ".arc.gz")
        ):
            continue
        raw = open(path, "rb").read()
        write(os.path.join(corpus, "read_records"), raw if len(raw) <= 256 << 10 else raw[: 64 << 10])
        for block in warc_blocks(decompress(raw)):
            if blocks >= 2000:
                break
            blocks += 1
            block = block[: 64 << 10]
            write(os.path.join(corpus, "http_message"), block)
            body = block.partition(b"\r\n\r\n")[2]
            if body:
                write(os.path.join(corpus, "canonicalize"), bytes([blocks % 33]) + body)
    print(f"fuzz seeds: {blocks} response blocks from {warcs}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
