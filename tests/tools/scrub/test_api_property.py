"""Property: generated secrets of every class, planted in random fields of a real trace,
never survive scrub; the trace's numbers stay the same; a second scrub changes nothing; and
the analysis's numbers stay the same unless a planted name is also a word of the trace.

That last case is out of what scrub promises: a declared name is replaced everywhere, so a
user (or a URL password) ``dataloader`` renames the trace's own ``DataLoader`` events and
the analysis counts them differently (README: "replaced there too"). Hypothesis draws such
words (it tries the string constants of the code under test), so the figures are compared
only when every string of the original trace is still in the copy.
"""

from __future__ import annotations

import functools
import json
import random
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import example, given, settings
from hypothesis import strategies as st

import steptrace
from steptrace.tools.scrub import scrub_document, scrub_file
from tests.conftest import gpu_trace, read_json
from tests.tools.scrub.test_api_secrets import (
    ANY_SECRET,
    PLACES,
    TOKEN_SHAPES,
    Secret,
    masked_strings,
    plant,
    survivors,
)

_STRING = re.compile(r'("(?:[^"\\]|\\.)*":)|"(?:[^"\\]|\\.)*"')  # a key, or a value


def numbers(doc: Any) -> str:
    """The document's JSON with every string blanked: its numbers and its shape."""
    return _STRING.sub(lambda m: '"":' if m.group(1) else '""', json.dumps(doc))


def figures(path: Path) -> str:
    """Every number of the trace's analysis, strings blanked (names may hold a secret)."""
    analysis = steptrace.analyze(path).analysis
    assert analysis.steps  # something to compare
    return numbers(msgspec.to_builtins(analysis))


@functools.cache
def small_doc() -> dict[str, Any]:
    """A real training trace cut to its first 400 events (two steps' worth), with metadata."""
    doc: dict[str, Any] = read_json(gpu_trace("cpu_train_trace.json.gz"))
    return {**doc, "traceEvents": doc["traceEvents"][:400]}


# Found by the test: a URL password that is a key of the trace ("labels"); the key's
# placeholder ``<secret-N>`` read as a secret-named field, a second scrub replaced its value.
LABELS = [
    (Secret("user", "run by F000 (nightly)", (), ("f000",), {"username": "f000"}), "event name"),
    (
        Secret(
            "secret",
            "postgres://a0000000:labels@a00.aa00.internal:5432/db",
            (":labels@", "a00.aa00.internal"),
            ("a0000000",),
        ),
        "event name",
    ),
]


@functools.cache
def small_doc_strings() -> Counter[str]:
    """The strings of the trace scrubbed with nothing planted, placeholders masked."""
    return Counter(masked_strings(scrub_document(small_doc())[0]))


@settings(max_examples=40, deadline=None)
@given(
    planted=st.lists(st.tuples(ANY_SECRET, st.sampled_from(list(PLACES))), min_size=1, max_size=5)
)
@example(planted=LABELS)
def test_planted_secrets_never_survive_and_numbers_stay(planted: list[Any]) -> None:
    doc = plant(small_doc(), planted)
    secrets = [secret for secret, _ in planted]
    scrubbed, report = scrub_document(doc)
    assert survivors(scrubbed, secrets) == []
    words = [word.lower() for secret in secrets for word in secret.words]
    if len(set(words)) == len(words):  # one name declared as a user and a host: the first wins
        assert all(secret.reported(report.counts) for secret in secrets)
    assert numbers(scrubbed) == numbers(doc)
    again, second = scrub_document(scrubbed)
    assert (again, second.total) == (scrubbed, 0)
    if small_doc_strings() - Counter(masked_strings(scrubbed)):
        return  # a planted name is a word of the trace ("batch"): replaced there too (README)
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder, "planted.json"), Path(folder, "scrubbed.json.gz")
        source.write_text(json.dumps(doc))
        scrub_file(source, target)
        assert figures(target) == figures(source)


def test_the_figures_are_left_out_only_when_a_planted_name_is_a_word_of_the_trace() -> None:
    """``dataloader`` names the trace's own events: the copy lacks a string of the trace."""

    def lacks(name: str) -> bool:
        user = Secret("user", f"run by {name}", (), (name,), {"username": name})
        scrubbed, _ = scrub_document(plant(small_doc(), [(user, "event name")]))
        return bool(small_doc_strings() - Counter(masked_strings(scrubbed)))

    assert lacks("dataloader")
    assert not lacks("zq" + "vwxk")


def test_a_placeholder_s_kind_word_is_no_survivor() -> None:
    """A user named ``token`` is replaced; the ``<token-1>`` of a planted token is scrub's."""
    user = Secret("user", "run by token", (), ("token",), {"username": "token"})
    token = TOKEN_SHAPES["hugging-face"](random.Random(3))
    planted = [(user, "event name"), (Secret("token", token, (token,)), "args value")]
    scrubbed, _ = scrub_document(plant(small_doc(), planted))
    assert "<token-1>" in json.dumps(scrubbed)
    assert survivors(scrubbed, [secret for secret, _ in planted]) == []
    assert survivors({"name": "run by token"}, [user]) == ["token"]
