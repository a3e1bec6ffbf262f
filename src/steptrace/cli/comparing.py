"""``steptrace compare``'s work: the user's functions loaded, outputs checked, the A/B run.

Everything the user named is checked before any step runs: each function imports, the
batches are a non-empty list, and every output file can be created (it is created and
removed again, so that an unwritable ``--json`` is refused before minutes of timing, and
an existing file is never touched).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from steptrace.cli.targets import load_callable
from steptrace.errors import CaptureError

if TYPE_CHECKING:
    from steptrace.validate import CheckPlan, Comparison, TimingPlan


def check_outputs(paths: Sequence[Path | None]) -> None:
    """New, writable, distinct output files, or a one-line error."""
    given = [p for p in paths if p is not None]
    if len({p.resolve() for p in given}) < len(given):
        raise CaptureError("--json and --csv must name two different files")
    for path in given:
        if path.exists() or path.is_symlink():
            raise CaptureError(f"{path} exists already: choose a new file name")
        if not path.parent.is_dir():
            raise CaptureError(f"{path.parent}: no such folder for {path.name}")
        try:
            with path.open("x"):
                pass
            path.unlink()
        except OSError as error:
            raise CaptureError(f"{path}: cannot be written ({error.strerror or error})") from None


def load_batches(target: str, option: str) -> list[Any]:
    """The batches a ``MODULE:FUNCTION`` returns, as a list, or a one-line error."""
    try:
        made = load_callable(target)()
    except CaptureError:
        raise
    except Exception as error:
        raise CaptureError(f"{option} {target} raised {type(error).__name__}: {error}") from None
    if made is None or isinstance(made, str | bytes) or not hasattr(made, "__iter__"):
        kind = "None" if made is None else f"a {type(made).__name__}"
        raise CaptureError(f"{option} {target} returned {kind}: it must return a list of batches")
    listed = list(made)
    if not listed:
        raise CaptureError(f"{option} {target} returned no batch")
    return listed


def run_compare(
    targets: dict[str, str | None], device: str, check: CheckPlan, plan: TimingPlan
) -> Comparison:
    """Load every named function and compare, with the command line's plans."""
    from steptrace.devices import activities, resolve
    from steptrace.validate import CandidateInputs, compare

    activities(resolve(device))  # a GPU that is not there is refused, before any work
    state_b, batches_b = targets.get("state_b"), targets.get("batches_b")
    own = CandidateInputs(
        make_state=load_callable(state_b) if state_b else None,
        batches=load_batches(batches_b, "--batches-b") if batches_b else None,
    )
    return compare(
        load_callable(str(targets["baseline"])),
        load_callable(str(targets["candidate"])),
        make_state=load_callable(str(targets["state"])),
        batches=load_batches(str(targets["batches"]), "--batches"),
        device=device,
        check=check,
        plan=plan,
        candidate_inputs=own,
    )
