"""One rank's work, wherever it runs: a location -> its compact summary, or why not.

Contract: ``summarize(location, parts) -> RankData | RankFailure`` reads the trace at
``location`` (a local path, or an fsspec URL: ``s3://``, ``gs://``, ``file://``,
``memory://``... where fsspec and the backend's package are installed), loads the fields
the ``parts`` read, measures only those (``matrix.rank_data``) and returns only the
summary: no event table leaves this function. It never raises: a trace that cannot be
read, decoded or measured is a ``RankFailure`` whose ``error`` is one line that starts
with the location. Module-level and stateless, so that a process pool or a Dask worker can
run it by reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from steptrace.across.ranks.matrix import DEFAULT_PARTS, Part, RankData, rank_data, rank_fields
from steptrace.errors import TraceError
from steptrace.trace.load import read_trace
from steptrace.trace.read.remote import is_url


class RankFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A rank trace that could not be analyzed: where, and why (one line)."""

    location: str
    error: str  # starts with the location


def summarize(location: str, parts: Sequence[Part] = DEFAULT_PARTS) -> RankData | RankFailure:
    """The rank's summary, or its failure in one line (see the module's contract)."""
    try:
        trace = read_trace(location, rank_fields(parts), progress=False)
        return rank_data(trace, location if is_url(location) else None, parts)
    except TraceError as error:
        return failure(location, str(error))
    except MemoryError:
        return failure(location, "too large to analyze in this worker's memory")
    except Exception as error:  # one rank's surprise must not cost the others
        return failure(location, f"steptrace failed on it ({type(error).__name__}: {error})")


def failure(location: str, message: str) -> RankFailure:
    """The failure, its message on one line (the location kept as it is spelled)."""
    said = message[len(location) :] if message.startswith(location) else f": {message}"
    return RankFailure(location=location, error=location + " ".join(said.split()))
