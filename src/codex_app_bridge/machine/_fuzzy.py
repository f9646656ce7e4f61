"""``fuzzyFileSearch``: files and directories under roots whose path matches a query fuzzily.

The query's characters must appear in order in the path relative to the root (case-insensitive);
a match scores more for consecutive characters, characters at the start of a path component and
in the file name, and less for a longer path. The walk skips ``.git`` and what the root's
``.gitignore`` names (simple patterns), stops after ``MAX_VISITED`` entries, and the best
``LIMIT`` matches are returned, shaped as 0.163.0 returns them (``root``, ``path``,
``match_type``, ``file_name``, ``score``, ``indices``). Scores are the bridge's own (0.163.0 uses
the nucleo matcher); the order of clear winners agrees.

Blocking (run in a worker thread); ``cancelled()`` is checked while walking.
"""

from __future__ import annotations

import fnmatch
import heapq
import os
from collections.abc import Callable
from typing import Any, Final

__all__ = ["LIMIT", "fuzzy_search", "match"]

LIMIT: Final = 50
MAX_VISITED: Final = 200_000


def match(query: str, text: str) -> tuple[int, list[int]] | None:
    """``(score, indices)`` of the best greedy alignment of ``query`` in ``text``, or None."""
    q = query.lower()
    t = text.lower()
    if not q:
        return None
    indices: list[int] = []
    start = 0
    for ch in q:
        found = t.find(ch, start)
        if found < 0:
            return None
        indices.append(found)
        start = found + 1
    # tighten: for each char from the end, move it right-to-left as late as possible
    for k in range(len(indices) - 2, -1, -1):
        later = t.rfind(q[k], indices[k], indices[k + 1])
        if later > indices[k]:
            indices[k] = later
    name_start = text.rfind("/") + 1
    score = 0
    for n, i in enumerate(indices):
        score += 16
        if n and indices[n - 1] == i - 1:
            score += 24
        if i == 0 or text[i - 1] in "/_-. ":
            score += 12
        if i >= name_start:
            score += 8
        if text[i] == query[n]:
            score += 1
    score -= len(text) // 4
    return max(score, 1), indices


def _ignored(root: str) -> list[str]:
    try:
        with open(os.path.join(root, ".gitignore"), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [p.strip().rstrip("/") for p in lines if p.strip() and not p.startswith(("#", "!"))]


def fuzzy_search(
    query: str, roots: list[str], cancelled: Callable[[], bool] = lambda: False
) -> list[dict[str, Any]]:
    if not query or not roots:
        return []
    best: list[tuple[int, str, str, dict[str, Any]]] = []
    visited = 0
    for root in roots:
        if not os.path.isdir(root):
            continue
        patterns = _ignored(root)
        for dirpath, dirnames, filenames in os.walk(root):
            if cancelled():
                return []
            rel_dir = os.path.relpath(dirpath, root)
            keep: list[str] = []
            for d in dirnames:
                if d == ".git" or any(fnmatch.fnmatch(d, p) for p in patterns):
                    continue
                keep.append(d)
            dirnames[:] = sorted(keep)
            names = [(d, "directory") for d in dirnames] + [
                (f, "file")
                for f in sorted(filenames)
                if not any(fnmatch.fnmatch(f, p) for p in patterns)
            ]
            for name, kind in names:
                visited += 1
                if visited > MAX_VISITED:
                    break
                path = name if rel_dir == "." else f"{rel_dir}/{name}"
                found = match(query, path)
                if found is None:
                    continue
                score, indices = found
                row = {
                    "root": root,
                    "path": path,
                    "match_type": kind,
                    "file_name": name,
                    "score": score,
                    "indices": indices,
                }
                entry = (score, root, path, row)
                if len(best) < LIMIT:
                    heapq.heappush(best, entry)
                elif entry[0] > best[0][0]:
                    heapq.heapreplace(best, entry)
    return [row for _, _, _, row in sorted(best, key=lambda e: (-e[0], e[2]))]
