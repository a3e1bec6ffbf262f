"""Scrubbing a scrubbed trace changes nothing: the cases the property test once found.

Each test builds the smallest document that showed a second scrub replacing more, and
checks the first scrub's result and that a second one returns it unchanged. Secrets are
assembled at run time (no token-shaped literal in the source).
"""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.tools.scrub import scrub_document
from steptrace.tools.scrub.field_kinds import field_kind


def scrub_twice(doc: Any) -> Any:
    """The first scrub's result, after checking that a second one changes nothing."""
    first, _ = scrub_document(doc)
    again, report = scrub_document(first)
    assert (again, report.counts) == (first, {})
    return first


def test_a_key_replaced_by_a_secret_placeholder_governs_nothing() -> None:
    """A URL password that is also a key elsewhere: the key becomes ``<secret-1>``, which
    must not make the key's value a secret on the next scrub (``<token-1>``,
    ``<hex-secret-1>`` read as words are secret-named too)."""
    password = "lab" + "els"
    doc = {
        "traceEvents": [{"ph": "M", "name": "process_labels", "args": {password: "CPU"}}],
        "note": f"postgres://bob:{password}@db.example.internal:5432/db",
    }
    first = scrub_twice(doc)
    assert first["traceEvents"][0]["args"] == {"<secret-1>": "CPU"}


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("<secret-4>", None),
        ("<token-1>", None),
        ("<hex-secret-2>", None),
        ("<base64-secret-3>", None),
        ("x-<secret-1>", None),
        ("<user-1>_key", None),  # a user "sort" of "sort_key"
        ("<user-1>_token", "secret"),  # the words beside a placeholder still count
        ("<host-2>_hostname", "host"),
    ],
)
def test_a_placeholder_in_a_field_name_is_no_word(key: str, kind: str | None) -> None:
    assert field_kind(key) == kind


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("trace_id", "trace_id", "608603CCCD4948B49EBD57C446609168"),
        ("version", "cuda_driver_version", "10.0.0.1"),
        ("torch-release", "torch-release", "192.168.0.1"),
    ],
)
def test_a_key_that_keeps_its_value_once_renamed_keeps_it_no_more(
    name: str, key: str, value: str
) -> None:
    """A user declared as ``trace_id`` (or ``version``) renames the key: the hex id (the
    private address under a version field) is then scrubbed by the first scrub already, as
    the second would."""
    doc = {"traceEvents": [], "system": {"username": name}, "extra": {key: value}}
    first = scrub_twice(doc)
    assert list(first["extra"].values()) != [value]


def test_a_renamed_key_that_stays_a_version_keeps_its_value() -> None:
    doc = {
        "traceEvents": [],
        "system": {"username": "nvidiax"},
        "extra": {"nvidiax_driver_version": "10.0.0.1"},
    }
    first = scrub_twice(doc)
    assert first["extra"] == {"<user-1>_driver_version": "10.0.0.1"}


_BASE64 = "Ab1xY" * 9  # 45 characters mixing cases and digits
_HEX = "ab12" * 9


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        (f"/home/alice/{_BASE64}", "/home/<user-1><base64-secret-1>"),
        (f"~alice/{_BASE64}", "~<user-1><base64-secret-1>"),
        (f"postgres://bob:pw@db.x.internal/{_BASE64}", "postgres://<user-2>:<secret-1>@<host-1>"),
        (f"alice.{_HEX}", "<user-1>.<hex-secret-1>"),
    ],
)
def test_what_a_placeholder_uncovers_is_scrubbed_by_the_first_scrub(
    text: str, scrubbed: str
) -> None:
    """A run that touched a name (``alice/`` + base64) is a secret once the name is a
    placeholder: the first scrub replaces it (it used to keep it, and a second scrub then
    replaced it)."""
    doc = {"traceEvents": [], "username": "alice", "note": text}
    first = scrub_twice(doc)
    assert first["note"].startswith(scrubbed)
    assert _BASE64 not in first["note"] and _HEX not in first["note"]
