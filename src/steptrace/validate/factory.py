"""What every check factory shares: the user's state made once, strict options, refusals.

A check factory is ``name(step, *, make_state, batches, device="cpu", **options)``: A is
the step as the user runs it, B the change, ``options`` go to ``compare``. The helpers
here make the state once (so that a B built from it starts from the same weights even
when ``make_state`` is not seeded), refuse ``accept_difference`` where a change must not
alter any value, and turn a B that cannot run at all into ``NotTestable``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from steptrace.errors import CaptureError, NotTestable
from steptrace.validate.results import Comparison
from steptrace.validate.sides import checked_state
from steptrace.validate.timing import CheckPlan

MakeState = Callable[[], Mapping[str, Any]]
B_FAILED = "B's step raised at correctness step"  # agreement.guarded's words for B's steps


def origin(make_state: MakeState) -> tuple[Mapping[str, Any], MakeState]:
    """The user's state, made once, and a ``make_state`` that returns it (compare copies it)."""
    made = checked_state(make_state, "A", "make_state")
    return made, lambda: made


def strict(options: dict[str, Any], check: str) -> dict[str, Any]:
    """The options, refused when they would accept a difference the change must not make."""
    plan = options.get("check")
    if options.get("accept_difference") or (isinstance(plan, CheckPlan) and plan.accept_difference):
        raise CaptureError(
            f"{check} compares outputs: the change must not alter any value, so "
            "accept_difference is not an option here"
        )
    return options


def with_check(options: dict[str, Any], default: CheckPlan) -> dict[str, Any]:
    """``default`` as the correctness plan unless the caller gave one (or its fields)."""
    given = {"check", "check_steps", "rtol", "atol", "accept_difference"} & options.keys()
    return options if given else {**options, "check": default}


def said(result: Comparison, *lines: str) -> Comparison:
    """The result with more of what differed by design said."""
    return msgspec.structs.replace(result, by_design=(*result.by_design, *lines))


def refused_b(error: CaptureError, what: str, instead: str) -> NotTestable:
    """B's step could not run at all (not slower: impossible): not testable, and why."""
    return NotTestable(f"{what}: {error}", instead)


def one_line(error: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, at most ``limit`` characters of the message."""
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text[:limit]}"
