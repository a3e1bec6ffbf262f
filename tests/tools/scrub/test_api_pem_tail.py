"""scrub, a PEM block cut before its END line (issue #47), through the real ``steptrace scrub``.

Every header type, its body cut after 1, 2 or 3 lines (64 characters, then a short last
line the base64 rule alone never takes), with and without a trailing newline, in every
place of ``test_api_secrets`` and on a command line (one element, one line an element, the
header's words split as an unquoted ``$KEY`` splits them), behind a secret-named
assignment or ``Bearer`` (whose value once took the header's dashes, leaving the body to
the other rules), and with the header written in ``\\u`` escapes. The secret runs from its
header to its END line or the end of its string, and over the following strings of a list
up to an END line or an option; nothing else changes. Headers are assembled at run time:
no key-shaped literal sits in the source.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from tests.conftest import gpu_trace, read_json
from tests.tools.scrub.test_api_secrets import ALNUM, PLACES, all_strings

_DASHES = "-" * 5
_TYPES = (
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "DSA PRIVATE KEY",
    "PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "OPENSSH PRIVATE KEY",
    "PGP PRIVATE KEY BLOCK",
    "CERTIFICATE",
    "PUBLIC KEY",
)
HEADERS = (
    *(f"{_DASHES}BEGIN {kind}{_DASHES}" for kind in _TYPES),
    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----",
)
_PLACEHOLDER_KINDS = re.compile(r"<([a-z-]+)-[1-9][0-9]*>")


@dataclass(frozen=True)
class Tail:
    """A PEM block without its END line: its header, then ``lines``."""

    header: str
    lines: tuple[str, ...]
    newline: bool  # the string ends with a newline

    @property
    def text(self) -> str:
        return "\n".join((self.header, *self.lines)) + ("\n" if self.newline else "")


def tails(seed: int, cuts: tuple[int, ...] = (1, 2, 3)) -> list[Tail]:
    """Every header, cut after each of ``cuts`` lines of random base64."""
    rng = random.Random(seed)
    found = []
    for number, header in enumerate(HEADERS):
        for cut in cuts:
            lines = [_random(rng, 64) for _ in range(cut - 1)] + [_random(rng, 12)]
            found.append(Tail(header, tuple(lines), (number + cut) % 2 == 0))
    return found


def _random(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(ALNUM + "+/") for _ in range(size))


def _args(doc: dict[str, Any]) -> dict[str, Any]:
    event = next(e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op")
    args: dict[str, Any] = event.setdefault("args", {})
    return args


def _in_text(place: str) -> Callable[[dict[str, Any], Tail, int], None]:
    return lambda doc, tail, n: PLACES[place](doc, tail.text, n)


def _argv(*before: str, after: tuple[str, ...] = ("--epochs", "3"), words: bool = False) -> Any:
    """A command line: ``before``, the block's header and each of its lines, ``after``."""

    def place(doc: dict[str, Any], tail: Tail, n: int) -> None:
        header = tail.header.split(" ") if words else [tail.header]
        _args(doc)[f"argv{n}"] = [*before, *header, *tail.lines, *after]

    return place


def _metadata(prefix: str) -> Callable[[dict[str, Any], Tail, int], None]:
    return lambda doc, tail, n: doc.setdefault("metadata", {}).update(
        {f"env{n}": prefix + tail.text}
    )


PEM_PLACES: dict[str, Callable[[dict[str, Any], Tail, int], None]] = {
    **{place: _in_text(place) for place in PLACES},
    "argv element": lambda doc, tail, n: _args(doc).update(
        {f"argv{n}": ["python", "train.py", "--key", tail.text, "--epochs", "3"]}
    ),
    "argv lines": _argv("python", "train.py"),
    "argv lines, last": _argv("torchrun", after=()),
    "argv lines, \\u escapes": _argv("python", "train.py"),
    "argv words": _argv("python", "train.py", "--key", words=True),
    "environment variable": _metadata("SSH_PRIVATE_KEY="),
    "option": _metadata("--private-key="),
    "option and space": _metadata("python train.py --ssh-private-key "),
    "Bearer": _metadata("Authorization: Bearer "),
}
_ESCAPED = "argv lines, \\u escapes"  # its JSON writes every BEGIN as \u0042EGIN


@pytest.fixture(scope="module")
def clean_doc() -> dict[str, Any]:
    """A real trace cut to its first 60 events, with nothing left to scrub."""
    doc: dict[str, Any] = read_json(gpu_trace("cpu_infer"))
    doc.pop("host_name", None)
    return {**doc, "traceEvents": doc["traceEvents"][:60]}


def planted(doc: dict[str, Any], place: str, blocks: list[Tail]) -> dict[str, Any]:
    copied = copy.deepcopy(doc)
    for number, tail in enumerate(blocks):
        PEM_PLACES[place](copied, tail, number)
    return copied


def write(folder: Path, doc: dict[str, Any], place: str) -> Path:
    """The trace as JSON text, written as JSON writes it (``\\n`` escaped)."""
    text = json.dumps(doc)
    if place == _ESCAPED:
        text = text.replace("BEGIN", "\\u0042EGIN")
        assert json.loads(text) == doc
    path = folder / "planted.json"
    path.write_text(text)
    return path


def scrub(path: Path, *options: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["scrub", *options, str(path)])
    return done.exit_code, done.output


def changed(before: Any, after: Any) -> Iterator[tuple[str, str]]:
    """(old, new) of every string that differs between two documents of the same shape."""
    if isinstance(before, str):
        if before != after:
            yield before, after
    elif isinstance(before, dict):
        assert len(before) == len(after)
        for (key, value), (new_key, new_value) in zip(before.items(), after.items(), strict=True):
            yield from changed(key, new_key)
            yield from changed(value, new_value)
    elif isinstance(before, list):
        for value, new_value in zip(before, after, strict=True):
            yield from changed(value, new_value)
    else:
        assert before == after


def key_parts(blocks: list[Tail]) -> set[str]:
    """What a block's strings may be when a list splits it: a line, or a header's word."""
    return {part for tail in blocks for part in (*tail.lines, *tail.header.split(" "))}


@pytest.mark.parametrize("place", list(PEM_PLACES))
def test_every_tail_is_replaced_and_nothing_else(
    clean_doc: dict[str, Any], place: str, tmp_path: Path
) -> None:
    blocks = tails(seed=len(place))
    doc = planted(clean_doc, place, blocks)
    source, copy_path = write(tmp_path, doc, place), tmp_path / "shared.json"
    code, output = scrub(source, "-o", str(copy_path))
    assert code == 0, output
    scrubbed = read_json(copy_path)
    texts = list(all_strings(scrubbed))
    left = [line for tail in blocks for line in tail.lines if any(line in t for t in texts)]
    assert left == [], f"{len(left)} lines survive, first {left[:3]}"
    parts = key_parts(blocks)
    for old, new in changed(doc, scrubbed):
        assert old in parts or any(tail.header in old for tail in blocks), (old, new)
        assert set(_PLACEHOLDER_KINDS.findall(new)) == {"pem"}, (old, new)
    assert scrub(copy_path, "--check")[0] == 0  # the copy is clean: a second scrub is a no-op


@pytest.mark.parametrize("header", HEADERS, ids=[h.strip("- ") for h in HEADERS])
@pytest.mark.parametrize("place", list(PEM_PLACES))
def test_scrub_check_reports_a_header_and_one_short_line(
    clean_doc: dict[str, Any], place: str, header: str, tmp_path: Path
) -> None:
    (block,) = [tail for tail in tails(seed=7, cuts=(1,)) if tail.header == header]
    source = write(tmp_path, planted(clean_doc, place, [block]), place)
    code, output = scrub(source, "--check")
    assert code == 1, output
    assert set(re.findall(r"^  (\S+) +×", output, re.MULTILINE)) == {"pem"}, output


def test_the_clean_trace_is_clean(clean_doc: dict[str, Any], tmp_path: Path) -> None:
    code, output = scrub(write(tmp_path, clean_doc, "clean"), "--check")
    assert code == 0, output


def test_a_mention_of_begin_or_dashes_is_no_secret(
    clean_doc: dict[str, Any], tmp_path: Path
) -> None:
    """Text that only looks like a header's pieces stays, and so do the strings after a
    block in a list once an option or its END line closes it."""
    ssh2 = tails(seed=3, cuts=(1,))[-1]
    full = f"{_DASHES}BEGIN {_TYPES[0]}{_DASHES}\nAbCd0123\n{_DASHES}END {_TYPES[0]}{_DASHES}"
    kept = {
        "words": "BEGIN transaction; COMMIT",
        "no type": f"{_DASHES}BEGIN{_DASHES}",
        "lower case": "---- BEGIN step 3 ----",
        "rule": "epoch 3 ---- loss 0.1 ---- done",
        "psql": ["psql", "-c", "BEGIN", "COMMIT"],
        "echo": ["echo", "----", "hello", "world"],
        "word then option": ["x", f"{_DASHES}BEGIN", "--epochs", "3"],
    }
    doc = copy.deepcopy(clean_doc)
    doc["metadata"] = {
        **kept,
        "env": f"private_key: {ssh2.text}",  # declares no ``----`` to replace everywhere
        "argv": ["python", full, "--epochs", "3"],
        "cut argv": ["python", ssh2.header, *ssh2.lines, "--lr", "0.1"],
    }
    copy_path = tmp_path / "shared.json"
    code, output = scrub(write(tmp_path, doc, "mentions"), "-o", str(copy_path))
    assert code == 0, output
    metadata = read_json(copy_path)["metadata"]
    assert {key: metadata[key] for key in kept} == kept
    assert re.fullmatch(r"private_key: <pem-\d+>", metadata["env"]), metadata["env"]
    assert metadata["argv"][::2] == ["python", "--epochs"] and metadata["argv"][3] == "3"
    assert metadata["cut argv"][-2:] == ["--lr", "0.1"]
