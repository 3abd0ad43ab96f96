#!/usr/bin/env python3
"""Checks every relative link of a built mdBook (default docs/book): the page it names
exists and, when it names an anchor, the page has an element with that id. External
links (http, https, mailto) are listed by count only: CI has no network.

usage: python3 tools/check_links.py [BOOK_DIR] [--markdown FILE.md ...]
  exit 1 naming each broken link; --markdown also checks that the relative links of
  markdown files outside the book (README.md, CHANGELOG.md) name files that exist.
  Every repository path named in backticks (`src/...`, `tools/...`, `docs/...`, a file
  at the top such as `config.toml`) in those files, the book's sources (docs/src),
  schema/README.md and docs/history must exist too.
"""
import html.parser
import os
import re
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "script", "link"):
                self.links.append(a[key])


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def markdown_links(files):
    """Broken relative links of markdown files (files only: GitHub makes the anchors)."""
    broken = []
    for f in files:
        text = open(f, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            url = urllib.parse.urlsplit(link)
            if url.scheme or not url.path:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(f), urllib.parse.unquote(url.path)))
            if not os.path.exists(target):
                broken.append(f"{f}: {link}: no such file {target}")
    return broken


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A path into the repository: a top folder of it, then a path without placeholders.
REPO_PATH = re.compile(
    r"^(?:src|tests|tools|docs|schema|fuzz|benches|\.ci|\.cargo)/[A-Za-z0-9_./-]*$"
    r"|^(?:README|CHANGELOG|ARCHITECTURE|CONTRIBUTING)\.md$|^(?:config|Cargo)\.toml$"
)


def named_paths(files):
    """Repository paths named in backticks that do not exist."""
    missing = []
    for f in files:
        text = open(f, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for n, line in enumerate(text.split("\n"), 1):
            for name in re.findall(r"`([^`\s]+)`", line):
                # A path with an anchor or a line number names the file before it.
                path = re.split(r"[#:]", name)[0].rstrip(".,")
                # Placeholders (`tests/fuzz/TARGET/`) and what a build makes (docs/book).
                if not REPO_PATH.match(path) or path.startswith("docs/book"):
                    continue
                if any(re.fullmatch(r"[A-Z_]{3,}", seg) for seg in path.split("/")):
                    continue
                if not os.path.exists(os.path.join(ROOT, path)):
                    missing.append(f"{os.path.relpath(f, ROOT)}: `{name}` names no file or folder of the repository")
    return missing


def sources():
    out = [os.path.join(ROOT, "schema", "README.md")]
    for d in ("docs/src", "docs/history"):
        for root, _, files in os.walk(os.path.join(ROOT, d)):
            out += [os.path.join(root, n) for n in sorted(files) if n.endswith(".md")]
    return out


def main():
    args = sys.argv[1:]
    md = []
    if "--markdown" in args:
        k = args.index("--markdown")
        md, args = args[k + 1:], args[:k]
    book = args[0] if args else "docs/book"
    if not os.path.isdir(book):
        sys.exit(f"check_links: {book} is not a directory (build the book first: bash tools/docs.sh)")
    pages = {}
    for root, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(root, name))
                pages[path] = parse(path)
    broken, external, checked = [], 0, 0
    for path, page in sorted(pages.items()):
        # mdBook's own pages (print view, 404) repeat the chapters' links.
        if os.path.basename(path) in ("print.html", "404.html", "toc.html"):
            continue
        for link in page.links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or link.startswith("//"):
                external += 1
                continue
            checked += 1
            target = path if not url.path else os.path.normpath(
                os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            if not os.path.exists(target):
                broken.append(f"{path}: {link}: no such file {target}")
                continue
            if url.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if urllib.parse.unquote(url.fragment) not in ids:
                    broken.append(f"{path}: {link}: no anchor #{url.fragment} in {target}")
    broken += markdown_links(md)
    broken += named_paths([os.path.abspath(f) for f in md] + sources())
    for b in broken:
        print(b, file=sys.stderr)
    print(f"check_links: {len(pages)} pages, {checked} links checked, {len(broken)} broken, "
          f"{external} external not followed; {len(md)} markdown files")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
