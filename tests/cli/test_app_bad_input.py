"""Bad input: a one-line error naming the file, exit code 2, no traceback; or a warning,
the report written, and exit code 1 when events were skipped (damaged input)."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from tests.conftest import WriteTrace, gpu_trace, shared_file
from tests.tracegen import document, kernel, step

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["analyze", *args])
    return result.exit_code, result.stdout, result.stderr


def assert_one_line_error(args: list[str], path: Path, problem: str) -> None:
    code, out, err = run(*args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("steptrace: error: ")
    assert str(path) in lines[0]
    assert problem in lines[0]
    assert "Traceback" not in err


def test_empty_file(write_trace: WriteTrace) -> None:
    path = write_trace(b"")
    assert_one_line_error([str(path)], path, "empty file")


def test_whitespace_only_file(write_trace: WriteTrace) -> None:
    path = write_trace(b"  \n\t ")
    assert_one_line_error([str(path)], path, "empty file")


def test_truncated_json(write_trace: WriteTrace) -> None:
    text = gzip.decompress(gpu_trace("a100_cuda_event_sync__").read_bytes())
    path = write_trace(text[: len(text) // 2])
    assert_one_line_error([str(path)], path, "invalid or truncated JSON")


def test_broken_gzip(write_trace: WriteTrace) -> None:
    packed = gpu_trace("a100_cuda_event_sync__").read_bytes()
    path = write_trace(packed[: len(packed) // 2], name="cut.json.gz")
    assert_one_line_error([str(path)], path, "broken gzip")


def test_corrupted_gzip(write_trace: WriteTrace) -> None:
    packed = bytearray(gpu_trace("a100_cuda_event_sync__").read_bytes())
    packed[100:140] = bytes(40)
    path = write_trace(bytes(packed), name="corrupt.json.gz")
    assert_one_line_error([str(path)], path, "broken gzip")


def test_memory_timeline_export_is_not_a_trace() -> None:
    path = shared_file("gpu/memory_timeline_export_raw__memory_analysis.raw.gz")
    assert_one_line_error([str(path)], path, "not a torch.profiler trace")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"hello": "world"}, "no traceEvents"),
        ({"traceEvents": []}, "holds no events"),
        ({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]}, "no complete"),
        ({"traceEvents": "nope"}, "not a torch.profiler trace"),
        ([1, 2, 3], "not a torch.profiler trace"),
        ("42", "not a torch.profiler trace"),
    ],
)
def test_json_that_is_not_a_trace(write_trace: WriteTrace, content: object, problem: str) -> None:
    path = write_trace(json.dumps(content))
    assert_one_line_error([str(path)], path, problem)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    assert_one_line_error([str(path)], path, "no such file")


def test_folder_without_traces(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a trace")
    assert_one_line_error([str(tmp_path)], tmp_path, "holds no trace")


def test_no_usable_event(write_trace: WriteTrace) -> None:
    path = write_trace(document([{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1}]))
    assert_one_line_error([str(path)], path, "no event has a usable ts and dur")


def test_events_without_times_or_with_bad_durations_are_skipped_with_a_warning(
    write_trace: WriteTrace,
) -> None:
    good = [step(1, 0, 100), kernel("k", 10, 20)]
    bad = [
        {"ph": "X", "cat": "kernel", "name": "no_ts", "pid": 0, "tid": 7, "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "no_dur", "pid": 0, "tid": 7, "ts": 5},
        {"ph": "X", "cat": "kernel", "name": "text", "pid": 0, "tid": 7, "ts": "5", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "null", "pid": 0, "tid": 7, "ts": None, "dur": 1},
        kernel("negative", 30, -4),
    ]
    nan = '{"ph": "X", "cat": "kernel", "name": "nan", "pid": 0, "tid": 7, "ts": 1, "dur": NaN}'
    text = json.dumps(document(good + bad))
    text = text.replace('"traceEvents": [', f'"traceEvents": [{nan}, ', 1)
    path = write_trace(text)
    code, out, err = run(str(path), "--format", "json")
    assert code == 1  # a report from damaged input
    assert "skipped 5 complete events with a ts or dur that is missing or not a number" in err
    assert "skipped 1 complete events with a negative dur" in err
    assert str(path) in err
    result = json.loads(out)
    assert result["analysis"]["steps"][0]["gpu"]["busy_ms"] == pytest.approx(0.02)
    assert [k["name"] for k in result["analysis"]["kernels"]] == ["k"]
    assert any("skipped 5" in w for w in result["analysis"]["trace"]["warnings"])


@pytest.mark.parametrize(
    ("ts", "dur"),
    [
        ("18446744073709551616", "1"),  # 2**64 µs
        ("1e400", "1"),  # beyond any float
        ("4611686018427387", "1"),  # ends at 2**62 ns
        ("4611686018427386.903", "1.001"),  # starts inside the range, ends at 2**62 ns
        ("1", "1e30"),
        ("-18446744073709551616", "1"),
    ],
)
def test_timestamps_outside_the_representable_range_are_skipped_and_counted(
    write_trace: WriteTrace, ts: str, dur: str
) -> None:
    """Never a silently wrong wall: the stray event is dropped and said to be."""
    stray = f'{{"ph": "X", "cat": "kernel", "name": "far", "pid": 0, "tid": 7, "ts": {ts}'
    stray += f', "dur": {dur}}}'
    text = json.dumps(document([step(1, 1000, 3462), kernel("k", 1010, 20)]))
    path = write_trace(text.replace('"traceEvents": [', f'"traceEvents": [{stray}, ', 1))
    code, out, err = run(str(path), "--format", "json")
    assert code == 1, err  # a report from damaged input
    assert "skipped 1 complete events with a ts or end beyond" in err
    result = json.loads(out)["analysis"]
    assert result["steps"][0]["wall_ms"] == pytest.approx(3.462, abs=1e-12)
    assert [k["name"] for k in result["kernels"]] == ["k"]


def test_nanosecond_decimals_survive_epoch_scale_timestamps(write_trace: WriteTrace) -> None:
    """At 1.7e15 µs a float64 steps by 0.25 µs: the decimals are read exactly instead."""
    base = 1712195495502094
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": f"{base}.547",
            "dur": "35115.869",
        },
        *(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::as_strided",
                "pid": 1,
                "tid": 1,
                "ts": f"{base + 10 + k}.{k % 1000:03d}",
                "dur": "0.033",
            }
            for k in range(400)
        ),
    ]
    text = json.dumps(document(events))
    text = re.sub(r'"(ts|dur)": "([0-9.]+)"', r'"\1": \2', text)  # numbers, as Kineto writes
    path = write_trace(text)
    code, out, err = run(str(path), "--format", "json")
    assert code == 0, err
    result = json.loads(out)["analysis"]
    assert result["steps"][0]["wall_ms"] == pytest.approx(35.115869, abs=1e-12)  # its own dur
    op = result["operators"][0]
    assert op["name"] == "aten::as_strided" and op["calls"] == 400
    assert round(op["self_ms"] * 1e6) == 400 * 33  # ns, exactly
    assert result["steps"][0]["cpu"]["operator_us"]["min"] == pytest.approx(0.033, abs=1e-12)
    assert result["trace"]["origin_ns"] == (base * 1000 + 547)


def test_unknown_categories_are_ignored_with_a_warning(write_trace: WriteTrace) -> None:
    odd = {"ph": "X", "cat": "quantum_op", "name": "q", "pid": 1, "tid": 1, "ts": 0, "dur": 1e6}
    path = write_trace(document([step(1, 0, 100), kernel("k", 10, 20), odd]))
    code, out, err = run(str(path), "--format", "json")
    assert code == 0
    assert "ignored 1 events of unknown categories: 'quantum_op'" in err
    assert json.loads(out)["analysis"]["steps"][0]["gpu"]["busy_ms"] == pytest.approx(0.02)


def test_one_bad_file_among_good_ones_fails_the_command(write_trace: WriteTrace) -> None:
    good = write_trace(document([step(1, 0, 100)]))
    bad = write_trace(b"{")
    assert_one_line_error([str(good), str(bad), "--as-job"], bad, "invalid or truncated JSON")


@pytest.mark.slow
def test_the_installed_command_prints_no_traceback(write_trace: WriteTrace) -> None:
    path = write_trace(b"{not json")
    command = Path(sys.executable).parent / "steptrace"
    done = subprocess.run(
        [str(command), "analyze", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"steptrace: error: {path}: ")


@pytest.mark.slow
def test_a_full_disk_is_a_one_line_error() -> None:
    command = Path(sys.executable).parent / "steptrace"
    path = gpu_trace("cpu_train_trace.json")
    done = subprocess.run(
        ["bash", "-c", f"'{command}' analyze '{path}' --format json > /dev/full"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == "steptrace: error: No space left on device\n"


@pytest.mark.slow
def test_a_lone_surrogate_escape_is_invalid_json(write_trace: WriteTrace) -> None:
    text = '{"traceEvents": [{"ph": "X", "name": "\\ud800", "ts": 1, "dur": 2}]}'
    path = write_trace(text)
    assert_one_line_error([str(path)], path, "invalid or truncated JSON")


@pytest.mark.slow
def test_the_installed_command_writes_its_whole_report_to_a_pipe() -> None:
    command = Path(sys.executable).parent / "steptrace"
    path = gpu_trace("a100_2rank_rank0")
    done = subprocess.run(
        [str(command), "analyze", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["analysis"]["trace"]["gpu_observed"] is True
    assert done.stderr == ""


def test_a_malformed_event_is_named_by_its_index(write_trace: WriteTrace) -> None:
    events = [kernel("k", i, 1) for i in range(10_000)]
    events.append({"ph": "X", "cat": "kernel", "name": "bad", "ts": 1, "dur": 1, "args": []})
    path = write_trace(document(events))
    code, _, err = run(str(path), "--format", "json")
    assert code == 1 and "skipped 1 malformed events" in err and "$.traceEvents[10000].args" in err


def test_multi_member_gzip_is_read_whole(write_trace: WriteTrace) -> None:
    text = json.dumps(document([step(1, 0, 100), kernel("k", 10, 20)])).encode()
    half = len(text) // 2
    path = write_trace(gzip.compress(text[:half]) + gzip.compress(text[half:]), name="two.json.gz")
    code, out, _ = run(str(path), "--format", "json")
    assert code == 0
    assert json.loads(out)["analysis"]["steps"][0]["gpu"]["busy_ms"] == pytest.approx(0.02)


def test_invalid_utf8_in_an_event(write_trace: WriteTrace) -> None:
    text = json.dumps(document([step(1, 0, 100), kernel("k", 10, 20)])).encode()
    path = write_trace(text.replace(b'"name": "k"', b'"name": "\xff\xfe"'))
    assert_one_line_error([str(path)], path, "invalid JSON")


def test_json_nested_too_deeply(write_trace: WriteTrace) -> None:
    path = write_trace('{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    code, _, err = run(str(path))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_integers_beyond_64_bits_are_read_as_missing(write_trace: WriteTrace) -> None:
    huge = kernel("k", 10, 20, correlation=2**70)
    huge["args"]["stream"] = str(2**70)
    code, out, _ = run(str(write_trace(document([step(1, 0, 100), huge]))), "--format", "json")
    assert code == 0
    assert json.loads(out)["analysis"]["kernels"][0]["calls"] == 1


def test_incomplete_device_properties_and_odd_ranks(write_trace: WriteTrace) -> None:
    doc = document([step(1, 0, 100), kernel("volta_sgemm_128x64_nn", 10, 80)])
    doc["deviceProperties"] = [{"id": 0, "name": "GPU", "computeMajor": 7}]
    doc["distributedInfo"] = {"rank": "first", "world_size": 2}
    code, out, _ = run(str(write_trace(doc)), "--format", "json")
    assert code == 0
    trace = json.loads(out)["analysis"]["trace"]
    assert trace["devices"][0]["compute_capability"] is None
    assert trace["rank"] is None and trace["world_size"] == 2


def test_zero_length_steps_do_not_make_infinite_ratios(write_trace: WriteTrace) -> None:
    path = write_trace(document([step(1, 0, 0), step(2, 10, 0), step(3, 20, 0)]))
    for fmt in ("text", "json", "md"):
        code, out, _ = run(str(path), "--format", fmt)
        assert code == 0 and "inf" not in out.lower().replace("information", "")


def test_a_broken_capture_block_is_ignored_with_a_warning(write_trace: WriteTrace) -> None:
    doc = document([step(1, 0, 100)])
    doc["steptrace"] = {"scenario": {"question": "q"}, "capture": {"overhead_ratio": "fast"}}
    path = write_trace(doc)
    for fmt in ("text", "json", "md"):
        code, _, err = run(str(path), "--format", fmt)
        assert code == 0 and "unreadable" in err


def test_names_with_newlines_keep_markdown_tables_whole(write_trace: WriteTrace) -> None:
    from tests.tracegen import cpu

    path = write_trace(document([step(1, 0, 100), cpu("aten::odd\nname|x", 10, 50)]))
    code, out, _ = run(str(path), "--format", "md")
    assert code == 0
    row = next(line for line in out.splitlines() if "aten::odd" in line)
    assert row.startswith("|") and row.endswith("|") and "name\\|x" in row


def test_a_folder_with_scenario_sidecars_analyzes_only_traces(write_trace: WriteTrace) -> None:
    path = write_trace(document([step(1, 0, 100)]), name="t.json")
    path.with_name("t.scenario.json").write_text('{"schema": "steptrace.scenario/1"}')
    code, out, _ = run(str(path.parent), "--format", "json")
    assert code == 0 and json.loads(out)["analysis"]["trace"]["path"] == str(path)


def test_a_non_finite_threshold_is_refused(write_trace: WriteTrace) -> None:
    path = write_trace(document([step(1, 0, 100)]))
    code, _, err = run(str(path), "--threshold", "input_share=nan")
    assert code == 2 and "finite" in err


STEPTRACE = Path(sys.executable).parent / "steptrace"


def run_process(*args: str, limit_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    """The real command in its own process: a hang fails the test instead of the suite."""

    def limit() -> None:
        import resource

        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run(
        [str(STEPTRACE), *args], capture_output=True, text=True, timeout=120, preexec_fn=limit
    )


def assert_refused(done: subprocess.CompletedProcess[str], problem: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("steptrace: error: "), done.stderr
    assert problem in lines[0]


def test_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    assert_refused(run_process("analyze", str(fifo)), "is a named pipe, not a regular file")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document([step(1, 0, 100)])))
    assert_refused(run_process("diff", str(fifo), str(other)), "is a named pipe")
    copy = tmp_path / "copy.json"
    assert_refused(run_process("scrub", str(fifo), "-o", str(copy)), "is a named pipe")
    assert not copy.exists()


def test_an_endless_device_is_refused_not_read(tmp_path: Path) -> None:
    link = tmp_path / "zeros.json"
    link.symlink_to("/dev/zero")
    assert_refused(run_process("analyze", str(link)), "is a character device")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "zeros.json").symlink_to("/dev/zero")
    # a folder's listing takes regular files only: this one holds no trace
    assert_refused(run_process("analyze", str(folder)), "folder holds no trace")


def test_a_truncated_gzip_claiming_gigabytes_is_broken_not_a_memory_error(tmp_path: Path) -> None:
    """The trailer of a 10-byte file says 4 GiB: under a 3 GiB limit, still one line."""
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}')[:6] + (2**32 - 1).to_bytes(4, "little"))
    assert_refused(run_process("analyze", str(path), limit_bytes=3 << 30), "broken gzip")


def test_a_malformed_event_is_skipped_counted_and_named(write_trace: WriteTrace) -> None:
    good = [step(1, 0, 100), kernel("k", 10, 20)]
    bad = [
        {"ph": "X", "cat": "kernel", "name": None, "pid": 0, "tid": 7, "ts": 1, "dur": 1},
        {"cat": "kernel", "name": "no phase", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "odd args", "ts": 1, "dur": 1, "args": [1]},
    ]
    path = write_trace(document([good[0], *bad, good[1]]))
    code, out, err = run(str(path), "--format", "json")
    assert code == 1, err  # a report from damaged input
    assert "skipped 3 malformed events (" in err and "$.traceEvents[1].name" in err
    result = json.loads(out)["analysis"]
    assert [k["name"] for k in result["kernels"]] == ["k"]
    assert result["steps"][0]["gpu"]["busy_ms"] == pytest.approx(0.02)


def test_a_file_of_only_malformed_events_is_not_a_trace(write_trace: WriteTrace) -> None:
    path = write_trace(json.dumps({"traceEvents": [1, "two", {"ph": "X", "name": None}]}))
    assert_one_line_error([str(path)], path, "not a torch.profiler trace")


def test_control_characters_in_a_file_name_never_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "title\x1b]0;owned\x07\x1b[2J.json"
    path.write_bytes(b"{")
    done = run_process("analyze", str(path))
    assert done.returncode == 2
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "title\\x1b]0;owned\\x07\\x1b[2J.json" in done.stderr


def test_a_file_name_in_the_progress_display_is_neither_markup_nor_control() -> None:
    import io
    from unittest import mock

    from rich.console import Console

    from steptrace.trace.read.progress import loading_progress

    shown = io.StringIO()
    fake = mock.patch("rich.console.Console", lambda **_: Console(file=shown, force_terminal=True))
    with fake, loading_progress("a[/]x[bold]\x1b[2J.json", 100, True) as stage:
        stage.read(10)  # rich would raise MarkupError on "[/]" read as markup
    assert "a[/]x[bold]\\x1b[2J.json" in shown.getvalue()


def test_a_step_number_too_long_for_an_integer_is_skipped_with_a_warning(
    write_trace: WriteTrace,
) -> None:
    """Python refuses int() past 4,300 digits: such a marker is no step, and is said so."""
    huge = {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#" + "9" * 5000,
        "pid": 1,
        "tid": 1,
        "ts": 200,
        "dur": 100,
    }
    path = write_trace(document([step(1, 0, 100), kernel("k", 10, 20), huge]))
    code, out, err = run(str(path), "--format", "json")
    assert code == 0, err
    assert "skipped 1 ProfilerStep markers whose number has more than 18 digits" in err
    assert [s["name"] for s in json.loads(out)["analysis"]["steps"]] == ["ProfilerStep#1"]


def test_a_scenario_sidecar_nested_too_deeply_is_ignored_with_a_warning(
    write_trace: WriteTrace,
) -> None:
    path = write_trace(document([step(1, 0, 100), kernel("k", 10, 20)]), name="run.json")
    sidecar = path.with_name("run.scenario.json")
    sidecar.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    code, out, err = run(str(path), "--format", "json")
    assert code == 0, err
    assert "scenario sidecar run.scenario.json is nested too deeply; ignored" in err
    assert json.loads(out)["scenario"] is None


def test_a_diff_of_damaged_input_is_written_says_how_and_exits_one(
    write_trace: WriteTrace,
) -> None:
    """As analyze does: the diff of what could be read, each damaged side's warning on
    stderr, exit 1 (a clean pair exits 0)."""
    good = write_trace(json.dumps(document([step(1, 0, 100), kernel("k", 10, 20)])))
    damaged_events = [step(1, 0, 100), kernel("k", 10, 20), kernel("negative", 30, -4)]
    damaged = good.with_name("damaged.json")
    damaged.write_text(json.dumps(document(damaged_events)))
    clean = runner.invoke(app, ["diff", str(good), str(good), "--format", "json"])
    assert clean.exit_code == 0, clean.stderr
    result = runner.invoke(app, ["diff", str(good), str(damaged), "--format", "json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["schema"] == "steptrace.diff/1"
    (line,) = [x for x in result.stderr.splitlines() if "negative dur" in x]
    assert line.startswith("steptrace: ") and str(damaged) in line and str(good) not in line
