"""The exit-code contract on damaged input, odd names and unreadable places (issues #36.6,
#37.4): 0 all well, 1 a report written from damaged input (events skipped, bytes after the
gzip data, a rank that could not be read), 2 refused (one line, the input's problem).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.scenario import NAME_BYTES, Scenario, record_payload, sidecar_path
from tests.conftest import WriteTrace, shared_file
from tests.tracegen import document, kernel, step

runner = CliRunner()


def analyze(*args: str) -> tuple[int, str, str]:
    done = runner.invoke(app, ["analyze", *args])
    return done.exit_code, done.stdout, done.stderr


def good() -> dict[str, object]:
    return document([step(1, 0, 100), kernel("k", 10, 20)])


def test_bytes_after_the_gzip_data_are_damage_but_zero_padding_is_not(
    write_trace: WriteTrace,
) -> None:
    packed = gzip.compress(json.dumps(good()).encode())
    for size in (100, 20 << 20):  # read ahead whole, and streamed (16 MB or more on disk)
        garbage = write_trace(packed + b"\x00garbage" * (size // 8), name=f"g{size}.json.gz")
        code, out, err = analyze(str(garbage), "--format", "json", "--jobs", "1")
        assert code == 1, err
        assert "bytes after the end of the gzip data" in err
        assert json.loads(out)["analysis"]["kernels"][0]["name"] == "k"  # the report, written
        padded = write_trace(packed + bytes(size), name=f"p{size}.json.gz")
        code, _, err = analyze(str(padded), "--format", "json", "--jobs", "1")
        assert code == 0 and err == "", err


def test_events_that_json_refuses_are_skipped_with_exit_1(write_trace: WriteTrace) -> None:
    text = json.dumps(good()).replace(
        '"traceEvents": [', '"traceEvents": [{"ph": "X", "ts": "x"}, '
    )
    code, out, err = analyze(str(write_trace(text)), "--format", "json")
    assert code == 1 and "skipped 1" in err
    assert json.loads(out)["analysis"]["steps"]


def test_a_lone_surrogate_in_the_scenario_is_shown_escaped(write_trace: WriteTrace) -> None:
    path = write_trace(good(), name="t.json")
    payload = record_payload(Scenario(question="why?"), None)
    text = json.dumps(payload).replace("why?", "why\\ud800?")  # the escape, as JSON writes it
    sidecar_path(path).write_text(text)
    for output in ("json", "text", "md", "html"):
        code, out, err = analyze(str(path), "--format", output)
        assert code == 0, err
        out.encode()  # valid UTF-8
        shown = json.loads(out)["scenario"]["question"] if output == "json" else out
        assert re.search(r"why\\+ud800\?", shown), output  # Markdown escapes the backslash


def test_an_empty_or_cut_rank_in_a_job_folder_is_a_failure(tmp_path: Path) -> None:
    for rank in (0, 1):
        source = shared_file(f"cpu/ddp_rank{rank}_trace_shapes.json.gz")
        (tmp_path / f"rank{rank}.json.gz").write_bytes(source.read_bytes())
    (tmp_path / "rank2.json").write_bytes(b"")
    code, _, err = analyze(str(tmp_path), "--format", "json", "--jobs", "1")
    assert code == 1 and "rank2.json: empty file" in err, err
    (tmp_path / "rank2.json").write_text('{"schemaVersion": 1, "deviceProperties": [')
    code, _, err = analyze(str(tmp_path), "--format", "json", "--jobs", "1")
    assert code == 1 and "rank2.json" in err and "truncated" in err, err
    (tmp_path / "rank2.json").write_text('{"notes": "not a trace"}')  # whole JSON: skipped
    code, _, err = analyze(str(tmp_path), "--format", "json", "--jobs", "1")
    assert code == 0 and "rank2.json: skipped, not a trace" in err, err


def test_a_name_that_fits_has_a_sidecar_name_that_fits(write_trace: WriteTrace) -> None:
    for length in (240, 246, NAME_BYTES - len(".json.gz")):
        name = "a" * length + ".json.gz"
        path = write_trace(good(), name=name, gz=True)
        sidecar = sidecar_path(path)
        assert len(sidecar.name.encode()) <= NAME_BYTES
        sidecar.write_text(json.dumps(record_payload(Scenario(question=f"q{length}"), None)))
        code, out, err = analyze(str(path), "--format", "json")
        assert code == 0, err
        assert json.loads(out)["scenario"]["question"] == f"q{length}"
    long_names = {sidecar_path(Path("x" * 240 + s)).name for s in ("1.json", "2.json")}
    assert len(long_names) == 2  # two long names never share a sidecar


def test_a_name_too_long_is_refused_as_input(tmp_path: Path) -> None:
    name = str(tmp_path / ("b" * 300 + ".json"))
    for command in (["analyze", name], ["diff", name, name], ["scrub", "--check", name]):
        done = runner.invoke(app, command)
        assert done.exit_code == 2 and done.stderr.count("\n") == 1, (command, done.stderr)
        assert "File name too long" in done.stderr or "no such file" in done.stderr


def test_a_folder_that_cannot_be_listed_is_refused_as_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for another user's folder (mode 000; the tests may run as root, who reads it)."""
    (tmp_path / "t.json").write_text(json.dumps(good()))

    def refused(self: Path) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", refused)
    code, _, err = analyze(str(tmp_path))
    assert code == 2 and err == f"steptrace: error: {tmp_path}: cannot read (Permission denied)\n"


def test_a_rank_read_with_events_skipped_makes_the_job_exit_1(tmp_path: Path) -> None:
    for rank in (0, 1):
        source = shared_file(f"cpu/ddp_rank{rank}_trace_shapes.json.gz")
        doc = json.loads(gzip.decompress(source.read_bytes()))
        if rank == 1:
            doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "x", "ts": "soon"})
        (tmp_path / f"rank{rank}.json").write_text(json.dumps(doc))
    code, out, err = analyze(str(tmp_path), "--format", "json", "--jobs", "1")
    assert code == 1, err
    assert json.loads(out)["ranks"] and "skipped 1" in out
