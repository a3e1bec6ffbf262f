"""scrub: one placeholder per secret, nothing else changed, idempotent, files and the command.

Every secret is generated at run time (``test_scrub_secrets``): no token-shaped literal
sits in the source.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.errors import TraceError
from steptrace.tools.scrub import check_file, scrub_document, scrub_file, scrub_text
from steptrace.tools.scrub.text import split_strings
from tests.conftest import NOT_A_TRACE, WriteTrace, gpu_trace, read_json, shared_file
from tests.tools.scrub.test_api_secrets import TOKEN_SHAPES, all_strings

runner = CliRunner()
RNG_SEED = 12


def _name(rng: random.Random) -> str:
    return rng.choice("bcdfghjklmnpqrstvwz") + "".join(rng.choice("aeiou") for _ in range(3))


@pytest.fixture(scope="module")
def people() -> dict[str, str]:
    """Generated names and secrets, the same for every test of the module."""
    rng = random.Random(RNG_SEED)
    user, other = _name(rng) + "x", _name(rng) + "y"
    return {
        "user": user,
        "other": other,
        "email": f"{user}.{other}@{_name(rng)}.example.org",
        "other_email": f"{other}+ml@{_name(rng)}.example.com",
        "token": TOKEN_SHAPES["hugging-face"](rng),
        "short_secret": _name(rng)[:3] + "7",
    }


@pytest.fixture(scope="module")
def planted(people: dict[str, str]) -> dict[str, Any]:
    """A real trace with a declared user, a secret field, and both found again in names."""
    doc: dict[str, Any] = read_json(gpu_trace("cpu_train_trace_all"))
    del doc["host_name"]  # the only name the trace declares: here, only what is planted
    doc["username"] = people["user"]
    doc["metadata"] = {
        "env": {"WANDB_API_KEY": people["short_secret"], "HF_TOKEN": people["token"]}
    }
    events = doc["traceEvents"]
    operators = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    operators[0].setdefault("args", {})["note"] = (
        f"mail {people['email']}; cc {people['other_email']}; key {people['short_secret']}"
    )
    operators[1].setdefault("args", {})["file"] = f"/home/{people['user'].upper()}/train.py"
    for _ in range(2):  # two events that share a name still share one
        events.append({"ph": "i", "s": "t", "name": f"login {people['email']}", "ts": 1, "pid": 1})
    return doc


@pytest.fixture(scope="module")
def scrubbed(planted: dict[str, Any]) -> tuple[Any, Any]:
    return scrub_document(planted)


def test_the_same_secret_gets_the_same_placeholder(
    scrubbed: tuple[Any, Any], people: dict[str, str]
) -> None:
    doc, _ = scrubbed
    assert doc["username"] == "<user-1>"
    operators = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    assert operators[1]["args"]["file"] == "/home/<user-1>/train.py"  # any capitalisation
    env = doc["metadata"]["env"]
    assert env == {"WANDB_API_KEY": "<secret-1>", "HF_TOKEN": "<token-1>"}
    assert operators[0]["args"]["note"] == "mail <email-1>; cc <email-2>; key <secret-1>"
    logins = [e["name"] for e in doc["traceEvents"] if e["name"].startswith("login ")]
    assert logins == ["login <email-1>", "login <email-1>"]


def test_only_the_secrets_change(scrubbed: tuple[Any, Any], planted: dict[str, Any]) -> None:
    doc, _ = scrubbed
    before, after = list(all_strings(planted)), list(all_strings(doc))
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert len(changed) == 7  # username, the two env values, note, file, the two logins
    assert all(re.search(r"<(user|email|secret|token)-\d>", a) for _, a in changed)


def test_the_report_counts_each_class_and_says_where(scrubbed: tuple[Any, Any]) -> None:
    _, report = scrubbed
    assert report.counts == {"email": 4, "secret": 2, "token": 1, "user": 2}
    assert report.total == 9
    places = {(p.kind, p.field): p.count for p in report.places}
    assert places[("email", "name")] == 2
    assert places[("secret", "WANDB_API_KEY")] == 1
    assert places[("user", "file")] == 1


def test_scrubbing_is_pure_deterministic_and_idempotent(planted: dict[str, Any]) -> None:
    before = json.dumps(planted)
    first, _ = scrub_document(planted)
    second, _ = scrub_document(planted)
    assert json.dumps(planted) == before
    assert first == second
    again, report = scrub_document(first)
    assert (again, report.total) == (first, 0)


def test_placeholders_are_kept_and_new_ones_numbered_after_them(people: dict[str, str]) -> None:
    """Scrubbing a merged trace never gives a second person the first one's placeholder."""
    doc = {
        "username": "<user-1>",
        "traceEvents": [
            {"ph": "i", "name": f"/home/<user-1>/a.py /home/{people['other']}/b.py", "ts": 1},
            {"ph": "i", "name": f"<email-3> {people['email']} <host-1>", "ts": 2},
        ],
    }
    scrubbed, report = scrub_document(doc)
    names = [e["name"] for e in scrubbed["traceEvents"]]
    assert names == ["/home/<user-1>/a.py /home/<user-2>/b.py", "<email-3> <email-4> <host-1>"]
    assert report.counts == {"email": 1, "user": 1}


def test_numbers_and_untouched_strings_stay_byte_for_byte(people: dict[str, str]) -> None:
    """``ts`` is read from the text exactly: scrub rewrites strings and nothing else."""
    name = f"by {people['email']}"
    text = (
        (
            '{"traceEvents": [ {"ph":"X", "name": "NAME", "ts": 1695835535123456.789, "dur": 1e-3,'
            ' "args": {"x": 5.0E+01, "y": "caf\\u00e9"}} ] ,"displayTimeUnit" : "ns"}'
        )
        .replace("NAME", name)
        .encode()
    )
    scrubbed, _ = scrub_text(text)
    before, after = split_strings(text), split_strings(scrubbed)
    assert before[0::2] == after[0::2]  # everything between strings
    assert [b for b, a in zip(before, after, strict=True) if b != a] == [name.encode()]
    assert b"1695835535123456.789" in scrubbed


def test_a_trace_that_is_a_list_of_events(people: dict[str, str]) -> None:
    doc = [{"ph": "i", "name": f"to {people['email']}", "ts": 1}]
    assert scrub_document(doc)[0] == [{"ph": "i", "name": "to <email-1>", "ts": 1}]


# Files: gzip in and out, several gzip members, nothing overwritten, one-line errors.
def test_files_in_several_gzip_members_and_a_deterministic_output(
    tmp_path: Path, planted: dict[str, Any]
) -> None:
    data = json.dumps(planted).encode()
    source = tmp_path / "planted.json.gz"
    source.write_bytes(gzip.compress(data[:1000]) + gzip.compress(data[1000:]))
    before = source.read_bytes()
    first, second = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    assert scrub_file(source, first) == scrub_file(source, second)
    assert source.read_bytes() == before
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[:2] == b"\x1f\x8b"
    assert read_json(first) == scrub_document(planted)[0]
    plain = tmp_path / "c.json"
    scrub_file(source, plain)
    assert plain.read_bytes()[:1] == b"{"
    assert check_file(first).total == 0
    assert check_file(source).total == 9


def assert_error(source: Path, target: Path, problem: str, named: Path) -> None:
    with pytest.raises(TraceError) as caught:
        scrub_file(source, target)
    message = str(caught.value)
    assert "\n" not in message
    assert str(named) in message
    assert problem in message


def test_missing_input(tmp_path: Path) -> None:
    source = tmp_path / "missing.json"
    assert_error(source, tmp_path / "out.json", "no such file", source)
    assert not (tmp_path / "out.json").exists()


def test_existing_output_is_refused_and_untouched(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"keep me")
    assert_error(gpu_trace("cpu_infer"), target, "exists already", target)
    assert target.read_bytes() == b"keep me"


def test_the_input_is_never_the_output(write_trace: WriteTrace) -> None:
    source = write_trace(read_json(gpu_trace("cpu_infer")))
    before = source.read_bytes()
    assert_error(source, source, "input itself", source)
    assert source.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "invalid or truncated JSON"),
        (b"  ", "empty file"),
        (b"[[1, 2]]", "not a torch"),
        (b'{"traceEvents": "no"}', "not a torch"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_invalid_input(
    write_trace: WriteTrace, tmp_path: Path, content: bytes, problem: str
) -> None:
    source = write_trace(content)
    target = tmp_path / "out.json"
    assert_error(source, target, problem, source)
    assert not target.exists()


def test_nan_is_json_enough_to_scrub(write_trace: WriteTrace, tmp_path: Path) -> None:
    source = write_trace(b'{"traceEvents": [{"ph": "X", "ts": NaN, "name": "a"}]}')
    scrub_file(source, tmp_path / "out.json")
    assert (tmp_path / "out.json").read_bytes() == source.read_bytes()


def test_broken_gzip_and_non_trace_files(tmp_path: Path, write_trace: WriteTrace) -> None:
    packed = gpu_trace("cpu_infer").read_bytes()
    broken = write_trace(packed[: len(packed) // 2], name="cut.json.gz")
    assert_error(broken, tmp_path / "a.json", "broken gzip", broken)
    timeline = shared_file(f"gpu/{NOT_A_TRACE}")
    assert_error(timeline, tmp_path / "b.json", "not a torch.profiler trace", timeline)


# The command: a summary by class; --check lists what still looks sensitive, exit 1.
def test_the_command_prints_a_summary_by_class(
    tmp_path: Path, write_trace: WriteTrace, planted: dict[str, Any]
) -> None:
    source, out = write_trace(planted), tmp_path / "shared.json.gz"
    done = runner.invoke(app, ["scrub", str(source), "-o", str(out)])
    assert done.exit_code == 0, done.stderr
    assert done.stdout == (
        f"steptrace: wrote {out}; replaced 9: email ×4, secret ×2, token ×1, user ×2\n"
    )
    clean = runner.invoke(app, ["scrub", "--check", str(out)])
    assert (clean.exit_code, clean.stdout) == (0, f"steptrace: {out}: nothing looks sensitive\n")


def test_check_lists_kinds_and_fields_never_values(
    write_trace: WriteTrace, people: dict[str, str]
) -> None:
    doc = {
        "traceEvents": [{"ph": "i", "name": f"x {people['email']}", "ts": 1}],
        "env": {f"HF_TOKEN\x1b[2J{people['user']}": people["token"]},
    }
    done = runner.invoke(app, ["scrub", "--check", str(write_trace(doc))])
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    assert lines[0].endswith(": 2 still look sensitive: email ×1, token ×1")
    assert re.fullmatch(r'  email +×1 +in "name"', lines[1])
    assert "\x1b" not in done.stdout and "\\u001b" in done.stdout  # a field name, escaped
    for secret in (people["email"], people["token"]):
        assert secret not in done.stdout


@pytest.mark.parametrize("arguments", [[], ["--check", "-o", "x.json"]])
def test_the_command_needs_an_output_or_check(arguments: list[str]) -> None:
    done = runner.invoke(app, ["scrub", str(gpu_trace("cpu_infer")), *arguments])
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and "--output FILE, or --check" in done.stderr
