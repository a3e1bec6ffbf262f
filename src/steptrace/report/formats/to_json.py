"""JSON: each document's data as ``msgspec`` writes it (a report: ``steptrace.report/4``).

One document gives one object; several give a list of them. The sections are not used:
the data is the typed value they were built from, documented in docs/json-schema.md.
Strings hold exactly what the trace holds, but what a reader of the text cannot see
(bidirectional controls, zero-width characters, C1 controls) is written as a ``\\u``
escape, and a file name that is not valid UTF-8 shows its bytes as ``\\xff`` text
(``safe_text``): JSON cannot hold them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from steptrace.report.document import Document
from steptrace.safe_text import json_visible, without_surrogates


class JsonRenderer:
    def __init__(self, *, terminal: bool = False) -> None:
        del terminal  # JSON is the same wherever it goes

    def render(self, documents: Sequence[Document]) -> str:
        data = [d.data for d in documents]
        payload: object = data[0] if len(data) == 1 else data
        try:
            encoded = msgspec.json.encode(payload)
        except UnicodeEncodeError:  # a lone surrogate: a file name that is not UTF-8
            encoded = msgspec.json.encode(_encodable(msgspec.to_builtins(payload)))
        return json_visible(msgspec.json.format(encoded.decode(), indent=2)) + "\n"


def _encodable(value: Any) -> Any:
    """``value`` with every string's lone surrogates shown as escapes, keys included."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value


RENDERER = JsonRenderer
