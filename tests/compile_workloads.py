"""CPU training workloads compiled by torch.compile, for the compile rules and their checks:
one with a graph break, one whose batch size changes in the window, one steady.

They compile with the ``"aot_eager"`` backend: Dynamo's regions, guards, breaks and
recompiles, and AOTAutograd's compiled functions around each graph, are recorded as with
Inductor, in a fraction of a second instead of seconds per graph on two CPU cores
(Inductor's own traces are in ``tests/fixtures/compile/``).

- ``graph_break``: an MLP whose forward reads a value with ``.item()`` between two layers.
- ``batch_size_changes``: an MLP whose loader gives 32-row batches, then 24-row ones from
  the fourth (the first step the default window records): the frame compiles again.
- ``steady``: the same MLP, every batch 32 rows, no break.
"""

from __future__ import annotations

import torch

import steptrace
from steptrace.capturing import Workload

FEATURES, ROWS, BATCHES = 64, 32, 16
CHANGED_FROM = 3  # the first batch the default Window records (cold, wait, warm-up before)


class Breaking(torch.nn.Module):
    """Two layers with a host read of the activations' mean between them: a graph break."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(FEATURES, 128)
        self.b = torch.nn.Linear(128, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        scale = y.mean().item()  # the break
        return self.b(y / (1.0 + scale))


def _mlp() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4)
    )


def _batches(rows: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [
        (
            torch.randn(n, FEATURES, generator=generator),
            torch.randint(0, 4, (n,), generator=generator),
        )
        for n in rows
    ]


def _compiled(question: str, model: torch.nn.Module, rows: list[int]) -> Workload:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    return Workload(
        scenario=steptrace.Scenario(question=question, batch_size=ROWS, compile="default"),
        model=torch.compile(model, backend="aot_eager"),
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        loss_fn=torch.nn.functional.cross_entropy,
        loader=_batches(rows),
    )


def graph_break() -> Workload:
    torch.manual_seed(0)
    return _compiled("Does the compiled model break?", Breaking(), [ROWS] * BATCHES)


def batch_size_changes() -> Workload:
    torch.manual_seed(0)
    rows = [ROWS] * CHANGED_FROM + [24] * (BATCHES - CHANGED_FROM)
    return _compiled("Does the compiled model recompile?", _mlp(), rows)


def steady() -> Workload:
    torch.manual_seed(0)
    return _compiled("How long does a compiled step take?", _mlp(), [ROWS] * BATCHES)
