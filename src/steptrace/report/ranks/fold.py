"""Per-rank rows that stay readable at 8, 64 and 512 ranks: which ranks to name, and the
median / p90 / max rows that stand for the others. Presentation choices, no new figure.

Up to ``FOLD_ABOVE`` ranks every rank is a row. Beyond, a table names the ``NAMED`` ranks
that deviate most (stragglers first), adds median, p90 and max rows over every rank, and
its caption says how many ranks were folded into those rows. Heatmaps keep every rank up
to ``BIN_ABOVE`` rows, then draw bins of neighbouring ranks (the value farthest from 0).
The JSON is never folded: these helpers serve the text, Markdown and HTML sections only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

FOLD_ABOVE = 16  # ranks shown one by one up to this many
NAMED = 8  # beyond it: the ranks named in a table
BIN_ABOVE = 128  # heatmap rows drawn one per rank up to this many
STATS = ("median", "p90", "max")


def folds(ranks: Sequence[int]) -> bool:
    return len(ranks) > FOLD_ABOVE


def named_ranks(
    ranks: Sequence[int], deviation: Mapping[int, float], first: Sequence[int] = ()
) -> tuple[int, ...]:
    """Every rank when few; else ``first`` (the stragglers) and the most deviating ones, by
    rank number."""
    if not folds(ranks):
        return tuple(ranks)
    given = set(ranks)
    chosen = [r for r in dict.fromkeys(first) if r in given][:NAMED]
    rest = sorted((r for r in ranks if r not in chosen), key=lambda r: (-deviation.get(r, 0), r))
    return tuple(sorted([*chosen, *rest[: NAMED - len(chosen)]]))


def stat(values: Iterable[float | None], name: str) -> float | None:
    """median, p90 (nearest rank) or max of the observed values; None when none was."""
    seen = sorted(v for v in values if v is not None)
    if not seen:
        return None
    if name == "median":
        return statistics.median(seen)
    if name == "p90":
        return seen[max(0, math.ceil(0.9 * len(seen)) - 1)]
    return seen[-1]


def deviations(per_rank: Mapping[int, Sequence[float | None]]) -> dict[int, float]:
    """How far each rank is from the median rank, in the unit of its values: the largest
    absolute difference over the columns (a column not observed counts 0)."""
    columns = max((len(v) for v in per_rank.values()), default=0)
    middles = [
        stat((v[c] for v in per_rank.values() if c < len(v)), "median") for c in range(columns)
    ]
    out: dict[int, float] = {}
    for rank, values in per_rank.items():
        gaps = [
            abs(v - m)
            for v, m in zip(values, middles, strict=False)
            if v is not None and m is not None
        ]
        out[rank] = max(gaps, default=0.0)
    return out


def folded_caption(total: int, named: int) -> str:
    return (
        f"{total} ranks: {named} named (those that deviate most), the other {total - named} "
        "folded into the median, p90 and max rows (over all ranks); the JSON has every rank"
    )


def bins(ranks: Sequence[int]) -> list[tuple[str, list[int]]]:
    """Heatmap rows: one per rank, or beyond ``BIN_ABOVE`` bins of neighbouring ranks."""
    size = math.ceil(len(ranks) / BIN_ABOVE) if len(ranks) > BIN_ABOVE else 1
    out = []
    for k in range(0, len(ranks), size):
        chunk = list(ranks[k : k + size])
        label = f"rank {chunk[0]}" if len(chunk) == 1 else f"{chunk[0]}–{chunk[-1]}"
        out.append((label, chunk))
    return out


def farthest(values: Iterable[float | None]) -> float | None:
    """The value farthest from 0 (a bin's colour: its worst rank); None when none observed."""
    seen = [v for v in values if v is not None]
    return max(seen, key=abs) if seen else None


def rank_list(ranks: Sequence[int], limit: int = 12) -> str:
    """``0, 1, 3`` or ``0–511`` (runs joined), shortened beyond ``limit`` pieces."""
    runs: list[str] = []
    ordered = sorted(ranks)
    start = prev = ordered[0] if ordered else 0
    for r in [*ordered[1:], None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        runs.append(str(start) if start == prev else f"{start}–{prev}")
        if r is not None:
            start = prev = r
    if not ordered:
        return "none"
    shown = ", ".join(runs[:limit])
    return shown + (f" and {len(runs) - limit} more runs" if len(runs) > limit else "")


def absent_runs(world: int, given: Sequence[int], limit: int = 12) -> str:
    """The ranks of ``range(world)`` not in ``given``, as ``rank_list`` writes them, found
    from the gaps between the given ones: the world is never listed (its size is a trace's
    word, and 10**9 must not take the machine's memory)."""
    runs: list[str] = []
    start = 0
    for rank in [*sorted({r for r in given if 0 <= r < world}), world]:
        if rank > start:
            runs.append(str(start) if rank - 1 == start else f"{start}–{rank - 1}")
        start = rank + 1
    if not runs:
        return "none"
    shown = ", ".join(runs[:limit])
    return shown + (f" and {len(runs) - limit} more runs" if len(runs) > limit else "")
