"""A check's A/B, read as an answer to its finding's hypothesis.

B is always the change the hypothesis points to (a prepared batch, inference mode, the
step without the profiler...), so:

- ``faster`` (the whole CI beyond the noise band): **supported**, with the ratio and CI;
- ``slower`` or ``no-detectable-difference``: **not supported** at the noise measured;
- ``outputs-differ``: the change is not equivalent, by how much; no speed figure;
- ``too-few-samples``: **not testable** within the budget (the budget it would need).

A check that accepted a difference by design (other data, another precision) says so.
"""

from __future__ import annotations

from steptrace.validate.results import (
    Comparison,
    Faster,
    NoDetectableDifference,
    Outcome,
    OutputsDiffer,
    Slower,
)

NOT_SUPPORTED = "Not supported at this noise"


def outcome_of(comparison: Comparison) -> tuple[Outcome, str]:
    """The outcome and its sentence."""
    said = _following(comparison.sentence)
    if isinstance(comparison, OutputsDiffer):
        return "outputs-differ", f"Outputs differ: the change is not equivalent; {said}"
    if comparison.accepted_difference:
        said += " (outputs differ by design, accepted)"
    if isinstance(comparison, Faster):
        return "supported", f"Supported: {said}"
    if isinstance(comparison, Slower):
        return "not-supported", f"Not supported: the change makes the step slower; {said}"
    if isinstance(comparison, NoDetectableDifference):
        return "not-supported", f"{NOT_SUPPORTED}: {said}"
    return "not-testable", f"Not testable within this budget: {said}"


def _following(sentence: str) -> str:
    """The sentence after a colon: "No difference" -> "no difference"; "B is" stays."""
    first = sentence.split(" ", 1)[0].split("'", 1)[0]
    return sentence if first in ("A", "B") else sentence[:1].lower() + sentence[1:]
