#!/usr/bin/env python3
"""Checks the repository's documentation links; exits 1 naming every broken one.

  python3 scripts/check-links.py

* Every relative link of every Markdown file (README.md, CONTRIBUTING.md,
  ARCHITECTURE.md, docs/ and the rest; ``[text](path)``, ``[text](path#anchor)``,
  ``[text](#anchor)``, images, reference definitions) must name a file or directory
  that exists, and an ``#anchor`` into a Markdown file must be one of its headings
  (GitHub's rule: lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2``
  … for repeats). Links to other sites are not fetched.
* Every mention of a page as ``docs/<name>.md``, in Markdown and in source files
  (doc comments, scripts, manifests), must name a page that exists.

The run logs under ``crates/bench/results/`` (all but its README) are records kept
as they were written, so their links are not checked. Standard library only.
"""

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", "target", "node_modules", "__pycache__", ".venv", "venv"}
ARCHIVE = ROOT / "crates" / "bench" / "results"
SOURCE_SUFFIXES = {".rs", ".py", ".sh", ".toml", ".h", ".hpp", ".c", ".cpp", ".txt", ".yml", ".yaml", ".md"}

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
DOCS_MENTION = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_.-]+\.md)\b")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def files(suffixes):
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix in suffixes:
                yield path


def is_archive(path):
    return path.parent == ARCHIVE and path.name != "README.md"


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found, seen = set(), {}
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            for name in HTML_ANCHOR.findall(line):
                found.add(name)
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        _anchors[path] = found
    return _anchors[path]


def check_target(source, target):
    """An error message for a broken relative link, or None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:, ...
        return None
    path_part, _, anchor = target.partition("#")
    dest = source if not path_part else (source.parent / path_part).resolve()
    if not dest.exists():
        return f"{target}: no such file or directory"
    if anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{target}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}"
    return None


def main():
    errors = []
    md_count = src_count = 0
    for path in files(SOURCE_SUFFIXES):
        if is_archive(path):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(ROOT)
        if path.suffix == ".md":
            md_count += 1
            for number, line in prose_lines(text):
                code_free = INLINE_CODE.sub("", line)
                targets = INLINE_LINK.findall(code_free)
                ref = REFERENCE_DEF.match(code_free)
                if ref:
                    targets.append(ref.group(1))
                for target in targets:
                    problem = check_target(path, target)
                    if problem:
                        errors.append(f"{rel}:{number}: {problem}")
        else:
            src_count += 1
        for number, line in enumerate(text.splitlines(), 1):
            for page in DOCS_MENTION.findall(line):
                if not (ROOT / "docs" / page).is_file():
                    errors.append(f"{rel}:{number}: docs/{page}: no such page")
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        print(f"{len(errors)} broken link(s)", file=sys.stderr)
        return 1
    print(f"links ok: {md_count} Markdown files, {src_count} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
