"""``copy_patterns``: copies grouped by direction, size, operator and label, step after step."""

from __future__ import annotations

from steptrace.analysis.time.copies import UNKNOWN_OPERATOR, CopyPattern, copy_patterns
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.steps import StepWindow
from steptrace.trace.table import EventTable
from tests.tables import HTOD, Row, label, memcpy, memset, ms, op, runtime, table, windows

STEPS = windows((0, 100), (100, 200), (200, 300))
DTOH = "Memcpy DtoH (Device -> Pinned)"
DTOD = "Memcpy DtoD (Device -> Device)"


def patterns(t: EventTable, steps: tuple[StepWindow, ...] = STEPS) -> tuple[CopyPattern, ...]:
    return copy_patterns(t, gpu_links(t, cpu_tree(t)), steps)


def copy_in(start: int, correlation: int, nbytes: float = 4096) -> list[Row]:
    """A labelled ``aten::copy_`` whose runtime call launches an 8 µs host-to-device copy."""
    return [
        label("to_device", start + 10, 30),
        op("aten::copy_", start + 12, 20),
        runtime("cudaMemcpyAsync", start + 15, 5, correlation=correlation),
        memcpy(HTOD, start + 30, 8, bytes=nbytes, correlation=correlation),
    ]


def test_the_same_copy_in_every_step_is_one_pattern() -> None:
    t = table(*copy_in(0, 1), *copy_in(100, 2), *copy_in(200, 3))
    assert patterns(t) == (
        CopyPattern(
            direction="HtoD",
            bytes=4096,
            operator="aten::copy_",
            label="to_device",
            host_memory="Pageable",
            steps=3,
            per_step=(1, 1, 1),
            total_ms=ms(24),
        ),
    )


def test_patterns_split_by_key_count_per_step_and_sort_by_total() -> None:
    t = table(
        *copy_in(0, 1, nbytes=100),
        *copy_in(30, 2, nbytes=100),  # the same pattern again in step 1
        *copy_in(60, 3, nbytes=200),  # another size: another pattern
        memcpy(DTOH, 150, 7),  # no launch call: placed by its GPU start
        label("prefetch", 185, 10),
        runtime("cudaMemcpyAsync", 190, 2, correlation=4),  # no operator around it
        memcpy(DTOD, 210, 3, bytes=64, correlation=4),  # launched in step 2, runs in step 3
        memcpy(DTOH, 400, 50),  # outside every step
        memset(20, 50),  # not a copy
    )
    found = [
        (p.direction, p.bytes, p.operator, p.label, p.host_memory, p.steps, p.per_step, p.total_ms)
        for p in patterns(t)
    ]
    assert found == [
        ("HtoD", 100, "aten::copy_", "to_device", "Pageable", 1, (2, 0, 0), ms(16)),
        ("HtoD", 200, "aten::copy_", "to_device", "Pageable", 1, (1, 0, 0), ms(8)),
        ("DtoH", None, UNKNOWN_OPERATOR, None, "Pinned", 1, (0, 1, 0), ms(7)),
        ("DtoD", 64, UNKNOWN_OPERATOR, "prefetch", None, 1, (0, 1, 0), ms(3)),
    ]


def test_the_innermost_label_on_the_launching_thread() -> None:
    t = table(
        label("outer", 0, 90),
        label("inner", 10, 30),
        label("elsewhere", 0, 90, thread=1),
        runtime("cudaMemcpyAsync", 20, 5, correlation=1),
        runtime("cudaMemcpyAsync", 50, 5, correlation=2),
        memcpy(HTOD, 30, 5, correlation=1),
        memcpy(HTOD, 60, 6, correlation=2),
    )
    assert [p.label for p in patterns(t)] == ["outer", "inner"]  # by total time


def test_no_copies_no_patterns() -> None:
    assert patterns(table(op("aten::mm", 0, 10), memset(0, 5))) == ()
