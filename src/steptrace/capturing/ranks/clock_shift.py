"""A rank whose host clock is ahead or behind: a copy of its trace with every time moved.

Kineto (torch 2.13) writes ``ts`` in µs as host wall-clock time minus
``baseTimeNanoseconds``, and that base is one constant of the build (``1790857026000000000``
in every rank of a run and in traces recorded days apart, measured): a host clock ``by_ms``
ahead shows as every ``ts`` ``by_ms`` later, the base unchanged. ``shift_clock`` writes
that copy: each event's ``ts`` (metadata events too) moves by exactly ``by_ms``; ``dur``
and everything else is kept as written.

Exact: numbers are decoded as ``decimal.Decimal`` and written back as JSON numbers, so the
nanosecond decimals of epoch-scale µs (``5299615850928.329``) survive, which float64 (about
1 ns resolution there) would not guarantee. The copy is created new (never overwritten),
gzip-compressed when its name ends in ``.gz``.
"""

from __future__ import annotations

import gzip
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from steptrace.errors import CaptureError
from steptrace.process.outputs import write_new

_DECODE = msgspec.json.Decoder(float_hook=Decimal)
_ENCODE = msgspec.json.Encoder(decimal_format="number")


def shift_clock(src: str | Path, dst: str | Path, by_ms: float) -> Path:
    """Write ``dst``: ``src`` with every event's ``ts`` moved by ``by_ms``; ``dst``."""
    src, dst = Path(src), Path(dst)
    document = _read(src)
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list):
        raise CaptureError(f"{src}: not a Chrome trace (no traceEvents list)")
    by_us = Decimal(repr(float(by_ms))) * 1000
    for event in events:
        if isinstance(event, dict) and _is_number(event.get("ts")):
            event["ts"] = Decimal(event["ts"]) + by_us
    data = _ENCODE.encode(document)
    if dst.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    try:
        write_new(dst, data)
    except FileExistsError:
        raise CaptureError(f"{dst} exists already: choose a new name") from None
    except OSError as exc:
        raise CaptureError(f"{dst}: cannot create ({exc.strerror or exc})") from None
    return dst


def _read(src: Path) -> Any:
    try:
        raw = src.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return _DECODE.decode(raw)
    except OSError as exc:
        raise CaptureError(f"{src}: cannot read ({exc.strerror or exc})") from None
    except (EOFError, zlib.error, gzip.BadGzipFile):
        raise CaptureError(f"{src}: broken gzip") from None
    except msgspec.DecodeError as exc:
        raise CaptureError(f"{src}: not JSON ({exc})") from None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)
