"""What each side of an A/B starts from, and what differs between them by design.

By default both sides get deep copies of one ``make_state()`` and the same batches. B may
have its own (``CandidateInputs``: another optimizer flag, a compiled model, pinned
batches, a loader with more workers): then the correctness checks still run across them
(same initial weights, compared outputs), and the result says what differed by design.
Mistakes in what the user passed are one-line ``CaptureError``s that name the side and
the cause.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec
import torch

from steptrace.errors import CaptureError
from steptrace.validate.inputs import Batch, CandidateInputs, MakeLoop, MakeState, State

LOADER_FIELDS = (
    "batch_size",
    "num_workers",
    "pin_memory",
    "persistent_workers",
    "prefetch_factor",
    "drop_last",
)
OPTIMIZER_FLAGS = ("foreach", "fused", "capturable", "differentiable", "maximize", "amsgrad")


class Start(msgspec.Struct, frozen=True):
    """Both sides' checked starting states, batches and whole loops (A's, then B's), and
    what differs between them because the user asked for it, in words."""

    origins: tuple[State, State]
    feeds: tuple[Sequence[Batch], Sequence[Batch]]
    loops: tuple[MakeLoop | None, MakeLoop | None]
    by_design: tuple[str, ...]


def start(
    make_state: MakeState,
    batches: Sequence[Batch],
    loop_batches: MakeLoop | None,
    own: CandidateInputs,
) -> Start:
    """Each side's start: A's inputs, and B's own where ``own`` gives them."""
    origin_a = checked_state(make_state, "A", "make_state")
    origin_b = None if own.make_state is None else checked_state(own.make_state, "B", "make_state")
    feed_b = batches if own.batches is None else own.batches
    feeds = (checked_batches(batches, "A", "batches"), checked_batches(feed_b, "B", "batches"))
    loops = (loop_batches, own.loop_batches or loop_batches)
    designed = by_design(origin_a, origin_b, own.batches is not None, loops)
    return Start((origin_a, origin_b or origin_a), feeds, loops, designed)


def checked_state(make: Callable[[], object], side: str, name: str) -> State:
    """The user's state, refused in one line when it cannot be compared."""
    try:
        state = make()
    except Exception as error:
        raise CaptureError(f"{side}: {name}() raised {_cause(error)}") from None
    if not isinstance(state, Mapping):
        raise CaptureError(
            f"{side}: {name}() returned {_kind(state)}: it must return a mapping with a "
            "'model', such as {'model': model, 'optimizer': optimizer}"
        )
    if "model" not in state:
        raise CaptureError(f"{side}: {name}() must return a mapping with a 'model'")
    if not isinstance(state["model"], torch.nn.Module):
        raise CaptureError(
            f"{side}: {name}()['model'] is {_kind(state['model'])}, not a torch.nn.Module"
        )
    return dict(state)


def checked_batches(batches: object, side: str, name: str) -> Sequence[Batch]:
    """A non-empty sequence of batches, or a one-line error naming the argument."""
    if batches is None or isinstance(batches, str | bytes) or not isinstance(batches, Iterable):
        raise CaptureError(f"{side}: {name} is {_kind(batches)}: give a non-empty list of batches")
    listed = batches if isinstance(batches, Sequence) else list(batches)
    if not listed:
        raise CaptureError(f"{side}: {name} is empty: compare needs at least one batch")
    return listed


def copies(origin: State, side: str) -> State:
    """A deep copy of a starting state (the optimizer keeps pointing at its copy)."""
    try:
        return copy.deepcopy(dict(origin))
    except (TypeError, RuntimeError, copy.Error, AttributeError) as exc:
        raise CaptureError(f"{side}: the state cannot be copied ({_cause(exc)})") from None


def by_design(
    origin_a: State,
    origin_b: State | None,
    batches_b_given: bool,
    loops: tuple[MakeLoop | None, MakeLoop | None],
) -> tuple[str, ...]:
    """What differs between the sides because the user asked for it, in words."""
    said: list[str] = []
    if origin_b is not None:
        said.append("state: B's own make_state")
        said += _models(origin_a["model"], origin_b["model"])
        said += _optimizers(origin_a.get("optimizer"), origin_b.get("optimizer"))
    if batches_b_given:
        said.append("batches: B reads its own batches")
    loop_a, loop_b = loops
    if loop_b is not None and loop_b is not loop_a:
        said.append("whole loop: B's own loop_batches")
        if loop_a is not None:
            said += _loaders(loop_a(), loop_b())
    return tuple(said)


def _models(a: torch.nn.Module, b: torch.nn.Module) -> list[str]:
    kinds = type(a).__name__, type(b).__name__
    return [f"model: A {kinds[0]}, B {kinds[1]}"] if kinds[0] != kinds[1] else []


def _optimizers(a: object, b: object) -> list[str]:
    if a is None or b is None:
        return [] if a is b else ["optimizer: only one side has one"]
    if type(a) is not type(b):
        return [f"optimizer: A {type(a).__name__}, B {type(b).__name__}"]
    found = []
    defaults_a, defaults_b = getattr(a, "defaults", {}), getattr(b, "defaults", {})
    for flag in sorted(defaults_a.keys() | defaults_b.keys()):
        left, right = defaults_a.get(flag), defaults_b.get(flag)
        if left != right and (flag in OPTIMIZER_FLAGS or (_plain(left) and _plain(right))):
            found.append(f"optimizer {flag}: A {left!r}, B {right!r}")
    return found


def _loaders(a: Iterable[Batch], b: Iterable[Batch]) -> list[str]:
    found = []
    for field in LOADER_FIELDS:
        left, right = getattr(a, field, None), getattr(b, field, None)
        if left != right:
            found.append(f"loader {field}: A {left!r}, B {right!r}")
    return found


def _plain(value: object) -> bool:
    return isinstance(value, bool | int | float | str | None | tuple)


def _kind(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _cause(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text[:300]}"
