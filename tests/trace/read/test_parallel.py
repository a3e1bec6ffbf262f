"""One trace decoded by several processes gives the report of the exact path.

The reference is the exact path (``decode.exact_documents``, the whole text in memory);
the parallel one (``parallel.parallel_columns``) cuts the streamed text without decoding
it, has each piece decoded and put into columns by a worker process, and merges the
pieces in order. Pieces are forced small, so that many cuts fall inside strings, escapes,
numbers and nested ``args`` and must be joined again; a piece with events of the wrong
shape is decoded event by event, those left out and counted, as in one process.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.errors import TraceError
from steptrace.trace import load as loading
from steptrace.trace.assemble import assemble
from steptrace.trace.columns import Piece
from steptrace.trace.decode import codec
from steptrace.trace.fields import ALL_GROUPS, select
from steptrace.trace.load import load_trace
from steptrace.trace.read import parallel, source
from steptrace.trace.read import split as splitting
from steptrace.trace.read import stream as streaming
from tests.conftest import NOT_A_TRACE, TRACES, WriteTrace
from tests.tables import assert_same_table
from tests.trace.read.test_stream import _exact_report, _nasty_text, _never_split, _real_traces
from tests.tracegen import cpu, document, step

runner = CliRunner()


def _report(path: Path, jobs: int, code: int = 0) -> str:
    result = runner.invoke(app, ["analyze", str(path), "--format", "json", "--jobs", str(jobs)])
    assert result.exit_code == code, result.output
    return result.stdout


def _small_pieces(monkeypatch: pytest.MonkeyPatch, piece: int) -> None:
    """Pieces of about ``piece`` bytes: the text read and gunzipped in chunks that small
    too (a worker's piece ends at the first cut past its size)."""
    monkeypatch.setattr(splitting, "_PIECE_BYTES", piece)
    monkeypatch.setattr(streaming, "CHUNK_BYTES", piece)
    monkeypatch.setattr(streaming, "_READ_BYTES", piece)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Streams every file; counts the loads that took the parallel path."""
    monkeypatch.setattr(source, "READ_AHEAD_BYTES", 0)
    return _calls_of(monkeypatch, loading, "parallel_columns")


def _calls_of(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    """``owner.name`` wrapped to count its calls (in this process): the list of them."""
    calls: list[int] = []
    original = getattr(owner, name)

    def counting(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(owner, name, counting)
    return calls


@pytest.mark.parametrize("path", _real_traces())
def test_every_real_trace_decoded_by_two_processes_gives_the_exact_report(
    path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[int]
) -> None:
    if path.name == NOT_A_TRACE:
        pytest.skip("not a trace: its error is tested in test_bad_input")
    exact = _exact_report(path, monkeypatch)
    size = len(gzip.decompress(path.read_bytes()))
    _small_pieces(monkeypatch, max(size // 40, 1_000))
    sent = _calls_of(monkeypatch, parallel._InOrder, "submit")
    assert _report(path, jobs=2) == exact
    assert counted == [1]
    assert len(sent) >= (10 if size >= 100_000 else 1)  # many pieces, merged in order


@pytest.mark.parametrize("piece", [1, 50, 500, 1 << 20])
def test_pieces_cut_inside_values_are_joined_again(
    piece: int, write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch, counted: list[int]
) -> None:
    path = write_trace(_nasty_text(), gz=True)
    exact = _exact_report(path, monkeypatch)
    _small_pieces(monkeypatch, piece)
    assert _report(path, jobs=2) == exact
    assert _report(path, jobs=3) == exact
    assert len(counted) == 2


def test_events_of_the_wrong_shape_are_left_out_in_the_pieces_as_on_the_exact_path(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch, counted: list[int]
) -> None:
    """Each is skipped and counted where it lies, the first one described; the rest of the
    file, cut in pieces, gives the report of the exact path (which held the whole text)."""
    events: list[Any] = [step(1, 0, 1_000), step(2, 1_000, 1_000)]
    events += [cpu(f"op{i}", 10 + i * 20, 5) for i in range(90)]
    events[50]["args"] = "not an object"
    events[61]["name"] = None
    del events[72]["ph"]
    events[90] = {}  # in the last piece, with the array's end and the keys after it
    path = write_trace({"traceEvents": events, "displayTimeUnit": "ms"})
    with monkeypatch.context() as patch:  # the reference: the exact path, the whole text
        for name in ("stream_documents", "split_documents", "parallel_columns"):
            patch.setattr(loading, name, _never_split)
        exact = json.loads(_report(path, jobs=1, code=1))
    warnings = exact["analysis"]["trace"]["warnings"]
    assert any("skipped 4 malformed events" in w and "traceEvents[50]" in w for w in warnings)
    _small_pieces(monkeypatch, 300)
    exact_passes = _calls_of(monkeypatch, loading, "exact_documents")
    assert json.loads(_report(path, jobs=2, code=1)) == exact  # a report from damaged input
    assert json.loads(_report(path, jobs=1, code=1)) == exact
    assert counted == [1] and exact_passes == []  # in pieces, never the whole text


CORE = select()


def test_workers_decode_the_pieces_and_the_builder_merges_their_ids() -> None:
    """Two pieces with names in another order: the merged ids are the builder's own."""
    first = json.dumps([cpu("b", 1, 1), cpu("a", 2, 1)]).encode()[1:-1]
    second = json.dumps([cpu("a", 3, 1), cpu("c", 4, 1), cpu("b", 5, 1)]).encode()[1:-1]
    with parallel.worker_pool(2) as pool:
        assert pool is not None
        pieces = list(pool.pool.map(parallel.piece_columns, [first, second], [CORE, CORE]))
    assert all(isinstance(p, Piece) for p in pieces)
    builder = parallel.ColumnBuilder(codec(CORE))
    for piece in pieces:
        assert isinstance(piece, Piece)
        builder.merge(piece)
    table = assemble(builder.columns()).events
    assert [table.names[i] for i in table.name_id.tolist()] == ["b", "a", "a", "c", "b"]
    assert np.array_equal(table.start_us, [0, 1, 2, 3, 4])


def test_columns_written_back_in_the_ring_are_the_columns_piped() -> None:
    """A piece's columns packed in a room come out as they went in; a room too small for
    them leaves them to the pipe."""
    text = json.dumps([cpu("b", 1, 1), cpu("a", 2, 5), cpu("b", 9, 1)]).encode()[1:-1]
    piece = parallel.piece_columns(text, CORE)
    assert isinstance(piece, Piece)
    room = memoryview(bytearray(4096))
    packed = parallel._pack(piece, room)
    assert packed is not None and packed.piece.batches == []
    unpacked = parallel._unpack(packed, room)
    assert unpacked._replace(batches=[]) == piece._replace(batches=[])
    for got, want in zip(unpacked.batches, piece.batches, strict=True):
        assert got.keys() == want.keys()
        for name, column in want.items():
            assert got[name].dtype == column.dtype, name
            assert got[name].tobytes() == column.tobytes(), name  # NaN bits too
    assert parallel._pack(piece, room[:40]) is None


@pytest.mark.parametrize(("piece", "packed"), [(50, False), (8_000, True)])
def test_columns_come_back_through_the_ring_or_the_pipe_alike(
    piece: int,
    packed: bool,
    write_trace: WriteTrace,
    monkeypatch: pytest.MonkeyPatch,
    counted: list[int],
) -> None:
    """Large pieces' columns come back through the ring, tiny ones' (too large for their
    room) pickled: the same report either way."""
    events = [step(k, 1000.0 * k, 900.0) for k in range(4)]
    # args as Kineto writes them: columns take a fraction of the text (a sixth on real traces)
    kineto = {"External id": 1, "Record function id": 0, "Ev Idx": 1, "Fwd thread id": 0}
    events += [cpu(f"aten::op{k % 7}", 1.5 * k + 0.25, 1.0, **kineto) for k in range(2_500)]
    path = write_trace(document(events), gz=True)
    exact = _exact_report(path, monkeypatch)
    _small_pieces(monkeypatch, piece)
    unpacked = _calls_of(monkeypatch, parallel, "_unpack")
    assert _report(path, jobs=2) == exact
    assert counted == [1] and bool(unpacked) == packed


def test_a_piece_that_is_not_a_list_of_events_says_why() -> None:
    assert parallel.piece_columns(b'{"ph": "X", "name": "a}', CORE) == "cut"
    assert parallel.piece_columns(b'{"ph": "X", "name": 7}', CORE) == "shape"


def _pool_inside_a_worker(_: int) -> bool:
    with parallel.worker_pool(2) as pool:
        return pool is None


def test_a_pool_worker_decodes_in_its_own_process_only() -> None:
    """A daemonic process cannot start processes: it decodes alone."""
    with multiprocessing.get_context("spawn").Pool(1) as outer:
        assert outer.map(_pool_inside_a_worker, [0]) == [True]
    with parallel.worker_pool(1) as pool:
        assert pool is None


def test_load_trace_with_workers_equals_one_process(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_trace(_nasty_text())
    _small_pieces(monkeypatch, 200)
    one, two = load_trace(path, progress=False), load_trace(path, progress=False, workers=2)
    assert one.info == two.info
    assert len(one.events) > 100
    assert_same_table(one.events, two.events)


def _dies(offset: int, length: int, room: slice, selection: object) -> object:
    os._exit(3)


def test_a_decoding_process_killed_is_one_line_not_a_hang(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_trace(_nasty_text())
    _small_pieces(monkeypatch, 200)
    monkeypatch.setattr(parallel, "ring_columns", _dies)  # the forked workers inherit it
    with pytest.raises(TraceError, match=r"ended abruptly .*--jobs 1") as caught:
        load_trace(path, progress=False, workers=2)
    assert "\n" not in str(caught.value)


def test_the_array_format_decoded_by_two_processes(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch, counted: list[int]
) -> None:
    """A trace that is a bare list of events (Chrome's array format)."""
    events = json.loads(_nasty_text())["traceEvents"]
    path = write_trace(events)
    exact = _exact_report(path, monkeypatch)
    _small_pieces(monkeypatch, 300)
    assert _report(path, jobs=2) == exact
    assert counted == [1]


def test_workers_that_cannot_all_start_leave_none_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The third fork fails (a process limit): one process decodes, no worker is left."""
    forks = [0]
    real_fork = os.fork

    def limited() -> int:
        forks[0] += 1
        if forks[0] == 3:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_fork()

    monkeypatch.setattr(os, "fork", limited)
    with parallel.worker_pool(4) as pool:
        assert pool is None
    assert forks[0] == 3
    assert multiprocessing.active_children() == []


def test_forked_workers_start_no_resource_tracker() -> None:
    """A fork pool's semaphores are unlinked at once: multiprocessing's resource tracker (an
    interpreter of its own) is not started for it. In a fresh interpreter: this one may
    have started it for another pool."""
    code = (
        "from multiprocessing import resource_tracker\n"
        "from steptrace.trace.read.parallel import worker_pool\n"
        "with worker_pool(2) as pool:\n"
        "    assert pool is not None and pool.ring is not None  # forked\n"
        "    assert pool.pool.submit(int).result() == 0\n"
        "print(resource_tracker._resource_tracker._pid)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


def test_one_file_gets_at_most_max_workers() -> None:
    with parallel.worker_pool(parallel.MAX_WORKERS + 5) as pool:
        assert pool is not None
        assert pool.workers == parallel.MAX_WORKERS


def test_instants_and_flows_merge_from_the_workers_as_read_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The profile_memory trace in many pieces decoded by two processes: its instants and
    flows are the tables one process builds."""
    path = TRACES / "gpu" / "v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz"
    if not path.exists():
        pytest.skip("real traces not found")
    one = load_trace(path, progress=False)
    _small_pieces(monkeypatch, 256 << 10)
    two = load_trace(path, progress=False, workers=2)
    assert one.instants is not None and two.instants is not None
    assert one.flows is not None and two.flows is not None
    for a, b in ((one.instants, two.instants), (one.flows, two.flows)):
        for field in a.__struct_fields__:
            x, y = getattr(a, field), getattr(b, field)
            if field == "columns":
                assert x.keys() == y.keys()
                assert all(np.array_equal(x[k], y[k]) for k in x)
            elif field in ("name", "category"):  # text ids: compared by their texts
                assert [a.texts[i] for i in x] == [b.texts[i] for i in y]
            elif field != "texts":
                assert np.array_equal(x, y, equal_nan=True), field
    assert_same_table(one.events, two.events)


def test_a_text_read_already_is_decoded_by_the_pool_given(write_trace: WriteTrace) -> None:
    """A pool started before the text was read (the command line's first file) decodes it
    from memory as a stream's chunks, the table that of one process; then it is closed."""
    path = write_trace(_nasty_text(), gz=True)
    one = load_trace(path, progress=False)
    with parallel.worker_pool(2) as pool:
        assert pool is not None
        two = loading.read_trace(path, select(ALL_GROUPS), text=source.read_text(path), pool=pool)
        with pytest.raises(RuntimeError):  # closed once the pieces were decoded
            pool.pool.submit(int)
    assert one.info == two.info
    assert_same_table(one.events, two.events)


def test_the_first_large_file_has_its_workers_before_its_reading_starts(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers are forked before the reading thread starts (a fork beside a thread
    copies the locks it holds) and before the analysis is imported; they decode the text
    read ahead, and the report is the exact path's."""
    path = write_trace(_nasty_text(), gz=True)
    exact = _exact_report(path, monkeypatch)
    monkeypatch.setattr(source, "PARALLEL_TEXT_BYTES", 1)
    _small_pieces(monkeypatch, 500)
    order: list[str] = []
    pool_of = parallel.worker_pool

    def pool_first(workers: int) -> Any:
        order.append("workers")
        return pool_of(workers)

    reading = source.BackgroundRead.start

    def read_after(self: source.BackgroundRead) -> None:
        order.append("reading")
        reading(self)

    monkeypatch.setattr(parallel, "worker_pool", pool_first)
    monkeypatch.setattr(source.BackgroundRead, "start", read_after)
    in_workers = _calls_of(monkeypatch, loading, "_in_workers")
    assert _report(path, jobs=2) == exact
    assert order == ["workers", "reading"] and in_workers == [1]
