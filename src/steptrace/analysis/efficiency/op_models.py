"""Which operators have a cost model, and the cost of one call from its recorded inputs.

Contract: ``cost(name, call, seen) -> Cost | None`` (``op_inputs.Cost``: FLOPs and bytes
of one call, at which precision, on the matrix units or not); None for an operator
without a model, or whose recorded inputs do not fit its model: "no model", never a
guess. ``seen`` is what the trace's convolution backward calls recorded
(``conv_models.ConvShapes``), for the convolutions whose calls do not say it.
``rank(name)``: 2 for matrix work (GEMM, convolution, attention: ``matrix_models``,
``conv_models``), 1 for vector work (elementwise, reductions, normalizations:
``vector_models``; a convolution's bias gradient), 0 without a model. The roofline reads
the rank to choose, where modelled operators nest, the one that describes the work:
matrix work holds the vector operators inside it (the copy of ``addmm``'s bias), and of
two of a kind the innermost is the one that ran (``linear`` -> ``addmm``).
"""

from __future__ import annotations

from steptrace.analysis.efficiency.conv_models import (
    BIAS_GRAD_MODELS,
    CONV_MODELS,
    NOTHING_SEEN,
    ConvShapes,
)
from steptrace.analysis.efficiency.matrix_models import MATRIX_MODELS
from steptrace.analysis.efficiency.op_inputs import Call, Cost
from steptrace.analysis.efficiency.vector_models import VECTOR_MODELS

MODELS = {**VECTOR_MODELS, **MATRIX_MODELS}
SEEING = {**BIAS_GRAD_MODELS, **CONV_MODELS}  # models that read ``seen``


def rank(name: str) -> int:
    """2: matrix work; 1: vector work; 0: no model."""
    if name in MATRIX_MODELS or name in CONV_MODELS:
        return 2
    return 1 if name in VECTOR_MODELS or name in BIAS_GRAD_MODELS else 0


def cost(name: str, call: Call, seen: ConvShapes = NOTHING_SEEN) -> Cost | None:
    """One call's FLOPs and bytes; None: no model for it."""
    seeing = SEEING.get(name)
    if seeing is not None:
        return seeing(name, call, seen)
    model = MODELS.get(name)
    return model(name, call) if model is not None else None
