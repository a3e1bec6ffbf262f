"""JSON: each document's data as ``msgspec`` writes it (a report: ``steptrace.report/4``).

One document gives one object; several give a list of them. The sections are not used:
the data is the typed value they were built from, documented in docs/json-schema.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from steptrace.report.document import Document


class JsonRenderer:
    def __init__(self, *, terminal: bool = False) -> None:
        del terminal  # JSON is the same wherever it goes

    def render(self, documents: Sequence[Document]) -> str:
        data = [d.data for d in documents]
        payload: object = data[0] if len(data) == 1 else data
        return msgspec.json.format(msgspec.json.encode(payload).decode(), indent=2) + "\n"


RENDERER = JsonRenderer
