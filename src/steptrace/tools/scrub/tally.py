"""What scrub replaced (or, with ``--check``, would replace): counts per kind and per field."""

from __future__ import annotations

import msgspec


class Place(msgspec.Struct, frozen=True):
    """Replacements of one kind in one field."""

    kind: str
    field: str | None  # the field's name (a placeholder if it was a secret); None: no field
    count: int


class ScrubReport(msgspec.Struct, frozen=True):
    """The number of replacements per kind, in all, and per kind and field."""

    counts: dict[str, int]
    total: int
    places: tuple[Place, ...] = ()
