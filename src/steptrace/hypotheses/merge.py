"""One finding per rule: a report never lists one rule twice.

Contract: ``one_per_rule(findings) -> list[Finding]``, each rule once, in the order its
first finding came. A rule that fired several times (one finding per device, per
pattern, ...) keeps its most severe finding (the first of them on a tie): its text,
evidence and severity, never a sum of the others' (their times may overlap), with an
``instances`` figure (unit ``names``) that lists the others' observations after any it
held, and a caveat that they may add to it. Rules that can see their instances together
merge them at the source, with a severity that counts shared time once (``comm-overlap``,
``repeated-copy``); this is the net for the others.
"""

from __future__ import annotations

import msgspec

from steptrace.hypotheses.finding import Figure, Finding
from steptrace.units import pct

INSTANCES = "instances"


def one_per_rule(findings: list[Finding]) -> list[Finding]:
    """The findings with each rule's merged into its most severe one (see the module)."""
    by_rule: dict[str, list[Finding]] = {}
    for found in findings:
        by_rule.setdefault(found.rule, []).append(found)
    return [_merged(group) if len(group) > 1 else group[0] for group in by_rule.values()]


def _merged(group: list[Finding]) -> Finding:
    k = max(range(len(group)), key=lambda i: group[i].severity)  # the first of the largest
    kept, others = group[k], group[:k] + group[k + 1 :]
    figures = kept.evidence.figures
    held = next((f.value for f in figures if f.name == INSTANCES), None)
    earlier = held if isinstance(held, tuple) else () if held is None else (str(held),)
    listed = (*earlier, *(f.observation for f in others))
    instances = Figure(INSTANCES, listed, "names")
    if any(f.name == INSTANCES for f in figures):
        figures = tuple(instances if f.name == INSTANCES else f for f in figures)
    else:
        figures = (*figures, instances)
    shares = ", ".join(f"{pct(f.severity)} of the {f.basis}" for f in others)
    caveat = (
        f"The rule fired {len(group)} times; the {len(others)} others ({shares}; their "
        "observations are listed as instances) may add to this one, whose share is the "
        "largest of them, not their sum (what they explain may overlap)."
    )
    return msgspec.structs.replace(
        kept,
        evidence=msgspec.structs.replace(kept.evidence, figures=figures),
        caveats=(*kept.caveats, caveat),
    )
