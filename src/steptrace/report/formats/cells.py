"""A cell's words: each value formatted by its column's unit. Formatting only, no figures.

``None`` is *not observed*, never zero; a ``Spread`` reads "median [min–max]".
"""

from __future__ import annotations

import math

from steptrace import units
from steptrace.analysis.spread import Spread
from steptrace.report.document import Cell, ColumnUnit
from steptrace.safe_text import visible

NOT_OBSERVED = "not observed"
__all__ = ["NOT_OBSERVED", "cell_text", "visible"]


def cell_text(value: Cell, unit: ColumnUnit) -> str:
    """The words for one cell."""
    if value is None:
        return NOT_OBSERVED
    if isinstance(value, str):
        return value
    if isinstance(value, Spread):
        return spread(value, unit)
    return number(value, unit)


def number(value: float, unit: ColumnUnit | str) -> str:
    """A number in its unit: ms and µs with decimals, shares as %, counts whole when whole."""
    if unit == "ms":
        return units.ms(value)
    if unit == "delta_ms":
        return f"{value:+.3f}"
    if unit == "us":
        return units.us(value)
    if unit == "share":
        return units.pct(value)
    if unit == "ratio":
        return f"{value:.2f}×"
    if unit == "bytes":
        return units.size(value)
    if unit == "gbps":
        return f"{value:.3g} GB/s"
    whole = float(value).is_integer() and abs(value) < 1e15
    if unit == "count" and whole:
        return f"{int(value):,}"
    if unit == "count" and math.isfinite(value):  # a mean count (calls per step)
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"  # a number without a unit: three significant digits


def spread(value: Spread, unit: ColumnUnit) -> str:
    """``median [min–max]``, or just the value when all are equal."""
    if value.min == value.max:
        return number(value.median, unit)
    return f"{number(value.median, unit)} [{number(value.min, unit)}–{number(value.max, unit)}]"
