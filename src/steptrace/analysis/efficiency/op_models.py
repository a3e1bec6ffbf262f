"""Which operators have a cost model, and the cost of one call from its recorded inputs.

Contract: ``cost(name, call) -> Cost | None`` (``op_inputs.Cost``: FLOPs and bytes of one
call, at which precision, on the matrix units or not); None for an operator without a
model, or whose recorded inputs do not fit its model: "no model", never a guess.
``rank(name)``: 2 for matrix work (GEMM, convolution, attention: ``matrix_models``), 1 for
vector work (elementwise, reductions, normalizations: ``vector_models``), 0 without a
model. The roofline reads the rank to choose, where modelled operators nest, the one that
describes the work: matrix work holds the vector operators inside it (the copy of
``addmm``'s bias), and of two of a kind the innermost is the one that ran (``linear`` ->
``addmm``).
"""

from __future__ import annotations

from steptrace.analysis.efficiency.matrix_models import MATRIX_MODELS
from steptrace.analysis.efficiency.op_inputs import Call, Cost
from steptrace.analysis.efficiency.vector_models import VECTOR_MODELS

MODELS = {**VECTOR_MODELS, **MATRIX_MODELS}


def rank(name: str) -> int:
    """2: matrix work; 1: vector work; 0: no model."""
    return 2 if name in MATRIX_MODELS else 1 if name in VECTOR_MODELS else 0


def cost(name: str, call: Call) -> Cost | None:
    """One call's FLOPs and bytes; None: no model for it."""
    model = MODELS.get(name)
    return model(name, call) if model is not None else None
