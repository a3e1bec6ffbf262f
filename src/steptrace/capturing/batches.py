"""A training batch as ``(inputs, target)``, and the model called on its inputs.

``split_batch(batch) -> (inputs, target)`` is the contract. Without one:

- a tuple or list of two is ``(inputs, target)``;
- a mapping (the Hugging Face form ``{"input_ids": ..., "attention_mask": ...,
  "labels": ...}``): the target is the first of ``labels``, ``label``, ``target``,
  ``targets``, ``y`` it holds, the inputs are the other entries;
- anything else is refused in one line that asks for ``split_batch``.

Inputs that are a mapping are passed as keywords (``model(**inputs)``), others as one
argument (``model(inputs)``); the loss is ``loss_fn(model's output, target)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from steptrace.errors import CaptureError

SplitBatch = Callable[[Any], tuple[Any, Any]]
TARGET_KEYS = ("labels", "label", "target", "targets", "y")


def split_batch(batch: Any) -> tuple[Any, Any]:
    """The default ``split_batch``: pairs and mappings (see the module's docstring)."""
    if isinstance(batch, tuple | list) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, Mapping):
        key = next((k for k in TARGET_KEYS if k in batch), None)
        if key is None:
            raise CaptureError(
                f"a batch with keys {sorted(map(str, batch))} has no target (one of "
                f"{', '.join(TARGET_KEYS)}): pass split_batch=lambda b: (inputs, target)"
            )
        return {k: v for k, v in batch.items() if k != key}, batch[key]
    size = f" of {len(batch)}" if isinstance(batch, tuple | list) else ""
    raise CaptureError(
        f"a batch that is a {type(batch).__name__}{size} cannot be split into inputs and "
        "target: pass split_batch=lambda b: (inputs, target)"
    )


def call_model(model: torch.nn.Module, inputs: Any) -> Any:
    """``model(**inputs)`` for a mapping, ``model(inputs)`` otherwise."""
    if isinstance(inputs, Mapping):
        return model(**inputs)
    return model(inputs)


def first_tensor(inputs: Any) -> torch.Tensor | None:
    """The first tensor of the inputs (for the observed batch size and shape)."""
    if isinstance(inputs, torch.Tensor):
        return inputs
    values = inputs.values() if isinstance(inputs, Mapping) else inputs
    if isinstance(values, tuple | list) or isinstance(inputs, Mapping):
        return next((v for v in values if isinstance(v, torch.Tensor)), None)
    return None
