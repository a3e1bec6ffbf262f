"""Outputs are whole or absent (issue #36.6): a full disk, a failed write or a closed
stdout leaves no partial file and is one line with exit code 1 (a refused output of scrub:
2), never exit 0.

A full disk is injected (``ENOSPC`` from the write's ``fsync``, where a real full disk
fails at the latest), so the tests run anywhere; the trace a capture cannot write is
what kineto leaves on a full disk: an empty file, and its own ``.tmp``.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.process import outputs
from tests.conftest import WriteTrace, gpu_trace
from tests.tracegen import document, step

STEPTRACE = str(Path(sys.executable).parent / "steptrace")


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outputs.os, "fsync", no_space)


def test_a_new_file_is_whole_or_absent(tmp_path: Path, full_disk: None) -> None:
    target = tmp_path / "out.json"
    with pytest.raises(OSError, match="No space left") as raised:
        outputs.write_new(target, b"x" * 100_000)
    assert raised.value.filename == str(target)  # the file asked for, not a temporary one
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_never_replaced(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("the user's")
    with pytest.raises(FileExistsError):
        outputs.write_new(target, b"ours")
    assert target.read_text() == "the user's" and len(list(tmp_path.iterdir())) == 1
    assert outputs.replace(tmp_path / "sidecar.json", b"1").read_bytes() == b"1"
    assert outputs.replace(tmp_path / "sidecar.json", b"2").read_bytes() == b"2"


def test_without_hard_links_the_file_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: Path, target: Any) -> None:
        raise OSError(errno.EPERM, "no hard links here")

    monkeypatch.setattr(Path, "hardlink_to", refused)
    assert outputs.write_new(tmp_path / "a.json", b"ok").read_bytes() == b"ok"
    with pytest.raises(FileExistsError):
        outputs.write_new(tmp_path / "a.json", b"again")
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_temporary_name_fits_whatever_the_name(tmp_path: Path) -> None:
    name = "é" * 120 + ".json"  # 245 bytes: the temporary's own name must fit in 255
    assert outputs.write_new(tmp_path / name, b"{}").read_bytes() == b"{}"


def test_compare_on_a_full_disk_leaves_no_json(tmp_path: Path, full_disk: None) -> None:
    pytest.importorskip("torch")
    steps = "tests.compare_steps"
    target = tmp_path / "ab.json"
    args = [
        "compare",
        f"{steps}:step",
        f"{steps}:step",
        "--state",
        f"{steps}:make_state",
        "--batches",
        f"{steps}:make_batches",
        "--budget",
        "1",
        "--json",
        str(target),
    ]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 1, done.stderr
    assert done.stderr == f"steptrace: error: {target}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_scrub_on_a_full_disk_leaves_no_copy(
    write_trace: WriteTrace, tmp_path: Path, full_disk: None
) -> None:
    source = write_trace(document([step(1, 0, 100)]), name="t.json")
    target = tmp_path / "copy.json.gz"
    done = CliRunner().invoke(app, ["scrub", str(source), "-o", str(target)])
    assert done.exit_code == 2 and "No space left on device" in done.stderr
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_trace_the_profiler_could_not_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What kineto leaves on a full disk: the trace empty, its ``.tmp`` half written."""
    torch = pytest.importorskip("torch")
    import steptrace
    from steptrace.errors import CaptureError
    from tests import workloads

    def full(self: Any, path: str) -> None:
        Path(f"{path}.tmp").write_bytes(b'{"traceEvents": [')

    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", full)
    work = workloads.tiny_training()
    with pytest.raises(CaptureError, match="could not write the trace"):
        steptrace.profile_training(
            work.model,  # type: ignore[arg-type]
            work.optimizer,  # type: ignore[arg-type]
            work.loss_fn,  # type: ignore[arg-type]
            work.loader,  # type: ignore[arg-type]
            scenario=work.scenario,
            out=tmp_path / "t.json",
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_closed_stdout_is_one_line_and_exit_1(tmp_path: Path) -> None:
    trace = gpu_trace("cpu_train_trace.json")
    for output in ("text", "json"):  # a report with nowhere to go is not a success
        done = subprocess.run(
            ["bash", "-c", f"'{STEPTRACE}' analyze '{trace}' --format {output} >&-"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1
        assert done.stderr == (
            "steptrace: error: stdout is closed: the report could not be written\n"
        )
    missing = tmp_path / "absent.json"
    done = subprocess.run(
        ["bash", "-c", f"'{STEPTRACE}' analyze '{missing}' >&-"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "no such file" in done.stderr  # the input's error first
    assert json.dumps(done.stderr).count("\\n") == 1
