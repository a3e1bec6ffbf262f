"""Numbers in words: one formatter per unit, shared by the findings and the reports."""

from __future__ import annotations


def pct(share: float) -> str:
    """A share (0 to 1) as a percentage: ``0.123`` -> ``12.3%``."""
    return f"{100 * share:.1f}%"


def ms(value: float) -> str:
    """Milliseconds: three decimals below 10 ms, two above, thousands separated."""
    return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.2f}"


def us(value: float) -> str:
    """Microseconds, two decimals."""
    return f"{value:,.2f}"


def size(nbytes: float) -> str:
    """A byte count in decimal units: ``1536`` -> ``1.5 KB``."""
    value = float(nbytes)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(value) < 1000 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def short(name: str, width: int = 70) -> str:
    """A long name cut to ``width`` characters, with an ellipsis."""
    return name if len(name) <= width else name[: width - 1] + "…"
