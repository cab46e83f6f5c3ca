"""Which data files a compaction merges: size tiers, as in persist's spine.

Rewriting every file at or below `since` on each compaction costs the shard's
whole size every time, so an append-only shard that keeps growing (statement
history, an event table) pays more and more for the same new rows. Instead the
files are grouped into tiers by size, each tier FANOUT times wider than the one
below, and a tier is merged only once it holds enough files. A row is then
rewritten about once per tier it climbs through (logarithmically many times
over its life), small files are merged together quickly (their retractions meet
their insertions early), and the number of files stays small: at most FANOUT - 1
per tier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

BASE_BYTES = 1 << 20  # files below this are the smallest tier, merged as soon as there are two
FANOUT = 4  # each tier is this many times wider than the one below, and merged at this many files

F = TypeVar("F")


def tier(size: int) -> int:
    """0 below BASE_BYTES * FANOUT, then one more per FANOUT-fold of size."""
    n, bound = 0, BASE_BYTES * FANOUT
    while size >= bound:
        n += 1
        bound *= FANOUT
    return n


def merge_groups(files: Sequence[F], size: Callable[[F], int]) -> list[list[F]]:
    """The groups of `files` to rewrite, each into one: the smallest tier once it holds two
    files, a wider tier once it holds FANOUT. Files in no group stay as they are."""
    tiers: dict[int, list[F]] = {}
    for f in files:
        tiers.setdefault(tier(size(f)), []).append(f)
    return [group for n, group in sorted(tiers.items()) if len(group) >= (2 if n == 0 else FANOUT)]
