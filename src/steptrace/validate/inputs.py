"""What the user hands ``compare`` and the checks, named once: the state, a batch, a step.

A step is ``step(state, batch) -> outputs``. ``state`` is the user's objects by name
(``{"model": model, "optimizer": optimizer}``): ``make_state()`` builds it and each side's
steps get a deep copy of it (a dict). A batch and a step's outputs are the user's own
values, passed on untouched and compared value by value: they stay ``Any``.
``CandidateInputs`` gives B its own state, batches or whole loop where they differ from A's.

Nothing here imports torch (``steptrace.validate.results`` reads the timing's types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import msgspec

State: TypeAlias = dict[str, Any]  # the user's objects by name: "model" (required), ...
Batch: TypeAlias = Any  # whatever the user's loader yields
Output: TypeAlias = Any  # whatever the user's step returns: tensors, numbers, nested
Step: TypeAlias = Callable[[State, Batch], Output]
MakeState: TypeAlias = Callable[[], State]
MakeLoop: TypeAlias = Callable[[], Iterable[Batch]]  # a fresh loader: the whole loop timed


class CandidateInputs(msgspec.Struct, frozen=True, kw_only=True):
    """B's own state, batches or whole loop, each where it differs from A's (None: A's).

    Another optimizer flag or a compiled model (``make_state``), pinned copies
    (``batches``), a loader with more workers (``loop_batches``): correctness is still
    checked across the sides, and the result's ``by_design`` says what differed.
    """

    make_state: MakeState | None = None
    batches: Sequence[Batch] | None = None
    loop_batches: MakeLoop | None = None
