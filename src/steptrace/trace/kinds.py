"""What each Chrome-trace category means to the analyses.

Kineto has written two vocabularies: the current one (``cpu_op``, ``kernel``, ...) and the
2021 one (``Operator``, ``Kernel``, ...). Both map onto one small set of kinds. The legacy
``Operator`` category holds both ATen operators and ``record_function`` labels
(``ProfilerStep#5``, ``enumerate(DataLoader)#...``, ``read_batch``): see
``legacy_operator_kind``.
"""

from __future__ import annotations

import re
from enum import IntEnum

_AUTOGRAD_NODE = re.compile(r"Backward\d*$")


class Kind(IntEnum):
    """The role of a complete (``ph == "X"``) event."""

    OTHER = 0
    CPU_OP = 1
    USER_ANNOTATION = 2
    PYTHON_FUNCTION = 3
    RUNTIME = 4
    DRIVER = 5
    KERNEL = 6
    MEMCPY = 7
    MEMSET = 8
    GPU_USER_ANNOTATION = 9
    CUDA_SYNC = 10
    PROFILER_SPAN = 11
    LEGACY_OPERATOR = 12  # resolved to CPU_OP or USER_ANNOTATION by name when loading


CATEGORY_KINDS: dict[str, Kind] = {
    "cpu_op": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
    "cuda_sync": Kind.CUDA_SYNC,
    "trace": Kind.PROFILER_SPAN,
    # the 2021 vocabulary
    "operator": Kind.LEGACY_OPERATOR,
    "runtime": Kind.RUNTIME,
    "memcpy": Kind.MEMCPY,
    "memset": Kind.MEMSET,
    "python": Kind.PYTHON_FUNCTION,
}

# Complete events Kineto writes that no analysis uses; they are not reported as unknown.
IGNORED_CATEGORIES = frozenset({"overhead", "cuda_profiler_range", "cpu_instant_event"})

GPU_WORK = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
LAUNCHES = (Kind.RUNTIME, Kind.DRIVER)
# A graph's replay: one runtime or driver call launches every node of the graph
GRAPH_LAUNCH = re.compile(r"^(?:cuda|cu|hip)GraphLaunch(?:_\w+)?$")
# What the host is recorded doing: operators, Python functions, runtime and driver calls
# (labels only name time: a label with none of these inside records no work).
HOST_WORK = (Kind.CPU_OP, Kind.PYTHON_FUNCTION, *LAUNCHES)


def kind_of(category: str) -> Kind | None:
    """The kind of a category, or ``None`` when the category is unknown."""
    lowered = category.lower()
    if lowered in CATEGORY_KINDS:
        return CATEGORY_KINDS[lowered]
    if lowered in IGNORED_CATEGORIES:
        return Kind.OTHER
    return None


def legacy_operator_kind(name: str, has_inputs: bool) -> Kind:
    """Resolve a legacy ``Operator`` event.

    A ``record_function`` label has no ``::`` in its name, records no inputs, and is not
    an autograd node (``AddmmBackward``, ``ReluBackward1``).
    """
    if "::" in name or has_inputs or _AUTOGRAD_NODE.search(name):
        return Kind.CPU_OP
    return Kind.USER_ANNOTATION
