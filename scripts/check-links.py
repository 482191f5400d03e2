#!/usr/bin/env python3
"""Checks that every relative Markdown link and image of README.md and the book resolves.

Usage: scripts/check-links.py

Reads README.md and every book/src/**/*.md, takes their inline links and images
(`[text](target)`, `![alt](target)`) and reference definitions (`[id]: target`) outside code
blocks and code spans, drops `http(s)://` and `mailto:` links and `#anchors`, and checks that
each target is an existing file or folder relative to the file that holds the link.

The book's chapters are checked as mdBook renders them: an `{{#include FILE}}` (also
`FILE:ANCHOR` and `FILE:START:END`) must name an existing file, and the links in the included
text resolve from the including chapter's folder, not from the included file's. A link from the
book must stay inside book/src, since only that folder becomes the HTML book.

Exits 1 listing the broken links, 0 when every link resolves. Python's standard library only.
"""

import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
BOOK_SRC = ROOT / "book" / "src"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INCLUDE = re.compile(r"\{\{\s*#(?:include|rustdoc_include)\s+([^}\s]+)\s*\}\}")
INLINE = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # [text], one level of nested brackets
    r"\(\s*(<[^>\n]*>|[^\s()]+)"  # (target or (<target>
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)",  # optional title
    re.S,
)
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)", re.M)
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # http:, https:, mailto:, ...


def blank_code(text):
    """The text with fenced code blocks and code spans replaced by spaces (newlines kept)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and line.strip() == m.group(1):
                fence = None
            out.append("")
        else:
            out.append(line)
    text = "\n".join(out)

    def spaces(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    # A code span: a run of backticks up to the next run of the same length.
    return re.sub(r"(`+)(?:(?!\1).)+?\1", spaces, text, flags=re.S)


def included_text(path, spec):
    """The part of `path` an mdBook include with `spec` (after the file name) takes."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if not spec:
        return "\n".join(lines)
    parts = spec.split(":")
    if len(parts) == 1 and not parts[0].isdigit():
        name = parts[0]
        start = re.compile(r"ANCHOR:\s*" + re.escape(name) + r"\b")
        end = re.compile(r"ANCHOR_END:\s*" + re.escape(name) + r"\b")
        taken, inside = [], False
        for line in lines:
            if not inside and start.search(line):
                inside = True
            elif inside and end.search(line):
                break
            elif inside and "ANCHOR" not in line:
                taken.append(line)
        if not inside:
            return None
        return "\n".join(taken)
    try:
        first = int(parts[0]) if parts[0] else 1
        last = int(parts[1]) if len(parts) > 1 and parts[1] else len(lines)
    except ValueError:
        return None
    if len(parts) == 1:  # FILE:N is line N alone
        last = first
    return "\n".join(lines[first - 1:last])


def links(text):
    """(line, target) of every link in `text`, code excluded."""
    clean = blank_code(text)
    found = []
    for pattern in (INLINE, REFDEF):
        for m in pattern.finditer(clean):
            target = m.group(1)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            found.append((clean.count("\n", 0, m.start(1)) + 1, target))
    return sorted(found)


def check(target, base, in_book):
    """Why `target`, linked from folder `base`, is broken; None when it resolves."""
    if EXTERNAL.match(target):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None  # an anchor in the same page
    resolved = (ROOT / path.lstrip("/")) if path.startswith("/") else (base / path)
    resolved = Path(*resolved.parts).resolve()
    if not resolved.exists():
        return "no such file"
    if in_book and BOOK_SRC not in resolved.parents and resolved != BOOK_SRC:
        return "outside book/src (not part of the HTML book)"
    return None


def main():
    files = [ROOT / "README.md"] + sorted(BOOK_SRC.rglob("*.md"))
    broken, count = [], 0
    for md in files:
        if not md.exists():
            broken.append(f"{md.relative_to(ROOT)}: file missing")
            continue
        in_book = BOOK_SRC in md.parents
        text = md.read_text(encoding="utf-8")
        where = md.relative_to(ROOT)
        # (what the links are read from, its text) pairs: the file, and what it includes.
        sources = [(str(where), text)]
        if in_book:
            for m in INCLUDE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                file, _, spec = m.group(1).partition(":")
                inc = (md.parent / file).resolve()
                if not inc.is_file():
                    broken.append(f"{where}:{line}: include {m.group(1)}: no such file")
                    continue
                part = included_text(inc, spec)
                if part is None:
                    broken.append(f"{where}:{line}: include {m.group(1)}: no such anchor or lines")
                    continue
                sources.append((f"{where}:{line} (included {file})", part))
        for label, body in sources:
            for line, target in links(body):
                count += 1
                why = check(target, md.parent, in_book)
                if why:
                    broken.append(f"{label}:{line}: {target}: {why}")
    if broken:
        print(f"check-links: {len(broken)} broken of {count} links:", file=sys.stderr)
        for b in broken:
            print(f"  {b}", file=sys.stderr)
        return 1
    print(f"check-links: {count} links in {len(files)} files resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
