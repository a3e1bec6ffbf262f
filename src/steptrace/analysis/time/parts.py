"""Which part of the step a label stands for: the scenario's own names, then usual ones.

Contract: ``part_of(label) -> StepPart | None``, pure. A label (a ``record_function``
name) is read as one of the scenario's step parts (``data_read``, ``transfer``,
``forward``, ``backward``, ``optimizer_step``) when it contains the part's own name, as the
scenario writes it and every report prints it (``data_read``, ``Data read`` and
``data-read`` alike), or one of the usual names listed in ``USUAL_NAMES``: the labels
torch, Lightning (``[pl][profile]...``) and training loops commonly write. A name counts
only as a whole word: letters may not touch it (``read_batch`` and ``[pl][profile]
data_read`` count, ``thread_batch`` does not). When a label matches several parts, the
first in the step's order wins. Every report lists which label was read as which part.
"""

from __future__ import annotations

import functools
import re

from steptrace.scenario import TRAINING_STEP, StepPart

# The usual names of each part besides its own, as regular expressions (case ignored).
USUAL_NAMES: dict[StepPart, tuple[str, ...]] = {
    "data_read": (
        r"dataloader",  # torch's enumerate(DataLoader)#..., Lightning's train_dataloader_next
        r"(?:read|load|next|get|fetch)[ _-]?batch(?:es)?",  # read_batch, load_batch, ...
        r"data[ _-]?load(?:ing|er)?",  # data_load, data_loading
        r"(?:val|test|predict)_next",  # Lightning's evaluation and prediction loops
        r"fetch",
    ),
    "transfer": (
        r"transfer",  # Lightning's transfer_batch_to_device too
        r"to[ _-]?device",  # to_device, Lightning's [Strategy]...batch_to_device
        r"h2d",
        r"copy[ _-]?batch",
    ),
    "forward": (
        r"model[ _-]?forward",
        r"fwd",
        r"\[strategy\][\w.]*?(?:training|validation|test|predict)_step",  # Lightning
    ),
    "backward": (r"model[ _-]?backward", r"bwd"),
    "optimizer_step": (r"optimizer[ ._-]?step",),  # torch's Optimizer.step#Adam.step, Lightning's
}


def _own_name(part: StepPart) -> str:
    return part.replace("_", "[ _-]?")


_PATTERNS: tuple[tuple[StepPart, re.Pattern[str]], ...] = tuple(
    (
        part,
        re.compile(
            r"(?<![a-z])(?:" + "|".join((_own_name(part), *USUAL_NAMES[part])) + r")(?![a-z])",
            re.IGNORECASE,
        ),
    )
    for part in TRAINING_STEP
)


@functools.lru_cache(maxsize=4096)
def part_of(label: str) -> StepPart | None:
    """The step part ``label`` stands for, or None when it names none of them."""
    for part, pattern in _PATTERNS:
        if pattern.search(label):
            return part
    return None
