"""The operator checks as scripts: operators alone, on their recorded inputs.

``operator_calls(analysis, "aten::mm")`` lists what ``dominant-op``'s check times: every
recorded set of inputs (shapes and dtypes) of the operator and, for a matrix product, of
the operators that do the same work (``SAME_WORK``: ``mm``, ``addmm``, ``linear``,
``matmul``, ``bmm``...), each with its calls per step (the roofline's rows: the innermost
call that does the work, so ``linear`` and the ``addmm`` inside it count once).
``calls_script(calls, source=...)`` writes them into a self-contained script (the shapes
inline) that times each alone with ``torch.utils.benchmark`` and weighs it by its calls.

``operator_script(analysis, "aten::addmm")`` writes a script for one operator on its most
frequent recorded inputs (``low-efficiency``'s throughput), times it with
``torch.utils.benchmark`` (blocked_autorange, median and IQR), prints the measurement for
a reader, then one line for a program: ``MARKER`` followed by JSON (``median_s``,
``iqr_s``, ``runs``), which ``operator_timing`` reads. Both need ``record_shapes=True``
at capture; without it the error says so. Plain text: no torch here.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from steptrace.errors import TraceError
from steptrace.validate.results import OperatorCall

if TYPE_CHECKING:
    from steptrace.analysis.measure import TraceAnalysis

MARKER = "steptrace-operator-timing "
_OPERATOR = re.compile(r"[A-Za-z_]\w*::[A-Za-z_]\w*")
# Kineto's "Input type" names -> torch dtypes
DTYPES = {
    "float": "torch.float32",
    "double": "torch.float64",
    "c10::Half": "torch.float16",
    "c10::BFloat16": "torch.bfloat16",
    "long int": "torch.int64",
    "int": "torch.int32",
    "bool": "torch.bool",
}


# Operators that do the same work as a matrix product: timed together, by their inputs.
SAME_WORK = frozenset(
    {
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::addbmm",
        "aten::matmul",
        "aten::linear",
        "aten::mv",
        "aten::addmv",
    }
)
BIND = [
    "def bind(packet, inputs):",
    '    """The first overload that accepts the recorded inputs (keyword-only by the schema)."""',
    "    for overload_name in packet.overloads():",
    "        op = getattr(packet, overload_name)",
    "        args, kwargs = [], {}",
    "        for argument, value in zip(op._schema.arguments, inputs):",
    "            if argument.kwarg_only:",
    "                kwargs[argument.name] = value",
    "            else:",
    "                args.append(value)",
    "        try:",
    "            op(*args, **kwargs)  # also the warm-up",
    "            return op, args, kwargs",
    "        except (RuntimeError, TypeError):",
    "            continue",
    "    raise SystemExit(f'no overload of {packet} accepts these inputs: edit them')",
]


def operator_calls(analysis: TraceAnalysis, operator: str) -> tuple[OperatorCall, ...]:
    """What the operator's check times: each recorded set of inputs of ``operator`` (and
    of ``SAME_WORK`` for a matrix product) with its calls per step, most calls first."""
    if not _OPERATOR.fullmatch(operator):
        raise TraceError(f"{operator!r}: not an operator name like aten::mm (namespace::name)")
    found = next((o for o in analysis.operators if o.name == operator), None)
    if found is None:
        raise TraceError(f"{analysis.trace.path}: no operator {operator!r} in the trace")
    steps = max(len(analysis.steps), 1)
    rows = [r for r in analysis.roofline if r.input_shapes and r.calls]
    family = {operator} | (SAME_WORK if operator in SAME_WORK else frozenset())
    chosen = [r for r in rows if r.operator in family]
    calls = [
        OperatorCall(
            operator=r.operator,
            input_shapes=r.input_shapes or "",
            input_types=r.input_types,
            calls_per_step=r.calls / steps,
        )
        for r in chosen
    ]
    if not calls and found.input_shapes:  # no row for it: its most frequent inputs
        calls = [
            OperatorCall(
                operator=operator,
                input_shapes=found.input_shapes,
                input_types=found.input_types,
                calls_per_step=found.calls_per_step or found.calls / steps,
            )
        ]
    if not calls:
        raise TraceError(
            f"{analysis.trace.path}: {operator} has no recorded input shapes; capture again "
            "with record_shapes=True (it adds overhead)"
        )
    return tuple(sorted(calls, key=lambda c: -c.calls_per_step))


def calls_script(calls: tuple[OperatorCall, ...], *, source: str, device: str = "cpu") -> str:
    """A self-contained script timing each call alone, weighed by its calls per step."""
    names = sorted({c.operator for c in calls})
    entries = []
    for call in calls:
        shapes = json.loads(call.input_shapes)
        types = json.loads(call.input_types) if call.input_types else [""] * len(shapes)
        namespace, _, name = call.operator.partition("::")
        arguments = ", ".join(
            _argument(shape, kind).split("  #")[0]  # one line: no comment inside
            for shape, kind in zip(shapes, types, strict=False)
        )
        entries.append(
            f"    ({call.operator!r}, torch.ops.{namespace}.{name}, {call.calls_per_step:.6g}, "
            f"lambda: [{arguments}]),  # {call.input_shapes}"
        )
    lines = [
        f'"""{", ".join(names)} alone on the inputs recorded in {source!r},',
        "each weighed by its calls per step.",
        "",
        "Generated by steptrace: random values, recorded shapes and dtypes (contiguous).",
        "Check the arguments against each operator's signature before trusting the timing;",
        "edit a line (layout, algorithm, precision) to time an alternative.",
        '"""',
        "import torch",
        "from torch.utils import benchmark",
        "",
        f"device = torch.device({device!r})",
        "CALLS = [  # (operator, packet, calls per step, inputs)",
        *entries,
        "]",
        "",
        "",
        *BIND,
        "",
        "",
        "total_ms = 0.0",
        "for name, packet, per_step, make_inputs in CALLS:",
        "    op, args, kwargs = bind(packet, make_inputs())",
        "    timer = benchmark.Timer(",
        "        stmt='op(*args, **kwargs)', globals={'op': op, 'args': args, 'kwargs': kwargs}",
        "    )",
        "    median_ms = timer.blocked_autorange(min_run_time=0.2).median * 1000",
        "    total_ms += median_ms * per_step",
        "    print(f'{name}: {median_ms:.4f} ms per call x {per_step:g} per step')",
        "print(f'all of them: {total_ms:.3f} ms per step (compare with the step time)')",
        "",
    ]
    return "\n".join(lines)


def operator_script(
    analysis: TraceAnalysis, operator: str, device: str = "cpu", source: str | None = None
) -> str:
    """A script timing ``operator`` alone on the inputs recorded in the trace; ``source``:
    the trace it names (default: the analysis's)."""
    if not _OPERATOR.fullmatch(operator):
        raise TraceError(f"{operator!r}: not an operator name like aten::mm (namespace::name)")
    found = next((o for o in analysis.operators if o.name == operator), None)
    if found is None:
        raise TraceError(f"{analysis.trace.path}: no operator {operator!r} in the trace")
    if not found.input_shapes:
        raise TraceError(
            f"{analysis.trace.path}: {operator} has no recorded input shapes; capture again "
            "with record_shapes=True (it adds overhead)"
        )
    shapes = json.loads(found.input_shapes)
    types = json.loads(found.input_types) if found.input_types else [""] * len(shapes)
    namespace, _, name = operator.partition("::")
    arguments = [_argument(shape, kind) for shape, kind in zip(shapes, types, strict=False)]
    lines = [
        f'"""{operator} alone on the inputs recorded in {source or analysis.trace.path!r}.',
        "",
        "Generated by steptrace: random values, recorded shapes and dtypes. Check the",
        "arguments against the operator's signature before trusting the timing.",
        '"""',
        "import json",
        "",
        "import torch",
        "from torch.utils import benchmark",
        "",
        f"device = torch.device({device!r})",
        "inputs = [",
        *[f"    {a}," for a in arguments],
        "]",
        f"packet = torch.ops.{namespace}.{name}",
        "",
        "",
        "def bind(overload):",
        '    """The trace lists every input in order; the schema says which are keyword-only."""',
        "    args, kwargs = [], {}",
        "    for argument, value in zip(overload._schema.arguments, inputs):",
        "        if argument.kwarg_only:",
        "            kwargs[argument.name] = value",
        "        else:",
        "            args.append(value)",
        "    return args, kwargs",
        "",
        "",
        "for overload_name in packet.overloads():  # the first overload that accepts them",
        "    op = getattr(packet, overload_name)",
        "    args, kwargs = bind(op)",
        "    try:",
        "        op(*args, **kwargs)  # also the warm-up",
        "        break",
        "    except (RuntimeError, TypeError):",
        "        continue",
        "else:",
        f"    raise SystemExit({f'no overload of {operator} accepts these inputs: edit them'!r})",
        "timer = benchmark.Timer(",
        "    stmt='op(*args, **kwargs)', globals={'op': op, 'args': args, 'kwargs': kwargs}",
        ")",
        "measurement = timer.blocked_autorange(min_run_time=1.0)",
        "print(measurement)",
        "print(f'median {measurement.median * 1e6:.2f} us, IQR {measurement.iqr * 1e6:.2f} us')",
        "runs = len(measurement.times) * measurement.number_per_run",
        "timing = {'median_s': measurement.median, 'iqr_s': measurement.iqr, 'runs': runs}",
        f"print({MARKER!r} + json.dumps(timing))  # for steptrace's operator_timing",
        "",
    ]
    return "\n".join(lines)


def _argument(shape: object, kind: str) -> str:
    if kind == "Scalar" or shape == []:
        return "1"
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
        return "None  # not a tensor in the trace: fill in by hand"
    dtype = DTYPES.get(kind, "torch.float32")
    if dtype in ("torch.int64", "torch.int32"):
        return f"torch.randint(0, 8, {tuple(shape)}, dtype={dtype}, device=device)"
    if dtype == "torch.bool":
        return f"torch.rand({tuple(shape)}, device=device) > 0.5"
    return f"torch.randn({tuple(shape)}, dtype={dtype}, device=device)"
