"""The user's state, saved before profiled steps and put back after, bit for bit."""

from __future__ import annotations

import copy
import random
from typing import Any

import torch


class SavedState:
    """Model and optimizer state dicts and every RNG state, deep-copied."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None) -> None:
        self._model = model
        self._optimizer = optimizer
        # kept on the host: a copy on the GPU would double the parameters' device memory
        self._model_state = _to_host(model.state_dict())
        self._optimizer_state = _to_host(optimizer.state_dict()) if optimizer else None
        self._was_training = model.training
        self._rng = _rng_states()

    def restore(self) -> None:
        """Copy the saved values back into the same parameter and buffer objects."""
        with torch.no_grad():
            self._model.load_state_dict(self._model_state)
        if self._optimizer is not None and self._optimizer_state is not None:
            self._optimizer.load_state_dict(copy.deepcopy(self._optimizer_state))
        self._model.train(self._was_training)
        _set_rng_states(self._rng)


def _to_host(state: Any) -> Any:
    """A deep copy with every tensor cloned to the CPU (load_state_dict moves it back)."""
    if isinstance(state, torch.Tensor):
        return state.detach().to("cpu", copy=True)
    if isinstance(state, dict):
        return {k: _to_host(v) for k, v in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(_to_host(v) for v in state)
    return copy.deepcopy(state)


def _rng_states() -> dict[str, Any]:
    states: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy as np

        states["numpy"] = np.random.get_state()
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    return states


def _set_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    random.setstate(states["python"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states["cuda"])
    if "numpy" in states:
        import numpy as np

        np.random.set_state(states["numpy"])
